#!/usr/bin/env bash
# bench/run.sh — `make bench`: taskq against the hand-written SKIP LOCKED
# queue (baseline), the least work a durable pop can do (floor) and, for the
# drain, taskq's worker loop with return_and_own (cycle), the same with
# taskq.retention = 0 so that completing deletes (cycle0), and the least work
# a leased queue that keeps finished rows can do (bound), measured in the
# same run on a throwaway cluster with durable settings (fsync on,
# synchronous_commit on).  Each figure is the median of RUNS runs; the table
# gives ratios against the baselines of the same run.
#
#   RUNS=3 TASKS=100000 LATENCY_SECONDS=20 bash bench/run.sh
#   WORKLOADS="depth fanin chain" DEPTH_BIG=50000 DEPTH_CLAIMS=5000 bash bench/run.sh
#   TASKQ_PRIVATE_INSTALL=1 WORKLOADS=runners RUNS=5 OUT=/tmp/runners.md bash bench/run.sh
#   TASKQ_PRIVATE_INSTALL=1 STOCK=1 WORKLOADS="pgenqueue latency" OUT=/tmp/stock.md bash bench/run.sh
#
# The tables go to OUT (bench/results.md): point it elsewhere for a subset.
#
# Workloads: enqueue (1 per transaction from 4 clients; batches of
# 1,000), pgenqueue (the same through pgbench -M prepared: insert_tasks with
# random text ids, enqueue / enqueue_many with ids made by taskq and with
# random ones, against the hand-written INSERT, and the hand-written queue
# keyed by random text ids beside it: bench/pgbench/; not in the
# default WORKLOADS), drain (1/4/16 workers, 1 and 50 tasks per claim), latency (a
# producer at 300 tasks/s calling enqueue, or insert_tasks with
# LATENCY_PRODUCER=insert_tasks; 4 idle workers on LISTEN; and 4 idle workers
# waiting inside own_tasks with wait => 1 s; each also with a producer
# that commits with synchronous_commit = off), lag (LAG_TASKS
# (300,000) pending, autovacuum off, one worker drains 50 per claim in
# LAG_CHUNKS (6) chunks: last chunk's rate against the first's, for taskq,
# baseline and floor; LONG_RUNS runs), and, taskq against itself (ratios
# the targets are set for):
#   depth   drain rate over the first DEPTH_CLAIMS (100,000) claims with
#           DEPTH_BIG (1,000,000) pending, against the same number of claims
#           taken DEPTH_SMALL (10,000) at a time from a queue refilled to
#           DEPTH_SMALL before each round (fill, VACUUM ANALYZE and
#           CHECKPOINT are not timed); DEPTH_CLIENTS workers, DEPTH_PER_CLAIM
#           per claim (4, 1)
#   fanin   a group of FANIN_JOIN (10,000) members into one join
#           (taskq.chord): time from the last member's return to the join
#           being claimed; and the drain rate of a group of FANIN_TASKS
#           (100,000) into one join against a plain drain of as many;
#           FANIN_CLIENTS workers, FANIN_PER_CLAIM per claim (4, 1)
#   rules   a chord of FANIN_JOIN (10,000) members into one join with a
#           trigger rule: one_success (one member completes, the join is
#           timed from that return to its claim) and all_done (every
#           member completes, as fanin); with the fanin workload in the
#           same run, against the all_success join
#   chain   CHAIN_HOPS (1,000) hops of taskq.chain, one worker: ms per hop,
#           against ms per task of a plain one-worker drain of as many
#   soak    SOAK_SECONDS (600) of SOAK_CLIENTS (4) workers draining and one
#           producer enqueueing SOAK_BATCH (10) tasks per transaction while
#           fewer than SOAK_BACKLOG (1,000) are unfinished, with
#           taskq.retention = SOAK_RETENTION seconds (default half the
#           window) so that the worker's deletes are part of the steady
#           state; size and throughput in the last SOAK_WINDOW seconds
#           against the first (60 s; a tenth of shorter soaks); SOAK_RUNS
#           (3) soaks, each from an empty table, reported by the one with
#           the median throughput ratio
#   runners the two ready-made workers against their limits, at each of
#           RUNNER_CONCURRENCY (1 8): taskq-worker --run work=/bin/true
#           draining RUNNER_SPAWN_TASKS (1,000) tasks against bench/spawn.c
#           starting as many `/bin/sh -c /bin/true` children (fork, own
#           process group, execl of /bin/sh; the worker uses posix_spawn) with as many at
#           once, without a database; and the Python library (taskq.Worker,
#           a no-op handler) draining RUNNER_PY_TASKS (5,000) against a
#           hand-written psycopg 3 loop of return_and_own, 1 per claim, in as
#           many threads with a connection each (bench/runners.py).  Not in
#           the default WORKLOADS; it needs python3-psycopg (test/bin/deps.sh).
#           RUNNER_SYSTEMS (spawn tqw hand lib) picks systems ("spawn tqw"
#           for taskq-worker alone); RUNNER_TQW_BEFORE=/path/to/taskq-worker
#           adds that binary as system tqw0 (e.g. the previous commit's),
#           for a before/after comparison in one run
#   saga    (not in the default WORKLOADS) at each of SAGA_WORKERS (1 16)
#           workers: SAGA_CHAINS (100) runs per 4 workers (at least
#           SAGA_CHAINS) of a linear saga of SAGA_STEPS (10) steps
#           drained by claim + return_step against as many
#           chains of plain tasks drained by claim + a return that inserts
#           the next hop (bench/saga.c), steps/s; and as many runs of a
#           6-step saga whose last step fails: ms per undo step against ms
#           per do step; with each step rate, the database's CPU per step
#           (all the cluster's processes, which other load on the machine
#           does not move as it moves the rates)
#   machines state machines against plain tasks (bench/machines.c), the
#           systems taking turns run by run: a machine step (own_tasks, then
#           transition creating the next visit of a looping state) against a
#           plain task's own_tasks, then return_task + insert_tasks of one
#           successor, MACHINE_STEPS (20,000) of each at each of
#           MACHINE_CLIENTS (1 16) workers over MACHINE_RUNS (256) runs (or
#           as many plain tasks) in flight, with the database's CPU per
#           step of each; a continuation over the CONT_ROWS (100,000)
#           rows of bench.rows, CONT_CHUNKS (1 10 100) rows per instance,
#           CONT_CLIENTS (16) clients (one forks and claims the next
#           instance, the others update the instance's rows and transition
#           it), against a plain drain of one task per row by as many
#           clients, each return updating its row; every row must end
#           updated exactly once (else the bench fails); and
#           FANIN_INSTANCES (100,000) instances into FANIN_WINDOW (3) second
#           windows, FANIN_ARRIVERS (16) clients moving them into the fan-in
#           state and one waiting in own_tasks to claim each batch: every instance
#           counted once, how long after its window's end each batch task
#           was claimed.  Not in the default WORKLOADS (tens of minutes at
#           full size on 2 cores)
#   arrivals (not in the default WORKLOADS) fan-in arrivals against the
#           machine's own steps at ARRIVAL_CLIENTS (16) clients, the two
#           taking turns RUNS times: ARRIVAL_INSTANCES (20,000) instances
#           moved from their first state into a fan-in state of
#           FANIN_WINDOW-second windows (own_tasks, then transition; the
#           batches claimed and ended meanwhile, as in the machines
#           workload's fan-in), arrivals/s, against MACHINE_STEPS machine
#           steps over MACHINE_RUNS runs (own_tasks, then a transition
#           creating the next visit), steps/s; every instance must end in
#           exactly one batch (else the bench fails)
#   map     (not in the default WORKLOADS) a machine's map state over
#           MAP_ITEMS (10,000) items, drained by MAP_CLIENTS (4) psql
#           workers (own_tasks 1, return_task with a result), from the
#           start_machine to the run's move on "mapped" (the results
#           gathered in item order), against as many plain tasks inserted
#           with a join (all_done) drained alike until the join is ready;
#           items/s of each, the systems taking turns run by run
#   limits  (not in the default WORKLOADS) flow control against the same
#           drain without it, LIMIT_TASKS (20,000) tasks, 1 per claim, every
#           claim waiting in own_tasks (wait => 100 ms) so that the limit is
#           the only difference: max_running 8 with 16 workers against no
#           limit with 8 workers; and tasks over LIMIT_KEYS (1,000)
#           concurrency keys with max_running_per_key 1 and 16 workers
#           against the same keyed tasks unlimited with 16 workers; the
#           systems taking turns as in row()
#   timers  (not in the default WORKLOADS) plain tasks claimed and returned
#           (pgbench, TIMER_CLAIMS (20,000) of them, one client, the p50 of
#           one claim and return) while TIMER_RUNS (10,000) state machine
#           runs wait in a state with a timeout and TIMER_RATE (1,000) of
#           their timers come due each second (back-dated; the background
#           worker fires them, each moving its run to a final state with a
#           task of its own), against the same claims with no run and no
#           timer; the two take turns as in row()
#   metrics (not in the default WORKLOADS) the time of one
#           `SELECT * FROM taskq.metrics()` (pgbench, METRICS_CALLS (500)
#           calls, one client) with METRICS_BIG (1,000,000) tasks in the
#           table against METRICS_SMALL (10,000), each over METRICS_ACTIONS
#           (20) actions, half pending, a quarter in progress, a quarter
#           completed; the fills are not timed, and the background worker
#           has refreshed the gauges before the calls
#   proxy   (not in the default WORKLOADS) taskq_proxy over 4 shard
#           databases of the bench cluster (PL/Proxy connecting back over
#           127.0.0.1): PROXY_CALLS (5,000) one-task enqueues, and as many
#           worker cycles (own_tasks 1, committed, then return_task,
#           committed: bench/pgbench/cycle.sql), each through
#           the proxy against the same on one shard directly (pgbench -M
#           prepared, one client, the two taking turns); and PROXY_TASKS
#           (40,000) tasks drained by 4 workers on each of the 4 shards at once
#           (a pool per shard, the fast path) against the same tasks on one
#           shard drained by 16 workers, 1 per claim, waiting claims
# depth and fanin take minutes each, so they run LONG_RUNS (1) times; chain
# runs RUNS times.  A drain of more than 1 task per claim lasts one to two
# seconds, which a slow second of the shared machine moves by a fifth, so
# those run BATCH_RUNS (RUNS + 2) times.  KEEP=1 leaves the cluster
# running.  The cluster's shared memory is in huge pages (test/bin/lib.sh,
# tq_huge_pages) unless TQ_HUGE_PAGES=off; the results say which.
# PROFILE_DIR=/tmp/dir records every run with perf and samples its wait
# events (see profile_start); SETUP_SQL runs statements in the bench
# database after the schema, for experiments.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../test/bin/lib.sh
source "$here/../test/bin/lib.sh"
# shellcheck source=lib.sh
source "$here/lib.sh"

RUNS=${RUNS:-3}
WORKLOADS=${WORKLOADS:-enqueue drain lag latency depth fanin chain soak}   # a subset, for quick looks
TASKS=${TASKS:-100000}   # enqueue and drain 100,000
PROXY_CALLS=${PROXY_CALLS:-5000}
PROXY_TASKS=${PROXY_TASKS:-40000}
DRAIN_WORKERS=${DRAIN_WORKERS:-1 4 16}   # a subset, for quick looks
DRAIN_PER_CLAIM=${DRAIN_PER_CLAIM:-1 50}
LATENCY_SECONDS=${LATENCY_SECONDS:-20}
LONG_RUNS=${LONG_RUNS:-1}
BATCH_RUNS=${BATCH_RUNS:-$((RUNS + 2))}
LAG_TASKS=${LAG_TASKS:-300000}
LAG_CHUNKS=${LAG_CHUNKS:-6}
DEPTH_BIG=${DEPTH_BIG:-1000000}
DEPTH_SMALL=${DEPTH_SMALL:-10000}
DEPTH_CLAIMS=${DEPTH_CLAIMS:-100000}
DEPTH_CLIENTS=${DEPTH_CLIENTS:-4}
DEPTH_PER_CLAIM=${DEPTH_PER_CLAIM:-1}
FANIN_JOIN=${FANIN_JOIN:-10000}
FANIN_TASKS=${FANIN_TASKS:-100000}
FANIN_CLIENTS=${FANIN_CLIENTS:-4}
FANIN_PER_CLAIM=${FANIN_PER_CLAIM:-1}
CHAIN_HOPS=${CHAIN_HOPS:-1000}
SOAK_SECONDS=${SOAK_SECONDS:-600}
SOAK_WINDOW=${SOAK_WINDOW:-$(( SOAK_SECONDS >= 600 ? 60 : (SOAK_SECONDS >= 20 ? SOAK_SECONDS / 10 : 1) ))}
SOAK_RETENTION=${SOAK_RETENTION:-$(( SOAK_WINDOW >= 2 ? SOAK_WINDOW / 2 : 1 ))}
SOAK_CLIENTS=${SOAK_CLIENTS:-4}
SOAK_BATCH=${SOAK_BATCH:-10}
SOAK_BACKLOG=${SOAK_BACKLOG:-1000}
SOAK_RUNS=${SOAK_RUNS:-3}
RUNNER_CONCURRENCY=${RUNNER_CONCURRENCY:-1 8}
RUNNER_SPAWN_TASKS=${RUNNER_SPAWN_TASKS:-1000}
RUNNER_PY_TASKS=${RUNNER_PY_TASKS:-5000}
RUNNER_SYSTEMS=${RUNNER_SYSTEMS:-spawn tqw hand lib}   # a subset, e.g. "spawn tqw"
RUNNER_TQW_BEFORE=${RUNNER_TQW_BEFORE:-}   # another taskq-worker binary, run as system tqw0
[[ -n $RUNNER_TQW_BEFORE && " $RUNNER_SYSTEMS " != *" tqw0 "* ]] && RUNNER_SYSTEMS+=" tqw0"
SAGA_WORKERS=${SAGA_WORKERS:-1 16}
LIMIT_TASKS=${LIMIT_TASKS:-20000}
METRICS_BIG=${METRICS_BIG:-1000000}
METRICS_SMALL=${METRICS_SMALL:-10000}
METRICS_ACTIONS=${METRICS_ACTIONS:-20}
METRICS_CALLS=${METRICS_CALLS:-500}
TIMER_RUNS=${TIMER_RUNS:-10000}
TIMER_RATE=${TIMER_RATE:-1000}
TIMER_CLAIMS=${TIMER_CLAIMS:-20000}
LIMIT_KEYS=${LIMIT_KEYS:-1000}
SAGA_CHAINS=${SAGA_CHAINS:-100}
SAGA_STEPS=${SAGA_STEPS:-10}
MACHINE_STEPS=${MACHINE_STEPS:-20000}
MACHINE_CLIENTS=${MACHINE_CLIENTS:-1 16}
MACHINE_RUNS=${MACHINE_RUNS:-256}
CONT_ROWS=${CONT_ROWS:-100000}
CONT_CLIENTS=${CONT_CLIENTS:-16}
CONT_CHUNKS=${CONT_CHUNKS:-1 10 100}
FANIN_INSTANCES=${FANIN_INSTANCES:-100000}
FANIN_WINDOW=${FANIN_WINDOW:-3}
FANIN_ARRIVERS=${FANIN_ARRIVERS:-16}
ARRIVAL_INSTANCES=${ARRIVAL_INSTANCES:-20000}
ARRIVAL_CLIENTS=${ARRIVAL_CLIENTS:-16}
MAP_ITEMS=${MAP_ITEMS:-10000}
MAP_CLIENTS=${MAP_CLIENTS:-4}
OUT=${OUT:-$here/results.md}

# KEEP=1: leave the cluster running afterwards (and after a failure) to look
# at its log and tables; the script prints how to connect.
[[ ${KEEP:-0} == 1 ]] && TQ_KEEP=1
trap 'tq_cleanup' EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

bash "$here/../test/bin/deps.sh"
tq_ensure_user
tq_make_work
tq_build_install
# STOCK=1: what most users run: no huge pages, autovacuum_naptime at its
# default (taskq.retention is at its default in every workload but cycle0)
[[ ${STOCK:-0} == 1 ]] && export TQ_HUGE_PAGES=off
tq_cluster_start bench
if [[ ${STOCK:-0} == 1 ]]; then
    tq_psql postgres -q -c "ALTER SYSTEM SET autovacuum_naptime = '1min'" -c "SELECT pg_reload_conf()" >/dev/null
fi
gcc -O2 -Wall -o "$TQ_WORK/driver" "$here/driver.c" "$here/common.c" \
    -I"$("$TQ_PG_CONFIG" --includedir)" -lpq -lpthread -lm
gcc -O2 -Wall -o "$TQ_WORK/spawn" "$here/spawn.c"
gcc -O2 -Wall -o "$TQ_WORK/saga" "$here/saga.c" "$here/common.c" \
    -I"$("$TQ_PG_CONFIG" --includedir)" -lpq -lpthread -lm
gcc -O2 -Wall -o "$TQ_WORK/machines" "$here/machines.c" "$here/common.c" \
    -I"$("$TQ_PG_CONFIG" --includedir)" -lpq -lpthread -lm

export PGHOST=127.0.0.1 PGPORT=$TQ_PORT PGUSER=$TQ_DBUSER PGDATABASE=bench
[[ $TQ_KEEP == 1 ]] && echo "bench: KEEP=1: the cluster stays up: psql -h 127.0.0.1 -p $TQ_PORT -U $TQ_DBUSER bench (log: $TQ_PGLOG; stop: runuser -u $TQ_USER -- $TQ_BINDIR/pg_ctl -D $TQ_PGDATA stop; then rm -rf $TQ_WORK)" >&2
tq_psql postgres -q -c "CREATE DATABASE bench"
tq_psql bench -q -c "CREATE EXTENSION taskq"
tq_psql bench -q -f "$here/schema.sql"
# SETUP_SQL="...": statements run in the bench database after the schema, for
# experiments (e.g. "ALTER TABLE taskq.tasks SET (fillfactor = 70)")
[[ -n ${SETUP_SQL:-} ]] && tq_psql bench -q -v ON_ERROR_STOP=1 -c "$SETUP_SQL"

reset_tables() {
    sql "TRUNCATE taskq.tasks, bench.baseline, bench.baseline_text, bench.floor, bench.bound"
    sql "VACUUM ANALYZE taskq.tasks" "VACUUM ANALYZE bench.baseline" "VACUUM ANALYZE bench.baseline_text" "VACUUM ANALYZE bench.floor" "VACUUM ANALYZE bench.bound"
}

# prefill SYSTEM N [CLIENTS]: N pending tasks with ~100-byte bodies (not
# timed); bound's rows are dealt round-robin to CLIENTS parts
prefill() {
    local body='{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'
    case $1 in
    taskq|cycle|cycle0) sql "SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'p' || g, 'action', 'work', 'body', '$body'::jsonb)) FROM generate_series(1, $2) g))" >/dev/null ;;
    baseline) sql "INSERT INTO bench.baseline (body) SELECT '$body'::jsonb FROM generate_series(1, $2)" ;;
    floor) sql "INSERT INTO bench.floor (body) SELECT '$body'::jsonb FROM generate_series(1, $2)" ;;
    bound) sql "INSERT INTO bench.bound (part, seq, body) SELECT g % ${3:-1}, g, '$body'::jsonb FROM generate_series(1, $2) g" ;;
    esac
    sql "VACUUM ANALYZE taskq.tasks" "VACUUM ANALYZE bench.baseline" "VACUUM ANALYZE bench.floor" "VACUUM ANALYZE bench.bound" "CHECKPOINT"
}


# cluster_ticks, TICK_US, median, ratio: bench/lib.sh

# PROFILE_DIR=/tmp/dir: each run is recorded with `perf record -g` on the
# postmaster and its processes (backends, taskq's worker, autovacuum,
# walwriter, checkpointer), PROFILE_FREQ (997) samples per second, into
# DIR/LABEL.ROUND.perf, and pg_stat_activity's wait events of the
# cluster's processes are sampled every 10 ms into DIR/LABEL.ROUND.waits
# (one line per busy process and sample: backend_type|wait_event_type|
# wait_event, empty when on CPU).  Profiling adds CPU: its runs' rates are
# for the breakdown, not for the tables.
PROFILE_PIDS=() PROFILE_STOP=
profile_start() {
    [[ -n ${PROFILE_DIR:-} ]] || return 0
    mkdir -p "$PROFILE_DIR"
    local f=$PROFILE_DIR/${1// /_}.$2 pm
    pm=$(head -1 "$TQ_PGDATA/postmaster.pid")
    # the postmaster's running children too: perf follows only new forks
    pm+=$(printf ',%s' $(cat "/proc/$pm/task/$pm/children"))
    perf record -q -g -F "${PROFILE_FREQ:-997}" -p "$pm" -o "$f.perf" >/dev/null 2>&1 &
    PROFILE_PIDS=($!)
    rm -f "$f.stop"
    PROFILE_STOP=$f.stop
    (
        while [[ ! -e $f.stop ]]; do
            echo "SELECT backend_type || '|' || coalesce(wait_event_type, '') || '|' || coalesce(wait_event, '')
                    FROM pg_catalog.pg_stat_activity
                   WHERE pid <> pg_catalog.pg_backend_pid() AND backend_type <> 'walsender'
                     AND (state IS NULL OR state <> 'idle')
                     AND coalesce(wait_event_type, '') NOT IN ('Activity', 'Client');"
            sleep 0.01
        done | psql -X -q -At 2>/dev/null
    ) >"$f.waits" &
    PROFILE_PIDS+=($!)
    sleep 0.5   # perf attached before the driver connects
}
profile_stop() {
    ((${#PROFILE_PIDS[@]})) || return 0
    kill -INT "${PROFILE_PIDS[0]}" 2>/dev/null
    touch "$PROFILE_STOP"
    wait "${PROFILE_PIDS[@]}" 2>/dev/null
    rm -f "$PROFILE_STOP"
    PROFILE_PIDS=()
}

# run_once LABEL SYSTEM ROUND ARGS...: one run from fresh tables; prints its
# rate; the database's CPU per task (µs) goes to $TQ_WORK/cpu.LABEL
run_once() {
    local label=$1 system=$2 r=$3; shift 3
    reset_tables
    case $1 in
    drain) prefill "$system" "$TASKS" "$3" ;;   # drain --clients N ...
    esac
    local line driver_system=$system options=${PGOPTIONS:-} t0 t1 n
    # cycle0: return_and_own in sessions with taskq.retention = 0
    [[ $system == cycle0 ]] && driver_system=cycle options+=" -c taskq.retention=0"
    t0=$(cluster_ticks)
    profile_start "$label" "$r"
    line=$(PGOPTIONS=$options "$TQ_WORK/driver" "$driver_system" "$@" --tasks "$TASKS" --prefix "r$r")
    profile_stop
    sleep 0.3   # the run's backends exit and are reaped
    t1=$(cluster_ticks)
    n=$(field tasks <<<"$line")
    echo "$(( (t1 - t0) * TICK_US / (n > 0 ? n : 1) ))" >>"$TQ_WORK/cpu.${label// /_}"
    echo "  $label run $r: $line cpu_us_per_task=$(( (t1 - t0) * TICK_US / (n > 0 ? n : 1) ))" >&2
    field rate <<<"$line"
}
# cpu_median LABEL: the median CPU per task (µs) of LABEL's runs
cpu_median() { local f="$TQ_WORK/cpu.${1// /_}"; [[ -f $f ]] && median <"$f" || echo –; }

# row KEY ARGS...: the median rate of RUNS (ROW_RUNS) runs of taskq, baseline and floor
# (and cycle, cycle0 and bound for a drain).  The systems take turns, one
# run each per round, each round beginning with the next system: a slow
# minute of this shared machine then falls on all of them, not on the runs
# of one.
declare -A R
row() {
    local key=$1; shift
    local systems=(taskq baseline floor)
    [[ $1 == drain ]] && systems=(taskq cycle cycle0 baseline floor bound)
    # DRAIN_SYSTEMS="taskq baseline floor": a subset, for quick looks
    [[ $1 == drain && -n ${DRAIN_SYSTEMS:-} ]] && read -ra systems <<<"$DRAIN_SYSTEMS"
    local n=${#systems[@]} runs=${ROW_RUNS:-$RUNS} r i s
    declare -A rates=()
    for ((r = 1; r <= runs; r++)); do
        for ((i = 0; i < n; i++)); do
            s=${systems[(i + r - 1) % n]}
            rates[$s]+="$(run_once "$key $s" "$s" "$r" "$@") "
        done
    done
    for s in "${systems[@]}"; do
        R[$key.$s]=$(printf '%s\n' ${rates[$s]} | median)
    done
}

echo "bench: $RUNS runs ($BATCH_RUNS for drains of more than 1 per claim) of $TASKS tasks per figure, durable commits, huge pages $TQ_HUGE_STATE, $(nproc) cores" >&2
want() { [[ " $WORKLOADS " == *" $1 "* ]]; }
if want enqueue; then
    row enq1 enqueue --clients 4 --batch 1
    row enq1000 enqueue --clients 4 --batch 1000
fi
# pgenqueue: the statements users write, through pgbench -M prepared from 4
# clients: random text ids (gen_random_uuid()::text), ~100-byte bodies, 1
# per transaction and 1,000 per call (bench/pgbench/*.sql), taskq against
# the hand-written queue; PGENQ_TASKS (TASKS) tasks per run, the systems
# taking turns; with the database's CPU per task (cluster_ticks).  taskq
# in three forms: insert_tasks' JSON, and the typed enqueue / enqueue_many
# with ids made by taskq or given by the caller
pgenq_form() {   # SYSTEM BATCH: the statement's form, for the table
    case $1.$2 in
    taskq.1) echo "insert_tasks (JSON), caller's random id" ;;
    taskq.*) echo "insert_tasks (JSON), caller's random ids" ;;
    enqueue.1) echo "enqueue, id made by taskq" ;;
    enqueue.*) echo "enqueue_many, ids made by taskq" ;;
    enqueue-ids.1) echo "enqueue, caller's random id" ;;
    enqueue-ids.*) echo "enqueue_many, caller's random ids" ;;
    esac
}
pgbench_rate() {   # SYSTEM BATCH ROUND: prints tasks/s
    local system=$1 batch=$2 r=$3 per_client out tps t0 t1 cpu
    reset_tables
    per_client=$(( ${PGENQ_TASKS:-$TASKS} / 4 / batch ))
    t0=$(cluster_ticks)
    out=$(pgbench -n -M prepared -c 4 -j 4 -t "$per_client" -f "$here/pgbench/${system}_$batch.sql" bench 2>&1)
    sleep 0.3
    t1=$(cluster_ticks)
    cpu=$(( (t1 - t0) * TICK_US / (per_client * 4 * batch) ))
    echo "$cpu" >>"$TQ_WORK/cpu.pgenq$batch.$system"
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$out")
    echo "  pgenqueue $system $batch run $r: tps=$tps tasks/s=$(awk -v t="$tps" -v b="$batch" 'BEGIN { printf "%.0f", t * b }') cpu_us_per_task=$cpu" >&2
    awk -v t="$tps" -v b="$batch" 'BEGIN { printf "%.0f\n", t * b }'
}
# PGENQ_SYSTEMS: taskq (insert_tasks, JSON), enqueue (enqueue / enqueue_many,
# ids made by taskq), enqueue-ids (the same with the caller's random text
# ids), baseline, and baseline-text (the hand-written queue keyed by the
# caller's random text id: a reference column, not the target); they take
# turns, each round beginning with the next one
PGENQ_SYSTEMS=${PGENQ_SYSTEMS:-taskq enqueue enqueue-ids baseline baseline-text}
if want pgenqueue; then
    read -ra psystems <<<"$PGENQ_SYSTEMS"
    for batch in 1 1000; do
        declare -A prates=()
        for ((r = 1; r <= RUNS; r++)); do
            for ((i = 0; i < ${#psystems[@]}; i++)); do
                s=${psystems[(i + r - 1) % ${#psystems[@]}]}
                prates[$s]+="$(pgbench_rate "$s" "$batch" "$r") "
            done
        done
        for s in "${psystems[@]}"; do
            R[pgenq$batch.$s]=$(printf '%s\n' ${prates[$s]} | median)
        done
        unset prates
    done
fi
if want drain; then
    for w in $DRAIN_WORKERS; do
        for k in $DRAIN_PER_CLAIM; do
            runs=$RUNS
            ((k > 1)) && runs=$BATCH_RUNS
            ROW_RUNS=$runs row "drain.$w.$k" drain --clients "$w" --per-claim "$k"
        done
    done
fi

# latency: 4 idle workers on LISTEN (lat), or waiting inside own_tasks with
# wait => 1 s (latw); and both again with a producer that commits without
# waiting for the WAL flush (lata, latwa), so that the wake-up shows
# without the disk.  The systems take turns within each round.
declare -A LATL=()
LATENCY_PRODUCER=${LATENCY_PRODUCER:-enqueue}   # or insert_tasks (a one-task JSON array)
want latency || RUNS_LAT=0
lat_kinds=(lat latw lata latwa)
for ((r = 1; r <= ${RUNS_LAT:-$RUNS}; r++)); do
    for ((i = 0; i < 4; i++)); do
        kind=${lat_kinds[(i + r - 1) % 4]} wait=0 async=0
        [[ $kind == latw || $kind == latwa ]] && wait=1000
        [[ $kind == lata || $kind == latwa ]] && async=1
        reset_tables
        line=$("$TQ_WORK/driver" taskq latency --clients 4 --rate 300 --seconds "$LATENCY_SECONDS" --action lat \
            --prefix "$kind$r" --wait "$wait" --async-producer "$async" --producer "$LATENCY_PRODUCER")
        echo "  latency $kind run $r: $line" >&2
        LATL[$kind]+="$line"$'\n'
    done
done
# lp KIND FIELD: the median of FIELD over the runs of KIND
lp() { field "$2" <<<"${LATL[$1]:-}" | median; }

# --- workloads 4-7: taskq against itself ---
driver() { "$TQ_WORK/driver" taskq "$@"; }
fmt() { awk -v n="$1" 'BEGIN { s = sprintf("%d", n); r = ""; while (length(s) > 3) { r = "," substr(s, length(s) - 2) r; s = substr(s, 1, length(s) - 3) }; print s r }'; }
declare -A L   # lines of the driver by workload and run

if want depth; then
    for ((r = 1; r <= LONG_RUNS; r++)); do
        # alternate which goes first, so that a trend on the machine does not
        # always favour the same one
        order=(big small)
        ((r % 2 == 0)) && order=(small big)
        for which in "${order[@]}"; do
            reset_tables
            backlog=$DEPTH_BIG
            [[ $which == small ]] && backlog=$DEPTH_SMALL
            line=$(driver depth --clients "$DEPTH_CLIENTS" --per-claim "$DEPTH_PER_CLAIM" \
                --backlog "$backlog" --claims "$DEPTH_CLAIMS" --prefix "d$r$which")
            echo "  depth $which run $r: $line" >&2
            L[depth.$which.$r]=$line
        done
    done
    for which in big small; do
        for k in rate wal_bytes_per_task fpi_per_task; do
            R[depth.$which.$k]=$(for ((r = 1; r <= LONG_RUNS; r++)); do field "$k" <<<"${L[depth.$which.$r]}"; done | median)
        done
        R[depth.$which]=${R[depth.$which.rate]}
    done
fi

if want fanin; then
    for ((r = 1; r <= LONG_RUNS; r++)); do
        reset_tables
        L[fanin.join.$r]=$(driver fanin --tasks "$FANIN_JOIN" --clients "$FANIN_CLIENTS" --per-claim "$FANIN_PER_CLAIM" --prefix "fj$r")
        echo "  fanin group of $FANIN_JOIN run $r: ${L[fanin.join.$r]}" >&2
        reset_tables
        L[fanin.group.$r]=$(driver fanin --tasks "$FANIN_TASKS" --clients "$FANIN_CLIENTS" --per-claim "$FANIN_PER_CLAIM" --prefix "fg$r")
        echo "  fanin group of $FANIN_TASKS run $r: ${L[fanin.group.$r]}" >&2
        reset_tables
        prefill taskq "$FANIN_TASKS"
        L[fanin.plain.$r]=$("$TQ_WORK/driver" taskq drain --tasks "$FANIN_TASKS" --clients "$FANIN_CLIENTS" --per-claim "$FANIN_PER_CLAIM")
        echo "  fanin plain drain of $FANIN_TASKS run $r: ${L[fanin.plain.$r]}" >&2
    done
    fanin_median() { for ((r = 1; r <= LONG_RUNS; r++)); do field "$2" <<<"${L[fanin.$1.$r]}"; done | median; }
    R[fanin.join_ms]=$(fanin_median join join_ms)
    R[fanin.join_polls]=$(fanin_median join join_polls)
    R[fanin.join_db_ms]=$(fanin_median join join_db_ms)
    R[fanin.group]=$(fanin_median group rate)
    R[fanin.group_join_ms]=$(fanin_median group join_ms)
    R[fanin.plain]=$(fanin_median plain rate)
fi

if want rules; then
    for ((r = 1; r <= LONG_RUNS; r++)); do
        for rule in one_success all_done; do
            reset_tables
            L[rules.$rule.$r]=$(driver fanin --tasks "$FANIN_JOIN" --clients "$FANIN_CLIENTS" --per-claim "$FANIN_PER_CLAIM" --prefix "r$rule$r" --trigger "$rule")
            echo "  rules: $rule join of $FANIN_JOIN run $r: ${L[rules.$rule.$r]}" >&2
        done
    done
    for rule in one_success all_done; do
        for k in join_ms join_polls join_db_ms; do
            R[rules.$rule.$k]=$(for ((r = 1; r <= LONG_RUNS; r++)); do field "$k" <<<"${L[rules.$rule.$r]}"; done | median)
        done
    done
fi

if want chain; then
    for ((r = 1; r <= RUNS; r++)); do
        reset_tables
        L[chain.$r]=$(driver chain --tasks "$CHAIN_HOPS" --prefix "c$r")
        echo "  chain run $r: ${L[chain.$r]}" >&2
        reset_tables
        prefill taskq "$CHAIN_HOPS"
        line=$("$TQ_WORK/driver" taskq drain --tasks "$CHAIN_HOPS" --clients 1 --per-claim 1)
        echo "  chain's plain drain run $r: $line" >&2
        L[chain.plain.$r]=$(awk -v r="$(field rate <<<"$line")" 'BEGIN { printf "%.3f", 1000 / r }')
    done
    R[chain.hop_ms]=$(for ((r = 1; r <= RUNS; r++)); do field ms_per_hop <<<"${L[chain.$r]}"; done | median)
    R[chain.empty]=$(for ((r = 1; r <= RUNS; r++)); do field empty_claims <<<"${L[chain.$r]}"; done | median)
    R[chain.plain_ms]=$(for ((r = 1; r <= RUNS; r++)); do echo "${L[chain.plain.$r]}"; done | median)
fi

# The runners: each system drains (or, spawn, starts) as many tasks at the
# same concurrency; the systems take turns as in row().  taskq-worker is
# the tree's own build ($TQ_WORK/src), timed from its start to the last
# task's finished_at; the others time themselves.
runner_once() {
    local sys=$1 conc=$2 r=$3 line t0 t1 pid n=$RUNNER_PY_TASKS
    [[ $sys == spawn || $sys == tqw || $sys == tqw0 ]] && n=$RUNNER_SPAWN_TASKS
    reset_tables
    [[ $sys == spawn ]] || prefill taskq "$n"
    case $sys in
    spawn) line=$("$TQ_WORK/spawn" "$conc" "$n" /bin/true) ;;
    tqw|tqw0)
        local tqw_bin=$TQ_WORK/src/tools/taskq-worker/taskq-worker
        [[ $sys == tqw0 ]] && tqw_bin=$RUNNER_TQW_BEFORE
        t0=$(date +%s.%N)
        "$tqw_bin" --concurrency "$conc" --poll 1s \
            --run work=/bin/true 2>"$TQ_WORK/log/taskq-worker.log" &
        pid=$!
        until [[ $(sql "SELECT count(*) FROM taskq.tasks WHERE finished_at IS NOT NULL") -ge $n ]]; do
            kill -0 "$pid" 2>/dev/null || { tail -n 20 "$TQ_WORK/log/taskq-worker.log" >&2; return 1; }
            sleep 0.2
        done
        t1=$(sql "SELECT extract(epoch FROM max(finished_at)) FROM taskq.tasks")
        kill -TERM "$pid"; wait "$pid" || true
        line=$(awk -v n="$n" -v a="$t0" -v b="$t1" 'BEGIN { printf "tasks=%d seconds=%.3f rate=%.1f", n, b - a, n / (b - a) }') ;;
    lib|hand) line=$(/usr/bin/python3 "$here/runners.py" "$sys" "$conc" "$n") ;;
    esac
    echo "  runners $sys c=$conc run $r: $line" >&2
    field rate <<<"$line"
}
if want runners; then
    for rc in $RUNNER_CONCURRENCY; do
        read -ra systems <<<"$RUNNER_SYSTEMS"
        declare -A rr=()
        for ((r = 1; r <= RUNS; r++)); do
            for ((i = 0; i < ${#systems[@]}; i++)); do
                s=${systems[(i + r - 1) % ${#systems[@]}]}
                rr[$s]+="$(runner_once "$s" "$rc" "$r") "
            done
        done
        for s in "${systems[@]}"; do
            R[runners.$rc.$s]=$(printf '%s\n' ${rr[$s]} | median)
            L[runners.$rc.$s]=$(printf '%s\n' ${rr[$s]} | sort -g | paste -sd' ')
        done
        # every run's ratio, run by run (taskq-worker ÷ spawn, lib ÷ hand)
        read -ra a <<<"${rr[tqw]:-}"; read -ra b <<<"${rr[spawn]:-}"
        L[runners.$rc.tqw_ratios]=$(for ((r = 0; r < ${#a[@]} && r < ${#b[@]}; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
        read -ra a <<<"${rr[tqw0]:-}"
        L[runners.$rc.tqw0_ratios]=$(for ((r = 0; r < ${#a[@]} && r < ${#b[@]}; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
        read -ra a <<<"${rr[lib]:-}"; read -ra b <<<"${rr[hand]:-}"
        L[runners.$rc.lib_ratios]=$(for ((r = 0; r < ${#a[@]} && r < ${#b[@]}; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
        unset rr
    done
fi

# Sagas: each system drains as many steps at the same concurrency, the
# systems taking turns as in row().
saga_reset() {
    sql "TRUNCATE taskq.tasks, taskq.runs, taskq.saga_steps"
    sql "VACUUM ANALYZE taskq.tasks" "VACUUM ANALYZE taskq.runs" "VACUUM ANALYZE taskq.saga_steps"
}
saga_chains() { echo $(( SAGA_CHAINS * ($1 >= 8 ? $1 / 4 : 1) )); }
saga_once() {   # SYSTEM WORKERS ROUND [MODE STEPS]: prints the driver's line
    local sys=$1 w=$2 r=$3 mode=${4:-} steps=${5:-$SAGA_STEPS} line t0 t1
    [[ -n $mode ]] || mode=$sys
    saga_reset
    t0=$(cluster_ticks)
    line=$("$TQ_WORK/saga" "$mode" --clients "$w" --chains "$(saga_chains "$w")" --steps "$steps" --prefix "$sys$w.$r.")
    sleep 0.3   # the run's backends exit and are reaped
    t1=$(cluster_ticks)
    # the database's CPU per step (µs), starting the runs or chains included
    line+=" cpu_us_per_step=$(( (t1 - t0) * TICK_US / ($(saga_chains "$w") * steps) ))"
    echo "  saga $sys w=$w run $r: $line" >&2
    echo "$line"
}
if want saga; then
    saga_systems=(plain saga)
    for w in $SAGA_WORKERS; do
        n=${#saga_systems[@]}
        declare -A sr=() sc=()
        for ((r = 1; r <= RUNS; r++)); do
            for ((i = 0; i < n; i++)); do
                s=${saga_systems[(i + r - 1) % n]}
                line=$(saga_once "$s" "$w" "$r")
                sr[$s]+="$(field rate <<<"$line") "
                sc[$s]+="$(field cpu_us_per_step <<<"$line") "
            done
        done
        for s in "${saga_systems[@]}"; do
            R[saga.$w.$s]=$(printf '%s\n' ${sr[$s]} | median)
            R[saga.$w.$s.cpu]=$(printf '%s\n' ${sc[$s]} | median)
        done
        read -ra a <<<"${sr[saga]}"; read -ra b <<<"${sr[plain]}"
        L[saga.$w.ratios]=$(for ((r = 0; r < RUNS; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
        read -ra a <<<"${sc[plain]}"; read -ra b <<<"${sc[saga]}"
        L[saga.$w.cpu_ratios]=$(for ((r = 0; r < RUNS; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
        unset sr sc
        do_ms=() undo_ms=() per=()
        for ((r = 1; r <= RUNS; r++)); do
            line=$(saga_once undo "$w" "$r" undo 6)
            do_ms+=("$(field do_ms_per_step <<<"$line")")
            undo_ms+=("$(field undo_ms_per_step <<<"$line")")
            per+=("$(field undo_per_do <<<"$line")")
        done
        R[saga.$w.do_ms]=$(printf '%s\n' "${do_ms[@]}" | median)
        R[saga.$w.undo_ms]=$(printf '%s\n' "${undo_ms[@]}" | median)
        L[saga.$w.undo_ratios]=${per[*]}
    done
fi

# Flow control: each system drains LIMIT_TASKS from fresh tables, with or
# without a limit on action work; the systems take turns as in row().
limit_once() {   # SYSTEM ROUND: prints the rate
    local sys=$1 r=$2 clients=16 key='' line
    local body='{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'
    reset_tables
    sql "SELECT taskq.clear_limits('work')" >/dev/null
    case $sys in
    plain8) clients=8 ;;
    max8) sql "SELECT taskq.set_concurrency_limit('work', 8)" >/dev/null ;;
    keyed) key=", 'concurrency_key', 'k' || g % $LIMIT_KEYS" ;;
    perkey) key=", 'concurrency_key', 'k' || g % $LIMIT_KEYS"
        sql "SELECT taskq.set_concurrency_limit('work', NULL, 1)" >/dev/null ;;
    esac
    sql "SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'p' || g, 'action', 'work', 'body', '$body'::jsonb$key)) FROM generate_series(1, $LIMIT_TASKS) g))" >/dev/null
    sql "VACUUM ANALYZE taskq.tasks" "CHECKPOINT"
    line=$("$TQ_WORK/driver" taskq drain --clients "$clients" --per-claim 1 --wait 100 --tasks "$LIMIT_TASKS" --prefix "l$sys$r")
    echo "  limits $sys run $r: $line" >&2
    [[ $(field tasks <<<"$line") == "$LIMIT_TASKS" ]] || { echo "bench: limits $sys drained $(field tasks <<<"$line") of $LIMIT_TASKS" >&2; exit 1; }
    field rate <<<"$line"
}
if want limits; then
    limit_systems=(plain8 max8 keyed perkey)
    n=${#limit_systems[@]}
    declare -A lr=()
    for ((r = 1; r <= RUNS; r++)); do
        for ((i = 0; i < n; i++)); do
            s=${limit_systems[(i + r - 1) % n]}
            lr[$s]+="$(limit_once "$s" "$r") "
        done
    done
    for s in "${limit_systems[@]}"; do
        R[limits.$s]=$(printf '%s\n' ${lr[$s]} | median)
    done
    read -ra a <<<"${lr[max8]}"; read -ra b <<<"${lr[plain8]}"
    L[limits.max8.ratios]=$(for ((r = 0; r < RUNS; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
    read -ra a <<<"${lr[perkey]}"; read -ra b <<<"${lr[keyed]}"
    L[limits.perkey.ratios]=$(for ((r = 0; r < RUNS; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
    unset lr
    sql "SELECT taskq.clear_limits('work')" >/dev/null
fi

# Timers of runs: the p50 of a plain claim and return while the worker
# fires TIMER_RATE timeouts a second, against the same with none.
timers_once() {   # busy|idle ROUND: prints the p50 of a claim and return, ms
    local out dir p50 feeder=
    reset_tables
    sql "DELETE FROM taskq.runs" "DELETE FROM taskq.run_timers"
    sql "DO \$\$ BEGIN FOR b IN 0 .. ($TIMER_CLAIMS - 1) / 100000 LOOP
           PERFORM taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'c' || g, 'action', 'work'))
                                         FROM generate_series(b * 100000 + 1, least((b + 1) * 100000, $TIMER_CLAIMS)) AS g));
           COMMIT; END LOOP; END \$\$"
    if [[ $1 == busy ]]; then
        sql "SELECT count(taskq.start_machine('bench_timers', 't' || g)) FROM generate_series(1, $TIMER_RUNS) AS g" >/dev/null
        # each second, TIMER_RATE of the timers come due
        ( while :; do
              sql "UPDATE taskq.run_timers SET due_at = now()
                    WHERE (run_id, kind) IN (SELECT run_id, kind FROM taskq.run_timers
                                              WHERE due_at > now() ORDER BY due_at LIMIT $TIMER_RATE)" >/dev/null || exit 0
              sleep 1
          done ) &
        feeder=$!
    fi
    sql "VACUUM ANALYZE taskq.tasks" "CHECKPOINT"
    dir=$(mktemp -d)
    out=$(cd "$dir" && pgbench -n -M prepared -c 1 -t "$TIMER_CLAIMS" -l -f "$here/pgbench/claim.sql" bench 2>&1)
    [[ -n $feeder ]] && { kill "$feeder" 2>/dev/null; wait "$feeder" 2>/dev/null || true; }
    p50=$(cat "$dir"/pgbench_log.* | awk '{print $3 / 1000}' | median)
    rm -rf "$dir"
    echo "  timers $1 run $2: p50 $p50 ms, fired $(sql "SELECT count(*) FROM taskq.runs WHERE state = 'Late'"), $(grep 'latency average' <<<"$out")" >&2
    echo "$p50"
}
if want timers; then
    sql "SELECT taskq.define_machine('bench_timers', '{\"states\": [
           {\"name\": \"Wait\", \"action\": null, \"initial\": true, \"timeout\": \"1 hour\",
            \"on_timeout\": \"expired\", \"transitions\": [{\"event\": \"expired\", \"to\": \"Late\"}]},
           {\"name\": \"Late\", \"action\": \"late\", \"final\": true}]}')" >/dev/null
    declare -A tr=()
    for ((r = 1; r <= RUNS; r++)); do
        if ((r % 2)); then order="idle busy"; else order="busy idle"; fi
        for m in $order; do tr[$m]+="$(timers_once "$m" "$r") "; done
    done
    R[timers.busy]=$(printf '%s\n' ${tr[busy]} | median)
    R[timers.idle]=$(printf '%s\n' ${tr[idle]} | median)
    L[timers.busy]=${tr[busy]}
    L[timers.idle]=${tr[idle]}
    unset tr
    sql "DELETE FROM taskq.runs" "DELETE FROM taskq.run_timers" "TRUNCATE taskq.tasks"
fi

# Through the proxy: see the header.
proxy_pgbench() {   # DB SCRIPT CALLS: prints transactions/s
    local out
    out=$(pgbench -n -M prepared -c 1 -t "$3" -f "$2" "$1" 2>&1) || { echo "$out" >&2; exit 1; }
    sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out"
}
proxy_fill() {   # DB N: N tasks of action work in DB
    PGDATABASE=$1 sql "TRUNCATE taskq.tasks" \
        "SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', '$1.' || g, 'action', 'work')) FROM generate_series(1, $2) g))" \
        "VACUUM ANALYZE taskq.tasks" >/dev/null
}
proxy_drain() {   # shards|one ROUND: prints tasks/s
    local r=$2 line rate pids=() i per t0 t1 files=()
    if [[ $1 == one ]]; then
        proxy_fill s0 "$PROXY_TASKS"
        line=$(PGDATABASE=s0 "$TQ_WORK/driver" taskq drain --clients 16 --per-claim 1 --wait 100 --tasks "$PROXY_TASKS" --prefix "po$r")
        [[ $(field tasks <<<"$line") == "$PROXY_TASKS" ]] || { echo "bench: proxy one drained $(field tasks <<<"$line")" >&2; exit 1; }
        rate=$(field rate <<<"$line")
    else
        per=$((PROXY_TASKS / 4))
        for i in 0 1 2 3; do proxy_fill "s$i" "$per"; done
        t0=$(date +%s.%N)
        for i in 0 1 2 3; do
            files+=("$TQ_WORK/proxy_drain.$i")
            PGDATABASE=s$i "$TQ_WORK/driver" taskq drain --clients 4 --per-claim 1 --wait 100 --tasks "$per" --prefix "ps$r$i" >"${files[i]}" &
            pids+=($!)
        done
        for i in 0 1 2 3; do wait "${pids[i]}"; done
        t1=$(date +%s.%N)
        for i in 0 1 2 3; do
            [[ $(field tasks <"${files[i]}") == "$per" ]] || { echo "bench: proxy shard $i drained $(field tasks <"${files[i]}")" >&2; exit 1; }
        done
        rate=$(awk -v n="$PROXY_TASKS" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }')
    fi
    echo "  proxy drain $1 run $r: $rate tasks/s" >&2
    echo "$rate"
}
if want proxy; then
    for i in 0 1 2 3; do
        tq_psql postgres -q -c "CREATE DATABASE s$i"
        tq_psql "s$i" -q -c "CREATE EXTENSION taskq"
    done
    tq_psql postgres -q -c "CREATE DATABASE proxy"
    tq_psql proxy -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION plproxy" -c "CREATE EXTENSION taskq_proxy" \
        -c "CREATE SERVER taskq FOREIGN DATA WRAPPER plproxy OPTIONS ($(for i in 0 1 2 3; do printf "p$i 'host=127.0.0.1 port=$TQ_PORT dbname=s$i'"; [[ $i == 3 ]] || printf ', '; done))" \
        -c "CREATE USER MAPPING FOR PUBLIC SERVER taskq"
    echo "SELECT taskq.enqueue('work');" >"$TQ_WORK/proxy_enq.sql"
    declare -A pr=()
    for ((r = 1; r <= RUNS; r++)); do
        if ((r % 2)); then order="direct proxy"; else order="proxy direct"; fi
        for m in $order; do
            db=s0; [[ $m == proxy ]] && db=proxy
            for i in 0 1 2 3; do PGDATABASE=s$i sql "TRUNCATE taskq.tasks"; done
            pr[enq.$m]+="$(proxy_pgbench "$db" "$TQ_WORK/proxy_enq.sql" "$PROXY_CALLS") "
            if [[ $m == proxy ]]; then
                # through the proxy, so that each id is on its route's shard
                for i in 0 1 2 3; do PGDATABASE=s$i sql "TRUNCATE taskq.tasks"; done
                PGDATABASE=proxy sql "SET client_min_messages = warning" \
                    "SELECT count(*) FROM unnest(taskq.enqueue_many('work', array_fill('{}'::jsonb, ARRAY[$((PROXY_CALLS * 4))])))" >/dev/null
                for i in 0 1 2 3; do PGDATABASE=s$i sql "VACUUM ANALYZE taskq.tasks"; done
            else
                proxy_fill s0 "$PROXY_CALLS"
            fi
            pr[cycle.$m]+="$(proxy_pgbench "$db" "$here/pgbench/cycle.sql" "$PROXY_CALLS") "
        done
        echo "  proxy run $r: enqueue ${pr[enq.direct]}/ ${pr[enq.proxy]}; cycle ${pr[cycle.direct]}/ ${pr[cycle.proxy]}" >&2
        if ((r % 2)); then order="one shards"; else order="shards one"; fi
        for m in $order; do pr[drain.$m]+="$(proxy_drain "$m" "$r") "; done
    done
    for k in enq.direct enq.proxy cycle.direct cycle.proxy drain.one drain.shards; do
        R[proxy.$k]=$(printf '%s\n' ${pr[$k]} | median)
    done
    for k in enq cycle; do
        read -ra a <<<"${pr[$k.proxy]}"; read -ra b <<<"${pr[$k.direct]}"
        L[proxy.$k]=$(for ((r = 0; r < RUNS; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
    done
    read -ra a <<<"${pr[drain.shards]}"; read -ra b <<<"${pr[drain.one]}"
    L[proxy.drain]=$(for ((r = 0; r < RUNS; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
    unset pr
fi

# metrics(): the latency of a scrape with a small and a big table, the
# sizes taking turns as in row().
metrics_fill() {   # N: N tasks over METRICS_ACTIONS actions, a quarter claimed, a quarter completed
    reset_tables
    sql "DO \$\$ BEGIN FOR b IN 0 .. ($1 - 1) / 100000 LOOP
           PERFORM taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'm' || g, 'action', 'a' || g % $METRICS_ACTIONS))
                                         FROM generate_series(b * 100000 + 1, least((b + 1) * 100000, $1)) AS g));
           COMMIT; END LOOP; END \$\$"
    sql "UPDATE taskq.tasks SET status_code = 'in_progress', actor_id = 'bench', claimed_at = now(),
                action_deadline = now() + interval '1 hour', num_tries = 1
          WHERE (substr(id, 2))::bigint % 4 = 1" \
        "UPDATE taskq.tasks SET status_code = 'completed', finished_at = now(), num_tries = 1
          WHERE (substr(id, 2))::bigint % 4 = 2"
    sql "VACUUM ANALYZE taskq.tasks" "CHECKPOINT"
    sleep "$(sql "SELECT 2 * extract(epoch FROM current_setting('taskq.metrics_interval')::interval)")"
}
metrics_once() {   # N ROUND: prints the mean latency of one call, ms
    local out
    metrics_fill "$1"
    out=$(pgbench -n -M prepared -c 1 -t "$METRICS_CALLS" -f "$here/pgbench/metrics.sql" bench 2>&1)
    echo "  metrics at $1 tasks run $2: $(grep 'latency average' <<<"$out")" >&2
    sed -n 's/^latency average = \([0-9.]*\) ms$/\1/p' <<<"$out"
}
if want metrics; then
    declare -A mr=()
    for ((r = 1; r <= RUNS; r++)); do
        if ((r % 2)); then order="$METRICS_SMALL $METRICS_BIG"; else order="$METRICS_BIG $METRICS_SMALL"; fi
        for n in $order; do mr[$n]+="$(metrics_once "$n" "$r") "; done
    done
    R[metrics.big]=$(printf '%s\n' ${mr[$METRICS_BIG]} | median)
    R[metrics.small]=$(printf '%s\n' ${mr[$METRICS_SMALL]} | median)
    L[metrics.big]=${mr[$METRICS_BIG]}
    L[metrics.small]=${mr[$METRICS_SMALL]}
    unset mr
fi

# State machines (bench/machines.c): each system from empty tables, the
# runs or tasks it starts from made untimed; the systems take turns as in
# row().
machine_reset() {
    sql "TRUNCATE taskq.tasks, taskq.runs, taskq.fan_in_members, taskq.fan_in_open, taskq.definitions" \
        "VACUUM ANALYZE taskq.tasks" "VACUUM ANALYZE taskq.runs"
    sql "SELECT taskq.define_machine('bench_step', '{\"states\": [{\"name\": \"A\", \"action\": \"mstep\", \"initial\": true, \"final\": true, \"transitions\": [{\"event\": \"next\", \"to\": \"A\"}]}]}')" \
        "SELECT taskq.define_machine('bench_cont', '{\"states\": [{\"name\": \"C\", \"action\": \"cont\", \"initial\": true, \"final\": true, \"continuation\": true}]}')" \
        "SELECT taskq.define_machine('bench_fanin', '{\"states\": [{\"name\": \"A\", \"action\": \"fa\", \"initial\": true, \"transitions\": [{\"event\": \"go\", \"to\": \"F\"}]}, {\"name\": \"F\", \"action\": \"ff\", \"final\": true, \"fan_in\": $FANIN_WINDOW}]}')" >/dev/null
}
# start_runs MACHINE PREFIX N: N runs, 1,000 per transaction (each holds its run's lock).
# taskq.runs grows from empty: ANALYZE it now and then, or the session's
# cached plans keep the sequential scans planned for an empty table.
start_runs() {
    sql "DO \$\$ BEGIN FOR b IN 0 .. ($3 - 1) / 1000 LOOP
           PERFORM taskq.start_machine('$1', '$2' || g)
              FROM generate_series(b * 1000 + 1, least((b + 1) * 1000, $3)) AS g;
           IF b IN (1, 4, 16, 64) THEN ANALYZE taskq.runs; ANALYZE taskq.tasks; END IF;
           COMMIT; END LOOP; END \$\$"
}
machine_once() {
    local sys=$1 c=$2 r=$3 chunk=${4:-1} line n=$MACHINE_STEPS t0 t1 wrong
    local body='{"run": "x", "machine": "bench_step", "version": 1, "state": "A", "context": {}}'
    machine_reset
    case $sys in
    step) start_runs bench_step "s$r-" "$MACHINE_RUNS" ;;
    succ) sql "SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'p' || g, 'action', 'succ', 'body', '$body'::jsonb)) FROM generate_series(1, $MACHINE_RUNS) g))" >/dev/null ;;
    cont) n=$CONT_ROWS; sql "SELECT taskq.start_machine('bench_cont', 'c$r')" >/dev/null ;;
    drain) n=$CONT_ROWS ;;
    fanin) n=$FANIN_INSTANCES; start_runs bench_fanin "f$r-" "$FANIN_INSTANCES" ;;
    esac
    if [[ $sys == cont || $sys == drain ]]; then
        # the rows a continuation (or one plain task per row) "emails": sent = sent + 1
        sql "DROP TABLE IF EXISTS bench.rows" \
            "CREATE TABLE bench.rows AS SELECT g AS id, 0 AS sent FROM generate_series(0, $CONT_ROWS - 1) AS g" \
            "ALTER TABLE bench.rows ADD PRIMARY KEY (id)" "VACUUM ANALYZE bench.rows" >/dev/null
        [[ $sys == drain ]] && sql "SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'd' || g, 'action', 'work', 'body', '$body'::jsonb)) FROM generate_series(0, $CONT_ROWS - 1) g))" >/dev/null
    fi
    sql "VACUUM ANALYZE taskq.tasks" "VACUUM ANALYZE taskq.runs" "CHECKPOINT"
    t0=$(cluster_ticks)
    line=$("$TQ_WORK/machines" "$sys" --clients "$c" --tasks "$n" --chunk "$chunk")
    sleep 0.3   # the run's backends exit and are reaped
    t1=$(cluster_ticks)
    line+=" cpu_us_per_step=$(( (t1 - t0) * TICK_US / (n > 0 ? n : 1) ))"
    if [[ $sys == cont || $sys == drain ]]; then
        # every row emailed exactly once, or the figure is void
        wrong=$(sql "SELECT count(*) FROM bench.rows WHERE sent <> 1")
        ((wrong == 0)) || { echo "bench: machines $sys (chunk $chunk): $wrong rows not sent exactly once" >&2; exit 1; }
    fi
    if [[ $sys == fanin ]]; then
        # every instance in exactly one batch: one succeeded per batch, the rest merged
        line+=" $(sql "SELECT 'succeeded=' || count(*) FILTER (WHERE status = 'succeeded') || ' merged=' || count(*) FILTER (WHERE status = 'merged') || ' unfinished=' || count(*) FILTER (WHERE finished_at IS NULL) FROM taskq.runs")"
    fi
    echo "  machines $sys c=$c run $r: $line" >&2
    echo "$line"
}
if want machines; then
    for mc in $MACHINE_CLIENTS; do
        declare -A mr=() mcpu=()
        for ((r = 1; r <= RUNS; r++)); do
            for s in $( ((r % 2)) && echo step succ || echo succ step); do
                line=$(machine_once "$s" "$mc" "$r")
                mr[$s]+="$(field rate <<<"$line") "
                mcpu[$s]+="$(field cpu_us_per_step <<<"$line") "
            done
        done
        for s in step succ; do
            R[machines.$mc.$s]=$(printf '%s\n' ${mr[$s]} | median)
            R[machines.$mc.$s.cpu]=$(printf '%s\n' ${mcpu[$s]} | median)
        done
        read -ra a <<<"${mr[step]}"; read -ra b <<<"${mr[succ]}"
        L[machines.$mc.ratios]=$(for ((r = 0; r < RUNS; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
        read -ra a <<<"${mcpu[succ]}"; read -ra b <<<"${mcpu[step]}"
        L[machines.$mc.cpu_ratios]=$(for ((r = 0; r < RUNS; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
        unset mr mcpu
    done
    if ((CONT_ROWS > 0)); then
        # one plain drain per round, then each chunk size's continuation (turns alternate)
        declare -A mr=()
        for ((r = 1; r <= RUNS; r++)); do
            order="drain"; for k in $CONT_CHUNKS; do order+=" cont.$k"; done
            ((r % 2)) || order=$(printf '%s\n' $order | tac | paste -sd' ')
            for s in $order; do
                k=${s#cont.}; [[ $s == drain ]] && k=1
                mr[$s]+="$(machine_once "${s%%.*}" "$CONT_CLIENTS" "$r" "$k" | field rate) "
            done
        done
        R[machines.drain]=$(printf '%s\n' ${mr[drain]} | median)
        read -ra b <<<"${mr[drain]}"
        for k in $CONT_CHUNKS; do
            R[machines.cont.$k]=$(printf '%s\n' ${mr[cont.$k]} | median)
            read -ra a <<<"${mr[cont.$k]}"
            L[machines.cont.$k.ratios]=$(for ((r = 0; r < RUNS; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
        done
        unset mr
    fi
    for ((r = 1; r <= LONG_RUNS; r++)); do
        L[machines.fanin.$r]=$(machine_once fanin "$FANIN_ARRIVERS" "$r")
    done
    for k in rate batches counted ready_p50_ms ready_p95_ms ready_max_ms succeeded merged unfinished; do
        R[machines.fanin.$k]=$(for ((r = 1; r <= LONG_RUNS; r++)); do field "$k" <<<"${L[machines.fanin.$r]}"; done | median)
    done
    L[machines.fanin.all]=$(for ((r = 1; r <= LONG_RUNS; r++)); do echo "${L[machines.fanin.$r]}"; done | paste -sd';')
fi

# Fan-in arrivals against the machine's own steps, the two taking turns
# (steps first: the database's background worker, which makes the batch
# tasks claimable when their windows end, has started by then).
if want arrivals; then
    declare -A ar=()
    for ((r = 1; r <= RUNS; r++)); do
        for s in $( ((r % 2)) && echo step fanin || echo fanin step); do
            if [[ $s == fanin ]]; then
                line=$(FANIN_INSTANCES=$ARRIVAL_INSTANCES machine_once fanin "$ARRIVAL_CLIENTS" "a$r")
                # every instance in exactly one batch: counted once, none left unfinished
                if [[ $(field counted <<<"$line") != "$ARRIVAL_INSTANCES" || $(field unfinished <<<"$line") != 0 ]]; then
                    echo "bench: arrivals run $r: instances not each in exactly one batch: $line" >&2
                    exit 1
                fi
            else
                line=$(machine_once step "$ARRIVAL_CLIENTS" "a$r")
            fi
            ar[$s]+="$(field rate <<<"$line") "
        done
    done
    R[arrivals.fanin]=$(printf '%s\n' ${ar[fanin]} | median)
    R[arrivals.step]=$(printf '%s\n' ${ar[step]} | median)
    read -ra a <<<"${ar[fanin]}"; read -ra b <<<"${ar[step]}"
    L[arrivals.ratios]=$(for ((r = 0; r < RUNS; r++)); do ratio "${a[r]}" "${b[r]}"; echo; done | paste -sd' ')
    unset ar
fi

# Map states (not in the default WORKLOADS): one run's map over MAP_ITEMS
# items against as many plain tasks with a join, drained alike by
# MAP_CLIENTS psql workers; timed from the start (or the insert) to the
# run's move (or the join's readiness), in seconds of the database clock.
map_once() {
    local sys=$1 r=$2 w pids=() t c0 c1
    sql "TRUNCATE taskq.tasks, taskq.runs, taskq.definitions" "VACUUM ANALYZE taskq.tasks" "VACUUM ANALYZE taskq.runs"
    sql "SELECT taskq.define_machine('bench_map', '{\"states\": [{\"name\": \"M\", \"action\": null, \"initial\": true, \"map\": {\"items\": \"xs\", \"action\": \"bmap\"}, \"transitions\": [{\"event\": \"mapped\", \"to\": \"E\"}]}, {\"name\": \"E\", \"action\": \"bmap_end\", \"final\": true}]}')" >/dev/null
    sql "CREATE OR REPLACE PROCEDURE public.bench_map_worker() LANGUAGE plpgsql AS \$\$
         DECLARE t record; idle int := 0;
         BEGIN LOOP
           SELECT o.id, o.token INTO t FROM taskq.own_tasks('bm', 1, ARRAY['bmap'], interval '1 hour') AS o;
           IF t.id IS NULL THEN
             COMMIT; idle := idle + 1; EXIT WHEN idle > 2000; PERFORM pg_sleep(0.001); CONTINUE;
           END IF;
           idle := 0;
           PERFORM taskq.return_task(t.id, t.token, NULL, 'completed', NULL, to_jsonb(t.id));
           COMMIT;
         END LOOP; END \$\$" >/dev/null
    c0=$(cluster_ticks)
    profile_start "map $sys" "$r"
    t=$(sql "SELECT extract(epoch FROM clock_timestamp())")
    if [[ $sys == map ]]; then
        sql "SELECT taskq.start_machine('bench_map', 'm$r', jsonb_build_object('xs', (SELECT jsonb_agg(g) FROM generate_series(1, $MAP_ITEMS) AS g)))" >/dev/null
    else
        sql "SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'p$r/' || g, 'action', 'bmap', 'to_signal_after', jsonb_build_array('p$r/join'))) FROM generate_series(1, $MAP_ITEMS) AS g)
                                       || jsonb_build_array(jsonb_build_object('id', 'p$r/join', 'action', 'bmap_end', 'trigger', 'all_done')))" >/dev/null
    fi
    for ((w = 1; w <= MAP_CLIENTS; w++)); do sql "CALL public.bench_map_worker()" & pids+=($!); done
    # until the run moved (or the join is ready): the end task is ready (polled every 50 ms)
    until [[ $(sql "SELECT count(*) FROM taskq.tasks WHERE action = 'bmap_end' AND num_signals = 0") == 1 ]]; do sleep 0.05; done
    t=$(sql "SELECT round(($MAP_ITEMS / (extract(epoch FROM clock_timestamp()) - $t))::numeric, 0)")
    wait "${pids[@]}"
    profile_stop
    sleep 0.3   # the run's backends exit and are reaped
    c1=$(cluster_ticks)
    # the database's CPU per item (µs), the workers' idle end included
    echo "$(( (c1 - c0) * TICK_US / MAP_ITEMS ))" >>"$TQ_WORK/cpu.map_$sys"
    echo "  map $sys run $r: items/s=$t cpu_us_per_item=$(( (c1 - c0) * TICK_US / MAP_ITEMS ))" >&2
    echo "$t"
}
if want map; then
    declare -A mr=()
    for ((r = 1; r <= RUNS; r++)); do
        for s in $( ((r % 2)) && echo map plain || echo plain map); do
            mr[$s]+="$(map_once "$s" "$r") "
        done
    done
    R[map.map]=$(printf '%s\n' ${mr[map]} | median)
    R[map.plain]=$(printf '%s\n' ${mr[plain]} | median)
    L[map.map]=${mr[map]}
    L[map.plain]=${mr[plain]}
    unset mr
fi

# Vacuum lag: LAG_TASKS pending, autovacuum off for the drained table, a
# 1-worker drain of 50 per claim in LAG_CHUNKS equal chunks (one driver run
# each): the rate of the last chunk against the first.  The entries of the
# claimed tasks pile up at the head of each queue's pending index, as they
# do between two autovacuum runs (naptime: a minute by default).
if want lag; then
    for s in taskq baseline floor; do
        tbl=bench.$s
        [[ $s == taskq ]] && tbl=taskq.tasks
        firsts=() lasts=()
        for ((r = 1; r <= LONG_RUNS; r++)); do
            reset_tables
            prefill "$s" "$LAG_TASKS"
            sql "ALTER TABLE $tbl SET (autovacuum_enabled = off)"
            chunk=$((LAG_TASKS / LAG_CHUNKS)) rates=()
            for ((c = 1; c <= LAG_CHUNKS; c++)); do
                line=$("$TQ_WORK/driver" "$s" drain --clients 1 --per-claim 50 --claims "$chunk" \
                    --tasks "$chunk" --prefix "l$r.$c")
                rates+=("$(field rate <<<"$line")")
            done
            echo "  lag $s run $r: ${rates[*]}" >&2
            sql "ALTER TABLE $tbl RESET (autovacuum_enabled)"
            firsts+=("${rates[0]}") lasts+=("${rates[-1]}")
        done
        R[lag.$s.first]=$(printf '%s\n' "${firsts[@]}" | median)
        R[lag.$s.last]=$(printf '%s\n' "${lasts[@]}" | median)
    done
fi

soak=""
soaks=()
if want soak; then
    # A short retention, so that the soak's steady state includes the
    # worker deleting finished tasks; with the default 7 days every
    # completed task stays and the table grows with the number of tasks.
    sql "ALTER SYSTEM SET taskq.retention = '${SOAK_RETENTION}s'" "SELECT pg_reload_conf()" >/dev/null
    for ((r = 1; r <= SOAK_RUNS; r++)); do
        reset_tables
        sleep 1
        soaks+=("$(driver soak --seconds "$SOAK_SECONDS" --window "$SOAK_WINDOW" --clients "$SOAK_CLIENTS" \
            --per-claim 1 --batch "$SOAK_BATCH" --backlog "$SOAK_BACKLOG" --action soak --prefix s)")
        echo "  soak $r: ${soaks[-1]}" >&2
    done
    sql "ALTER SYSTEM RESET taskq.retention" "SELECT pg_reload_conf()" >/dev/null
    # the run with the median throughput ratio (the lower middle one of an even count)
    soak=$(for l in "${soaks[@]}"; do echo "$(field rate_ratio <<<"$l") $l"; done |
        sort -g -k1,1 | sed -n "$(( (SOAK_RUNS + 1) / 2 ))p" | cut -d' ' -f2-)
fi
s() { field "$1" <<<"$soak"; }
# every soak's figure, in run order: "0.92, 0.85, 0.97"
s_all() { local l; for l in "${soaks[@]}"; do field "$1" <<<"$l"; done | paste -sd, | sed 's/,/, /g'; }

{
    if want enqueue || want drain; then
        echo "| workload | taskq tasks/s | baseline | floor | taskq ÷ baseline | taskq ÷ floor | return_and_own | ÷ baseline | ÷ floor | r&o, retention 0 | ÷ floor | bound | bound ÷ floor |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        line() {
            [[ -n ${R[$2.taskq]:-} ]] || return 0
            local bl=${R[$2.baseline]:-–} fl=${R[$2.floor]:-–}
            local c=${R[$2.cycle]:-–} cb=– cf=– z=${R[$2.cycle0]:-–} zf=– b=${R[$2.bound]:-–} bf=–
            [[ $c != – ]] && cb=$(ratio "$c" "$bl") && cf=$(ratio "$c" "$fl")
            [[ $z != – ]] && zf=$(ratio "$z" "$fl")
            [[ $b != – ]] && bf=$(ratio "$b" "$fl")
            echo "| $1 | ${R[$2.taskq]} | $bl | $fl | $(ratio "${R[$2.taskq]}" "$bl") | $(ratio "${R[$2.taskq]}" "$fl") | $c | $cb | $cf | $z | $zf | $b | $bf |"
        }
        line "enqueue, 1 per transaction, 4 clients" enq1
        line "enqueue, batches of 1,000, 4 clients" enq1000
        for w in $DRAIN_WORKERS; do
            for k in $DRAIN_PER_CLAIM; do
                line "drain, $w worker(s), $k per claim" "drain.$w.$k"
            done
        done
        echo
        if want drain; then
            echo "| database CPU per task, µs (all of the cluster's processes; medians) | taskq | baseline | floor | return_and_own | r&o, retention 0 | bound |"
            echo "|---|---:|---:|---:|---:|---:|---:|"
            for w in $DRAIN_WORKERS; do
                for k in $DRAIN_PER_CLAIM; do
                    [[ -n ${R[drain.$w.$k.taskq]:-} ]] || continue
                    echo "| drain, $w worker(s), $k per claim | $(cpu_median "drain.$w.$k taskq") | $(cpu_median "drain.$w.$k baseline") | $(cpu_median "drain.$w.$k floor") | $(cpu_median "drain.$w.$k cycle") | $(cpu_median "drain.$w.$k cycle0") | $(cpu_median "drain.$w.$k bound") |"
                done
            done
            echo
        fi
    fi
    if want pgenqueue; then
        echo "| pgbench -M prepared, 4 clients, ~100-byte body; tasks/s | taskq | hand-written queue (bigserial) | taskq ÷ hand-written | database CPU per task, µs: taskq | hand-written | hand-written keyed by random text ids: tasks/s | taskq ÷ it | its CPU per task, µs |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        for batch in 1 1000; do
            for s in "${psystems[@]}"; do
                [[ $s == baseline || $s == baseline-text ]] && continue
                echo "| enqueue, $batch per call, $(pgenq_form "$s" "$batch") | ${R[pgenq$batch.$s]} | ${R[pgenq$batch.baseline]} | $(ratio "${R[pgenq$batch.$s]}" "${R[pgenq$batch.baseline]}") | $(cpu_median "pgenq$batch.$s") | $(cpu_median "pgenq$batch.baseline") | ${R[pgenq$batch.baseline-text]:-–} | $(ratio "${R[pgenq$batch.$s]}" "${R[pgenq$batch.baseline-text]:-0}") | $(cpu_median "pgenq$batch.baseline-text") |"
            done
        done
        echo
    fi
    if want lag; then
        echo "| vacuum lag: 1 worker, 50 per claim, $(fmt "$LAG_TASKS") pending, autovacuum off; tasks/s | first $(fmt $((LAG_TASKS / LAG_CHUNKS))) | last $(fmt $((LAG_TASKS / LAG_CHUNKS))) | last ÷ first |"
        echo "|---|---:|---:|---:|"
        for s in taskq baseline floor; do
            echo "| $s | ${R[lag.$s.first]} | ${R[lag.$s.last]} | $(ratio "${R[lag.$s.last]}" "${R[lag.$s.first]}") |"
        done
        echo
    fi
    if want latency; then
        echo "| latency, producer ($LATENCY_PRODUCER) at 300 tasks/s for ${LATENCY_SECONDS} s, 4 idle workers (ms, medians of the runs) | enqueue → claim p50 | p95 | p99 | insert call p50 | p99 | claim − insert's reply p50 | p99 |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|"
        for kind in lat latw lata latwa; do
            case $kind in
            lat) label="LISTEN taskq, durable commit" ;;
            latw) label="own_tasks(…, wait => 1 s), durable commit" ;;
            lata) label="LISTEN taskq, producer synchronous_commit = off" ;;
            latwa) label="own_tasks(…, wait => 1 s), producer synchronous_commit = off" ;;
            esac
            echo "| $label | $(lp $kind p50_ms) | $(lp $kind p95_ms) | $(lp $kind p99_ms) | $(lp $kind insert_p50_ms) | $(lp $kind insert_p99_ms) | $(lp $kind after_reply_p50_ms) | $(lp $kind after_reply_p99_ms) |"
        done
        echo
    fi
    if want depth || want fanin || want rules || want chain || want soak; then
        echo "| workload (taskq against itself) | taskq | against | ratio | target |"
        echo "|---|---:|---:|---:|---|"
        if want depth; then
            echo "| depth: drain rate over $(fmt "$DEPTH_CLAIMS") claims, $DEPTH_CLIENTS workers, $DEPTH_PER_CLAIM per claim: $(fmt "$DEPTH_BIG") pending ÷ $(fmt "$DEPTH_SMALL") pending (tasks/s) | ${R[depth.big]} | ${R[depth.small]} | $(ratio "${R[depth.big]}" "${R[depth.small]}") | ≥ 0.9 |"
        fi
        if want fanin; then
            echo "| fan-in: drain rate of a group of $(fmt "$FANIN_TASKS") into one join ÷ plain drain of $(fmt "$FANIN_TASKS"), $FANIN_CLIENTS workers, $FANIN_PER_CLAIM per claim (tasks/s) | ${R[fanin.group]} | ${R[fanin.plain]} | $(ratio "${R[fanin.group]}" "${R[fanin.plain]}") | ≥ 0.8 |"
        fi
        if want chain; then
            echo "| chain of $(fmt "$CHAIN_HOPS") hops, 1 worker: ms per hop ÷ ms per task of a plain 1-worker drain of $(fmt "$CHAIN_HOPS") | ${R[chain.hop_ms]} | ${R[chain.plain_ms]} | $(ratio "${R[chain.hop_ms]}" "${R[chain.plain_ms]}") | – |"
        fi
        if want soak; then
            echo "| soak $SOAK_SECONDS s: size of taskq.tasks at the end ÷ after the first $SOAK_WINDOW s (MB) | $(s size_end_mb) | $(s size_first_mb) | $(s size_ratio) | ≤ 1.2 |"
            echo "| soak $SOAK_SECONDS s: throughput in the last $SOAK_WINDOW s ÷ the first $SOAK_WINDOW s (tasks/s) | $(s last_rate) | $(s first_rate) | $(s rate_ratio) | ≥ 0.9 |"
        fi
        echo
        if want depth; then
            echo "Depth: WAL written per task while draining, $(fmt "$DEPTH_BIG") pending: ${R[depth.big.wal_bytes_per_task]} bytes (${R[depth.big.fpi_per_task]} full-page images per task); $(fmt "$DEPTH_SMALL") pending: ${R[depth.small.wal_bytes_per_task]} bytes (${R[depth.small.fpi_per_task]})."
            echo
        fi
        if want fanin; then
            echo "Fan-in, group of $(fmt "$FANIN_JOIN") into one join: the join was claimed ${R[fanin.join_ms]} ms after the last member's return committed (target ≤ 10 ms): from the reply to the last \`return_task\` to the reply of the \`own_tasks\` on the join's action that got it, called at once by the same client (${R[fanin.join_polls]} call(s) needed). From database timestamps (the join's claim time less the last member's \`finished_at\`; both are transaction starts, so this also covers the last return's own work and commit): ${R[fanin.join_db_ms]} ms. With the group of $(fmt "$FANIN_TASKS"): ${R[fanin.group_join_ms]} ms."
            echo
        fi
        if want rules; then
            echo "Trigger rules, a join of $(fmt "$FANIN_JOIN") members: \`one_success\` claimed ${R[rules.one_success.join_ms]} ms after the first member's return (the deciding one) came back (${R[rules.one_success.join_polls]} call(s); ${R[rules.one_success.join_db_ms]} ms from database timestamps); \`all_done\` claimed ${R[rules.all_done.join_ms]} ms after the last member's return (${R[rules.all_done.join_polls]} call(s); ${R[rules.all_done.join_db_ms]} ms from database timestamps). Target ≤ 10 ms."
            echo
        fi
        if want chain; then
            echo "Chain: every hop was ownable right after the previous hop's return (median ${R[chain.empty]} empty claims per run)."
            echo
        fi
        if want soak; then
            echo "| soak: seconds | tasks/s in the window before | taskq.tasks MB | n_dead_tup | vacuums so far |"
            echo "|---:|---:|---:|---:|---:|"
            tr ',' '\n' <<<"$(s windows)" | awk -F/ '{ printf "| %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5 }'
            echo
            if ((SOAK_RUNS > 1)); then
                echo "Soak: $SOAK_RUNS runs, each from an empty table; the figures here are those of the run with the median throughput ratio. Every run's throughput ratio: $(s_all rate_ratio) (first $SOAK_WINDOW s: $(s_all first_rate) tasks/s; last: $(s_all last_rate)); size ratio: $(s_all size_ratio)."
                echo
            fi
            echo "Soak: $SOAK_CLIENTS workers (1 per claim) and one producer ($SOAK_BATCH tasks per transaction while fewer than $(fmt "$SOAK_BACKLOG") are unfinished) for $SOAK_SECONDS s, \`taskq.retention = $(s retention)\`: $(fmt "$(s tasks)") tasks, $(s rate) tasks/s overall. \`taskq.tasks\` (heap + indexes) after $SOAK_WINDOW s: $(s size_first_mb) MB (heap $(s heap_first_mb), indexes $(s index_first_mb)), holding $(fmt "$(s open_rows_first)") open rows (pending or in progress; $(s open_mb_first) MB of row data) and $(fmt "$(s finished_rows_first)") finished rows kept for retention ($(s finished_mb_first) MB), n_dead_tup $(fmt "$(s dead_first)"). At the end: $(s size_end_mb) MB (heap $(s heap_end_mb), indexes $(s index_end_mb)), $(fmt "$(s open_rows_end)") open rows ($(s open_mb_end) MB), $(fmt "$(s finished_rows_end)") finished ($(s finished_mb_end) MB), n_dead_tup $(fmt "$(s dead_end)"); $(s vacuums) vacuums of the table, $(fmt "$(s deleted)") rows deleted by retention."
            echo
        fi
    fi
    if want runners; then
        echo "| runner, no-op tasks | concurrency | tasks/s | limit | limit tasks/s | ratio | ratio run by run | target |"
        echo "|---|---:|---:|---|---:|---:|---|---|"
        for rc in $RUNNER_CONCURRENCY; do
            [[ " $RUNNER_SYSTEMS " == *" tqw0 "* ]] &&
                echo "| taskq-worker $RUNNER_TQW_BEFORE (before) --run work=/bin/true, $(fmt "$RUNNER_SPAWN_TASKS") tasks | $rc | ${R[runners.$rc.tqw0]} | spawn: fork + exec of \`/bin/sh -c /bin/true\`, no database | ${R[runners.$rc.spawn]} | $(ratio "${R[runners.$rc.tqw0]}" "${R[runners.$rc.spawn]}") | ${L[runners.$rc.tqw0_ratios]} | ≥ 0.8 |"
            [[ " $RUNNER_SYSTEMS " == *" tqw "* ]] &&
                echo "| taskq-worker --run work=/bin/true, $(fmt "$RUNNER_SPAWN_TASKS") tasks | $rc | ${R[runners.$rc.tqw]} | spawn: fork + exec of \`/bin/sh -c /bin/true\`, no database | ${R[runners.$rc.spawn]} | $(ratio "${R[runners.$rc.tqw]}" "${R[runners.$rc.spawn]}") | ${L[runners.$rc.tqw_ratios]} | ≥ 0.8 |"
        done
        for rc in $RUNNER_CONCURRENCY; do
            [[ " $RUNNER_SYSTEMS " == *" lib "* ]] || continue
            echo "| Python taskq.Worker, handler returns None, $(fmt "$RUNNER_PY_TASKS") tasks | $rc | ${R[runners.$rc.lib]} | hand-written psycopg 3 return_and_own loop, $rc thread(s) | ${R[runners.$rc.hand]} | $(ratio "${R[runners.$rc.lib]}" "${R[runners.$rc.hand]}") | ${L[runners.$rc.lib_ratios]} | ≥ 0.8 |"
        done
        echo
        echo "Runners, every run's tasks/s (sorted):$(for rc in $RUNNER_CONCURRENCY; do for s in $RUNNER_SYSTEMS; do printf ' %s c=%s: %s;' "$s" "$rc" "${L[runners.$rc.$s]}"; done; done)"
        echo
    fi
    if want saga; then
        echo "| sagas | concurrency | taskq | against | against | ratio | ratio run by run | target |"
        echo "|---|---:|---:|---|---:|---:|---|---|"
        for w in $SAGA_WORKERS; do
            echo "| saga step: claim + return_step, $(saga_chains "$w") runs of $SAGA_STEPS steps (steps/s) | $w | ${R[saga.$w.saga]} | plain: claim + return_task inserting the next hop, $(saga_chains "$w") chains of $SAGA_STEPS | ${R[saga.$w.plain]} | $(ratio "${R[saga.$w.saga]}" "${R[saga.$w.plain]}") | ${L[saga.$w.ratios]} | ≥ 0.8 |"
        done
        for w in $SAGA_WORKERS; do
            echo "| database CPU per step (µs, the cluster's processes, the runs' start included): plain ÷ saga | $w | ${R[saga.$w.saga.cpu]} | plain | ${R[saga.$w.plain.cpu]} | $(ratio "${R[saga.$w.plain.cpu]}" "${R[saga.$w.saga.cpu]}") | ${L[saga.$w.cpu_ratios]} | ≥ 0.8 |"
        done
        for w in $SAGA_WORKERS; do
            echo "| undo path of a 6-step saga whose last step fails, $(saga_chains "$w") runs: ms per undo step | $w | ${R[saga.$w.undo_ms]} | ms per do step | ${R[saga.$w.do_ms]} | $(ratio "${R[saga.$w.undo_ms]}" "${R[saga.$w.do_ms]}") | ${L[saga.$w.undo_ratios]} | ≤ 1.0 |"
        done
        echo
    fi
    if want limits; then
        echo "| flow control, $(fmt "$LIMIT_TASKS") tasks, 1 per claim, waiting claims (tasks/s) | workers | limited | unlimited | workers | ratio | ratio run by run | target |"
        echo "|---|---:|---:|---:|---:|---:|---|---|"
        echo "| \`max_running\` 8 ÷ no limit | 16 | ${R[limits.max8]} | ${R[limits.plain8]} | 8 | $(ratio "${R[limits.max8]}" "${R[limits.plain8]}") | ${L[limits.max8.ratios]} | ≥ 0.8 |"
        echo "| \`max_running_per_key\` 1 over $(fmt "$LIMIT_KEYS") keys ÷ the same keys, no limit | 16 | ${R[limits.perkey]} | ${R[limits.keyed]} | 16 | $(ratio "${R[limits.perkey]}" "${R[limits.keyed]}") | ${L[limits.perkey.ratios]} | ≥ 0.8 |"
        echo
    fi
    if want proxy; then
        echo "| through the proxy (4 shards of one server) | proxy | direct | ratio | ratio run by run | target |"
        echo "|---|---:|---:|---:|---|---|"
        echo "| one-task \`enqueue\`, calls/s (pgbench, one client, $(fmt "$PROXY_CALLS") calls) | ${R[proxy.enq.proxy]} | ${R[proxy.enq.direct]} | $(ratio "${R[proxy.enq.proxy]}" "${R[proxy.enq.direct]}") | ${L[proxy.enq]} | ≥ 0.5 |"
        echo "| a worker's cycle (own_tasks 1, then return_task: two transactions), cycles/s | ${R[proxy.cycle.proxy]} | ${R[proxy.cycle.direct]} | $(ratio "${R[proxy.cycle.proxy]}" "${R[proxy.cycle.direct]}") | ${L[proxy.cycle]} | ≥ 0.5 |"
        echo "| drain of $(fmt "$PROXY_TASKS") tasks, tasks/s: 4 shards × 4 workers ÷ one shard × 16 | ${R[proxy.drain.shards]} | ${R[proxy.drain.one]} | $(ratio "${R[proxy.drain.shards]}" "${R[proxy.drain.one]}") | ${L[proxy.drain]} | ≥ 0.85 |"
        echo
    fi
    if want timers; then
        echo "| a plain claim and return, p50 ms (pgbench, one client, $(fmt "$TIMER_CLAIMS") claims) | $(fmt "$TIMER_RUNS") runs waiting, $(fmt "$TIMER_RATE") timeouts firing a second | idle queue | ratio | every run, busy; idle | target |"
        echo "|---|---:|---:|---:|---|---|"
        echo "| own_tasks + return_task | ${R[timers.busy]} | ${R[timers.idle]} | $(ratio "${R[timers.busy]}" "${R[timers.idle]}") | ${L[timers.busy]}; ${L[timers.idle]} | ≤ 1.1 |"
        echo
    fi
    if want metrics; then
        echo "| \`SELECT * FROM taskq.metrics()\`, $METRICS_ACTIONS actions, ms per call (mean of $METRICS_CALLS) | $(fmt "$METRICS_BIG") tasks | $(fmt "$METRICS_SMALL") tasks | ratio | every run, big; small | target |"
        echo "|---|---:|---:|---:|---|---|"
        echo "| one scrape | ${R[metrics.big]} | ${R[metrics.small]} | $(ratio "${R[metrics.big]}" "${R[metrics.small]}") | ${L[metrics.big]}; ${L[metrics.small]} | < 5 ms, flat |"
        echo
    fi
    if want map; then
        echo "| map state against plain tasks with a join | clients | map | plain | ratio | every run, map; plain | CPU µs per item, map; plain | target |"
        echo "|---|---:|---:|---:|---:|---|---|---|"
        echo "| $(fmt "$MAP_ITEMS") items of one map state, from start_machine to the run's move on \\\`mapped\\\` ÷ as many plain tasks with an all_done join, from the insert to the join's readiness, items/s | $MAP_CLIENTS | ${R[map.map]} | ${R[map.plain]} | $(ratio "${R[map.map]}" "${R[map.plain]}") | ${L[map.map]}; ${L[map.plain]} | $(cpu_median map_map); $(cpu_median map_plain) | ≥ 0.8 |"
        echo
    fi
    if want machines; then
        echo "| state machines against plain tasks | clients | machine | plain | ratio | ratio run by run | target |"
        echo "|---|---:|---:|---:|---:|---|---|"
        for mc in $MACHINE_CLIENTS; do
            echo "| machine step (own_tasks, then transition creating the next visit) ÷ plain task (own_tasks, then return_task + insert_tasks of one successor), $(fmt "$MACHINE_STEPS") of each, steps/s | $mc | ${R[machines.$mc.step]} | ${R[machines.$mc.succ]} | $(ratio "${R[machines.$mc.step]}" "${R[machines.$mc.succ]}") | ${L[machines.$mc.ratios]} | ≥ 0.8 |"
        done
        for mc in $MACHINE_CLIENTS; do
            echo "| database CPU per step (µs, the cluster's processes): plain ÷ machine | $mc | ${R[machines.$mc.step.cpu]} | ${R[machines.$mc.succ.cpu]} | $(ratio "${R[machines.$mc.succ.cpu]}" "${R[machines.$mc.step.cpu]}") | ${L[machines.$mc.cpu_ratios]} | ≥ 0.8 |"
        done
        if ((CONT_ROWS > 0)); then
            for k in $CONT_CHUNKS; do
                if ((k == 1)); then per="one instance per row"; else per="$k rows per instance"; fi
                echo "| continuation over $(fmt "$CONT_ROWS") rows, $per, each row updated once ÷ plain drain of $(fmt "$CONT_ROWS") tasks, one per row (own_tasks, then return_task with the row's update), rows/s | $CONT_CLIENTS | ${R[machines.cont.$k]} | ${R[machines.drain]} | $(ratio "${R[machines.cont.$k]}" "${R[machines.drain]}") | ${L[machines.cont.$k.ratios]} | ≥ 0.8 |"
            done
        fi
        echo
        echo "Fan-in of $(fmt "$FANIN_INSTANCES") instances into $FANIN_WINDOW-second windows, $FANIN_ARRIVERS clients moving them in ($(fmt "${R[machines.fanin.rate]}") arrivals/s), one client claiming the batches with \`own_tasks(…, wait)\` (another counts and ends them): ${R[machines.fanin.batches]} batches counted ${R[machines.fanin.counted]} instances (${R[machines.fanin.succeeded]} runs succeeded, one per batch; ${R[machines.fanin.merged]} merged; ${R[machines.fanin.unfinished]} unfinished); each batch task was claimed ${R[machines.fanin.ready_p50_ms]} ms (median; p95 ${R[machines.fanin.ready_p95_ms]} ms, max ${R[machines.fanin.ready_max_ms]} ms) after its window's end (target ≤ 10 ms). Every run: ${L[machines.fanin.all]}."
        echo
    fi
    if want arrivals; then
        echo "| fan-in arrivals against machine steps | clients | arrivals/s | steps/s | ratio | ratio run by run |"
        echo "|---|---:|---:|---:|---:|---|"
        echo "| $(fmt "$ARRIVAL_INSTANCES") instances moved into a fan-in state of $FANIN_WINDOW-second windows (own_tasks, then transition; the batches claimed and ended meanwhile) ÷ $(fmt "$MACHINE_STEPS") machine steps (own_tasks, then transition creating the next visit) | $ARRIVAL_CLIENTS | ${R[arrivals.fanin]} | ${R[arrivals.step]} | $(ratio "${R[arrivals.fanin]}" "${R[arrivals.step]}") | ${L[arrivals.ratios]} |"
        echo
    fi
    runs="Median of $RUNS runs of $TASKS tasks"
    if want drain && [[ " $DRAIN_PER_CLAIM " != " 1 " ]]; then runs+=" ($BATCH_RUNS for drains of more than 1 per claim)"; fi
    if want depth || want fanin || want rules; then runs+="; depth, fan-in and rules: median of $LONG_RUNS run(s)"; fi
    if want pgenqueue; then runs+="; pgenqueue: ${PGENQ_TASKS:-$TASKS} tasks per run"; fi
    if want soak; then runs+="; the soak: the median of $SOAK_RUNS run(s)"; fi
    if want saga; then runs+="; sagas: the runs and steps named in their rows"; fi
    if want limits; then runs+="; flow control: $(fmt "$LIMIT_TASKS") tasks per run"; fi
    if want runners; then runs+="; runners: $RUNNER_SPAWN_TASKS tasks per run of taskq-worker and spawn, $RUNNER_PY_TASKS of the Python ones"; fi
    echo "$runs; PostgreSQL $(sql 'SHOW server_version'), fsync on, synchronous_commit on, huge pages $TQ_HUGE_STATE, $(nproc) cores, $(date -u +%Y-%m-%d)."
} | tee "$OUT"
