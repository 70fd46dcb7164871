#!/usr/bin/env bash
# bench/run.sh — `make bench`: taskq against the hand-written SKIP LOCKED
# queue (baseline) and the least work a durable pop can do (floor), measured
# in the same run on a throwaway cluster with durable settings (fsync on,
# synchronous_commit on).  Each figure is the median of RUNS runs; the table
# gives ratios against the baselines of the same run.
#
#   RUNS=3 TASKS=20000 LATENCY_SECONDS=20 bash bench/run.sh
#
# Workloads (issue 4): enqueue (1 per transaction from 4 clients; batches of
# 1,000), drain (1/4/16 workers, 1 and 50 tasks per claim), latency (a
# producer at 300 tasks/s, 4 idle workers on LISTEN).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../test/bin/lib.sh
source "$here/../test/bin/lib.sh"

RUNS=${RUNS:-3}
WORKLOADS=${WORKLOADS:-enqueue drain latency}   # a subset, for quick looks
TASKS=${TASKS:-20000}
LATENCY_SECONDS=${LATENCY_SECONDS:-20}
OUT=${OUT:-$here/results.md}

trap 'tq_cleanup' EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

bash "$here/../test/bin/deps.sh"
tq_ensure_user
tq_make_work
tq_build_install
tq_cluster_start bench
gcc -O2 -Wall -o "$TQ_WORK/driver" "$here/driver.c" \
    -I"$(/usr/lib/postgresql/15/bin/pg_config --includedir)" -lpq -lpthread -lm

export PGHOST=127.0.0.1 PGPORT=$TQ_PORT PGUSER=$TQ_DBUSER PGDATABASE=bench
tq_psql postgres -q -c "CREATE DATABASE bench"
tq_psql bench -q -c "CREATE EXTENSION taskq"
tq_psql bench -q -f "$here/schema.sql"

sql() { local a=(); for c in "$@"; do a+=(-c "$c"); done; psql -X -q -At -v ON_ERROR_STOP=1 "${a[@]}"; }

reset_tables() {
    sql "TRUNCATE taskq.tasks, bench.baseline, bench.floor"
    sql "VACUUM ANALYZE taskq.tasks" "VACUUM ANALYZE bench.baseline" "VACUUM ANALYZE bench.floor"
}

# prefill SYSTEM N: N pending tasks with ~100-byte bodies (not timed)
prefill() {
    local body='{"payload": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123"}'
    case $1 in
    taskq) sql "SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'p' || g, 'action', 'work', 'body', '$body'::jsonb)) FROM generate_series(1, $2) g))" >/dev/null ;;
    baseline) sql "INSERT INTO bench.baseline (body) SELECT '$body'::jsonb FROM generate_series(1, $2)" ;;
    floor) sql "INSERT INTO bench.floor (body) SELECT '$body'::jsonb FROM generate_series(1, $2)" ;;
    esac
    sql "VACUUM ANALYZE taskq.tasks" "VACUUM ANALYZE bench.baseline" "VACUUM ANALYZE bench.floor" "CHECKPOINT"
}

field() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

# measure LABEL SYSTEM ARGS...: median rate of RUNS runs
measure() {
    local label=$1 system=$2; shift 2
    local rates=()
    for ((r = 1; r <= RUNS; r++)); do
        reset_tables
        case $1 in
        drain) prefill "$system" "$TASKS" ;;
        esac
        local line
        line=$("$TQ_WORK/driver" "$system" "$@" --tasks "$TASKS" --prefix "r$r")
        echo "  $label run $r: $line" >&2
        rates+=("$(field rate <<<"$line")")
    done
    printf '%s\n' "${rates[@]}" | median
}

declare -A R
row() {   # row KEY LABEL ARGS... : measure taskq, baseline, floor
    local key=$1; shift
    for s in taskq baseline floor; do
        R[$key.$s]=$(measure "$key $s" "$s" "$@")
    done
}

echo "bench: $RUNS runs of $TASKS tasks per figure, durable commits, $(nproc) cores" >&2
want() { [[ " $WORKLOADS " == *" $1 "* ]]; }
if want enqueue; then
    row enq1 enqueue --clients 4 --batch 1
    row enq1000 enqueue --clients 4 --batch 1000
fi
if want drain; then
    for w in 1 4 16; do
        for k in 1 50; do
            row "drain.$w.$k" drain --clients "$w" --per-claim "$k"
        done
    done
fi

lat=()
want latency || RUNS_LAT=0
for ((r = 1; r <= ${RUNS_LAT:-$RUNS}; r++)); do
    reset_tables
    line=$("$TQ_WORK/driver" taskq latency --clients 4 --rate 300 --seconds "$LATENCY_SECONDS" --action lat --prefix "l$r")
    echo "  latency run $r: $line" >&2
    lat+=("$line")
done
p() { for l in "${lat[@]}"; do field "$1" <<<"$l"; done | median; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
{
    echo "| workload | taskq tasks/s | baseline | floor | taskq ÷ baseline | taskq ÷ floor |"
    echo "|---|---:|---:|---:|---:|---:|"
    line() { [[ -n ${R[$2.taskq]:-} ]] || return 0; echo "| $1 | ${R[$2.taskq]} | ${R[$2.baseline]} | ${R[$2.floor]} | $(ratio "${R[$2.taskq]}" "${R[$2.baseline]}") | $(ratio "${R[$2.taskq]}" "${R[$2.floor]}") |"; }
    line "enqueue, 1 per transaction, 4 clients" enq1
    line "enqueue, batches of 1,000, 4 clients" enq1000
    for w in 1 4 16; do
        for k in 1 50; do
            line "drain, $w worker(s), $k per claim" "drain.$w.$k"
        done
    done
    echo
    [[ ${#lat[@]} -eq 0 ]] || echo "Latency, producer at 300 tasks/s for ${LATENCY_SECONDS} s, 4 workers on LISTEN: p50 $(p p50_ms) ms, p95 $(p p95_ms) ms, p99 $(p p99_ms) ms."
    echo
    echo "Median of $RUNS runs of $TASKS tasks; PostgreSQL $(sql 'SHOW server_version'), fsync on, synchronous_commit on, $(nproc) cores, $(date -u +%Y-%m-%d)."
} | tee "$OUT"
