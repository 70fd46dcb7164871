#!/usr/bin/env bash
# bench/neutral.sh — `make bench-neutral`: taskq against the queue a user
# writes first and the least a durable pop can do, on neutral ground: every
# system driven by pgbench -M prepared (bench/neutral/*.sql), PostgreSQL's
# stock postgresql.conf (plus shared_preload_libraries = 'taskq'; fsync
# and synchronous_commit on, no huge pages), each system in a database of
# its own made afresh for every run, VACUUM ANALYZE and CHECKPOINT before
# each timed phase, the systems taking turns round by round; each figure is
# the median of RUNS runs, with the runs' spread, and the cluster's CPU and
# WAL per task (the postmaster's and its children's CPU time, the WAL
# position, around each pgbench run), which other load moves less.
#
#   RUNS=3 bash bench/neutral.sh
#   TASKQ_PRIVATE_INSTALL=1 PHASES=drain WORKERS="4" BATCHES=50 RUNS=5 bash bench/neutral.sh
#
# The systems:
#   hand    the hand-written queue: a bigserial key, a partial index on
#           pending rows; a claim is UPDATE ... WHERE id IN (SELECT ... ORDER
#           BY id LIMIT B FOR UPDATE SKIP LOCKED) with one lease token per
#           claim, the completion one UPDATE ... = ANY (two transactions)
#   floor   DELETE ... WHERE id IN (SELECT ... LIMIT B FOR UPDATE SKIP
#           LOCKED) RETURNING: one transaction, no lease, nothing kept
#   taskq   own_tasks(actor, B, ARRAY['a'], '5 min') and one return_tasks
#           per batch (two transactions); filled with random text ids
#   taskq0  the same with taskq.retention = 0: the completion deletes
#   enqueue: hand (INSERT one row / INSERT ... SELECT 1,000), taskq
#           (enqueue / enqueue_many, ids made by taskq) and json
#           (insert_tasks with random text ids, the JSON form)
# Phases (PHASES): drain (TASKS pending, drained by each of WORKERS clients
# 50 per claim; ONE_TASKS by each of ONE_WORKERS clients 1 per claim, which
# commits twice per task; the rate counts the tasks actually drained over
# the wall time of pgbench) and enqueue (ENQ_TASKS from 4 clients, 1
# per transaction and 1,000 per call; the rate is pgbench's tps times the
# batch).  The table goes to OUT (bench/neutral-results.md).  KEEP=1 leaves
# the cluster running.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../test/bin/lib.sh
source "$here/../test/bin/lib.sh"
# shellcheck source=lib.sh
source "$here/lib.sh"

RUNS=${RUNS:-3}
TASKS=${TASKS:-100000}
ONE_TASKS=${ONE_TASKS:-20000}
ENQ_TASKS=${ENQ_TASKS:-40000}
WORKERS=${WORKERS:-1 4 16}
ONE_WORKERS=${ONE_WORKERS:-16}
BATCHES=${BATCHES:-50 1}
PHASES=${PHASES:-drain enqueue}
DRAIN_SYSTEMS=${DRAIN_SYSTEMS:-hand floor taskq taskq0}
ENQ_SYSTEMS=${ENQ_SYSTEMS:-hand taskq json}
OUT=${OUT:-$here/neutral-results.md}

[[ ${KEEP:-0} == 1 ]] && TQ_KEEP=1
trap 'tq_cleanup' EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

bash "$here/../test/bin/deps.sh"
tq_ensure_user
tq_make_work
tq_build_install
export TQ_HUGE_PAGES=off
tq_cluster_start stock
export PGHOST=127.0.0.1 PGPORT=$TQ_PORT PGUSER=$TQ_DBUSER
[[ $TQ_KEEP == 1 ]] && echo "neutral: KEEP=1: the cluster stays up on port $TQ_PORT" >&2

BODY='{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'
dbsql() { PGDATABASE=$1 sql "${@:2}"; }   # dbsql DB STATEMENT...
spread() { sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%.0f–%.0f", lo, hi}'; }
now() { date +%s.%N; }

# lsn DB: the server's WAL position now
lsn() { dbsql "$1" "SELECT pg_current_wal_lsn()"; }
# cost DB LSN0 TICKS0 N: the cluster's CPU (µs) and WAL (bytes) per task
# since LSN0 and TICKS0, over N tasks (after the run's backends are reaped)
cost() {
    local l1 c1
    sleep 0.3
    c1=$(cluster_ticks) l1=$(lsn "$1")
    awk -v c="$(( (c1 - $3) * TICK_US ))" -v w="$(dbsql "$1" "SELECT pg_wal_lsn_diff('$l1', '$2')")" -v n="$4" \
        'BEGIN { printf "%.1f %.0f\n", c / n, w / n }'
}

# fresh SYSTEM: its own database, made afresh (dropped first)
fresh() {
    local db=n_$1
    dbsql postgres "DROP DATABASE IF EXISTS $db" "CREATE DATABASE $db"
    case $1 in
    taskq*|json) dbsql "$db" "CREATE EXTENSION taskq" ;;
    *) psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$here/neutral/schema.sql" ;;
    esac
}

# ready DB: what every timed phase starts from
ready() { dbsql "$1" "VACUUM ANALYZE" "CHECKPOINT"; }

# fill SYSTEM N: N pending tasks (not timed)
fill() {
    local db=n_$1 left=$2 k
    case $1 in
    hand) dbsql "$db" "INSERT INTO neutral.jobs (body) SELECT '$BODY'::jsonb FROM generate_series(1, $2)" ;;
    floor) dbsql "$db" "INSERT INTO neutral.floor (body) SELECT '$BODY'::jsonb FROM generate_series(1, $2)" ;;
    *) while ((left > 0)); do
           k=$((left < 10000 ? left : 10000))
           dbsql "$db" "SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', gen_random_uuid()::text, 'action', 'a', 'body', '$BODY'::jsonb)) FROM generate_series(1, $k)))" >/dev/null
           left=$((left - k))
       done ;;
    esac
}

pending() {
    case $1 in
    hand) dbsql n_hand "SELECT count(*) FROM neutral.jobs WHERE status = 'pending'" ;;
    floor) dbsql n_floor "SELECT count(*) FROM neutral.floor" ;;
    *) dbsql "n_$1" "SELECT count(*) FROM taskq.tasks WHERE status_code = 'pending'" ;;
    esac
}

# drain SYSTEM WORKERS BATCH ROUND: prints tasks/s
drain() {
    local system=$1 w=$2 b=$3 r=$4 script per t0 t1 left rate opts="" n=$TASKS l0 c0 cpu wal
    ((b == 1)) && n=$ONE_TASKS
    fresh "$system"
    fill "$system" "$n"
    ready "n_$system"
    script=${system%0}_claim.sql
    [[ $system == taskq0 ]] && opts="-c taskq.retention=0"
    per=$(( (n + w * b - 1) / (w * b) ))
    l0=$(lsn "n_$system") c0=$(cluster_ticks)
    t0=$(now)
    PGOPTIONS=$opts pgbench -n -M prepared -c "$w" -j "$w" -t "$per" -D batch="$b" \
        -f "$here/neutral/$script" "n_$system" >"$TQ_WORK/log/pgbench.out" 2>&1 ||
        { cat "$TQ_WORK/log/pgbench.out" >&2; return 1; }
    t1=$(now)
    read -r cpu wal < <(cost "n_$system" "$l0" "$c0" "$n")
    left=$(pending "$system")
    rate=$(awk -v n="$n" -v l="$left" -v a="$t0" -v z="$t1" 'BEGIN { printf "%.0f", (n - l) / (z - a) }')
    echo "  drain $system workers=$w per_claim=$b run $r: tasks/s=$rate left=$left cpu_us_per_task=$cpu wal_bytes_per_task=$wal" >&2
    echo "$rate $cpu $wal"
}

# enqueue SYSTEM BATCH ROUND: prints tasks/s
enqueue() {
    local system=$1 b=$2 r=$3 per out tps l0 c0 cpu wal
    fresh "$system"
    ready "n_$system"
    per=$(( ENQ_TASKS / 4 / b ))
    l0=$(lsn "n_$system") c0=$(cluster_ticks)
    out=$(pgbench -n -M prepared -c 4 -j 4 -t "$per" -f "$here/neutral/${system}_enqueue_$b.sql" "n_$system" 2>&1) ||
        { echo "$out" >&2; return 1; }
    read -r cpu wal < <(cost "n_$system" "$l0" "$c0" $((per * 4 * b)))
    tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$out")
    echo "  enqueue $system per_call=$b run $r: tasks/s=$(awk -v t="$tps" -v b="$b" 'BEGIN { printf "%.0f", t * b }') cpu_us_per_task=$cpu wal_bytes_per_task=$wal" >&2
    echo "$(awk -v t="$tps" -v b="$b" 'BEGIN { printf "%.0f", t * b }') $cpu $wal"
}

want() { [[ " $PHASES " == *" $1 "* ]]; }
# the drains measured, a line "BATCH WORKERS" each: every batch size of
# BATCHES with each of WORKERS (ONE_WORKERS for one per claim)
drain_cases() {
    local b w ws
    for b in $BATCHES; do
        ws=$WORKERS
        ((b == 1)) && ws=$ONE_WORKERS
        for w in $ws; do echo "$b $w"; done
    done
}
declare -A RATES=() CPU=() WAL=()
# turns KIND KEY SYSTEMS... -- ARGS: RUNS rounds, the systems in turn, each
# round beginning with the next one; rates into RATES[KEY.SYSTEM]
turns() {
    local kind=$1 key=$2 r i s n rate cpu wal
    shift 2
    local -a systems=()
    while [[ $1 != -- ]]; do systems+=("$1"); shift; done
    shift
    n=${#systems[@]}
    for ((r = 1; r <= RUNS; r++)); do
        for ((i = 0; i < n; i++)); do
            s=${systems[(i + r - 1) % n]}
            read -r rate cpu wal <<<"$("$kind" "$s" "$@" "$r")"
            RATES[$key.$s]+="$rate " CPU[$key.$s]+="$cpu " WAL[$key.$s]+="$wal "
        done
    done
}
med() { printf '%s\n' ${RATES[$1]:-} | median; }
# the median CPU µs and WAL bytes per task of KEY, "cpu / wal"
cw() { echo "$(printf '%s\n' ${CPU[$1]:-} | median) / $(printf '%s\n' ${WAL[$1]:-} | median)"; }
spr() { printf '%s\n' ${RATES[$1]:-} | spread; }

read -ra dsys <<<"$DRAIN_SYSTEMS"
read -ra esys <<<"$ENQ_SYSTEMS"
if want drain; then
    while read -r b w <&3; do
        turns drain "drain.$b.$w" "${dsys[@]}" -- "$w" "$b"
    done 3< <(drain_cases)
fi
if want enqueue; then
    for b in 1 1000; do
        turns enqueue "enq.$b" "${esys[@]}" -- "$b"
    done
fi

{
    echo "## Neutral harness, $(date -u +%Y-%m-%d)"
    echo
    echo "\`RUNS=$RUNS TASKS=$TASKS ONE_TASKS=$ONE_TASKS ENQ_TASKS=$ENQ_TASKS bash bench/neutral.sh\` on $(nproc) cores, PostgreSQL $(psql -X -At -d postgres -c 'SHOW server_version' | cut -d' ' -f1),"
    echo "stock settings; tasks/s, median of $RUNS (the runs' range under it)."
    echo
    if want drain; then
        echo "| drain | hand | floor | taskq | taskq, retention 0 | taskq ÷ hand | taskq ÷ floor | retention 0 ÷ floor |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|"
        while read -r b w <&3; do
            k=drain.$b.$w
            echo "| $b per claim, $w workers | $(med "$k.hand") ($(spr "$k.hand")) | $(med "$k.floor") ($(spr "$k.floor")) | $(med "$k.taskq") ($(spr "$k.taskq")) | $(med "$k.taskq0") ($(spr "$k.taskq0")) | $(ratio "$(med "$k.taskq")" "$(med "$k.hand")") | $(ratio "$(med "$k.taskq")" "$(med "$k.floor")") | $(ratio "$(med "$k.taskq0")" "$(med "$k.floor")") |"
        done 3< <(drain_cases)
        echo
        echo "The cluster's CPU µs and WAL bytes per task (medians), which other load moves less than the rates:"
        echo
        echo "| drain | hand | floor | taskq | taskq, retention 0 |"
        echo "|---|---:|---:|---:|---:|"
        while read -r b w <&3; do
            k=drain.$b.$w
            echo "| $b per claim, $w workers | $(cw "$k.hand") | $(cw "$k.floor") | $(cw "$k.taskq") | $(cw "$k.taskq0") |"
        done 3< <(drain_cases)
        echo
    fi
    if want enqueue; then
        echo "| enqueue, 4 clients | bigserial table | enqueue / enqueue_many | insert_tasks (JSON, random ids) | enqueue ÷ table | JSON ÷ table |"
        echo "|---|---:|---:|---:|---:|---:|"
        for b in 1 1000; do
            k=enq.$b
            echo "| $b per call | $(med "$k.hand") ($(spr "$k.hand")) | $(med "$k.taskq") ($(spr "$k.taskq")) | $(med "$k.json") ($(spr "$k.json")) | $(ratio "$(med "$k.taskq")" "$(med "$k.hand")") | $(ratio "$(med "$k.json")" "$(med "$k.hand")") |"
        done
        echo
        echo "| enqueue, CPU µs / WAL bytes per task | bigserial table | enqueue / enqueue_many | insert_tasks |"
        echo "|---|---:|---:|---:|"
        for b in 1 1000; do
            k=enq.$b
            echo "| $b per call | $(cw "$k.hand") | $(cw "$k.taskq") | $(cw "$k.json") |"
        done
    fi
} | tee "$OUT"
