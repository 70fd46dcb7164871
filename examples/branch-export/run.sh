#!/usr/bin/env bash
# examples/branch-export/run.sh — the branch-export story with real concurrent workers.
#
# Needs: a database with CREATE EXTENSION taskq (libpq variables PGHOST, PGPORT,
# PGDATABASE, PGUSER say where), psql, python3, python3-psycopg2 and python3-psycopg.
# Starts 2 producers (commits on 3 branches), 4 workers and a summary line a
# second (progress.py; with VERBOSE=1 also the full monitor, tables every
# second, and every worker's log line); waits until every branch exported its
# last commit; then checks the end state (export_demo.violations) and exits
# non-zero on any violation.
#
#   WORKERS=4 COMMITS=7 FAIL_RATE=0.15 STALL_RATE=0.005 TIMEOUT=90 VERBOSE=0 bash run.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export PYTHONDONTWRITEBYTECODE=1    # no __pycache__ in the tree

WORKERS=${WORKERS:-4}
COMMITS=${COMMITS:-7}            # per producer; there are 2 producers
FAIL_RATE=${FAIL_RATE:-0.15}
STALL_RATE=${STALL_RATE:-0.005}
TIMEOUT=${TIMEOUT:-90}           # seconds for the exports to finish

EXAMPLE=branch-export
ACTIONS=next-export,start-export,done-export,export-copy,export-delete,export-success,export-manifest
# ---- requirements: psql, python3 + psycopg2 + psycopg, a connection, the extension ----
# shellcheck source=../lib.sh
source ../lib.sh    # run.sh is in its directory now (cd above)

"${PSQL[@]}" -f schema.sql

# ---- processes ----------------------------------------------------------------
monitor_pid=""
end_monitor() {    # on exit: the monitor too, and its stop file
    [[ -z $monitor_pid ]] || kill -TERM "$monitor_pid" 2>/dev/null || true
    [[ -z ${stop_monitor:-} ]] || rm -f "$stop_monitor"
}
EXIT_HOOK=end_monitor

stop_monitor=$(mktemp "${TMPDIR:-/tmp}/branch-export.XXXXXX")
rm -f "$stop_monitor"
monitor() {        # VERBOSE=1: the full tables every second
    while sleep 1; do
        [[ -e $stop_monitor ]] && break
        [[ $("${PSQL[@]}" -At -c 'SELECT count(*) FROM export_demo.commits') != 0 ]] || continue
        echo "--- $(elapsed)s"
        "${PSQL[@]}" -P footer=off -c "
            SELECT action, ready, blocked, delayed, in_progress, lease_expired, completed, aborted,
                   round(extract(epoch FROM oldest_ready_age)::numeric, 1) AS oldest_ready_s
              FROM taskq.action_stats
             WHERE action IN ('next-export', 'start-export', 'done-export', 'export-copy',
                              'export-delete', 'export-success', 'export-manifest')
             ORDER BY action" \
            -c "SELECT * FROM export_demo.branches" || true
    done
}

cat <<EOF
branch-export: 2 producers commit on 3 branches ($COMMITS commits each); every commit queues
  an export of its branch that waits for the export running there (a dependency); commits
  made meanwhile are coalesced, only the newest is exported.  Watch $WORKERS workers retry
  failed copies and keep a long copy's lease with heartbeats; when one stalls (rarely), its
  lease runs out and another worker takes the task over.
EOF
start_progress "$ACTIONS" \
    "SELECT format('commits %s, exports done %s', (SELECT count(*) FROM export_demo.commits),
                   (SELECT count(*) FROM export_demo.manifests))"
workers=()
for i in $(seq 1 "$WORKERS"); do
    "$PYTHON" -u worker.py --name "w$i" --fail-rate "$FAIL_RATE" --stall-rate "$STALL_RATE" &
    workers+=($!)
done
producers=()
for i in 1 2; do
    "$PYTHON" -u producer.py --name "p$i" --commits "$COMMITS" &
    producers+=($!)
done
PIDS=("${workers[@]}" "${producers[@]}")
if verbose; then
    monitor &
    monitor_pid=$!
fi

# ---- wait ---------------------------------------------------------------------
for p in "${producers[@]}"; do
    wait "$p" || die "producer failed (exit $?)"
done
deadline=$(($(date +%s) + TIMEOUT))
until [[ $("${PSQL[@]}" -At -c "SELECT unfinished_tasks + branches_behind FROM export_demo.work_left") == 0 ]]; do
    [[ $(date +%s) -lt $deadline ]] || { echo "branch-export: exports not done after ${TIMEOUT}s" >&2; break; }
    for p in "${workers[@]}"; do
        kill -0 "$p" 2>/dev/null || die "a worker died (pid $p)"
    done
    sleep 0.2
done
touch "$stop_monitor"
[[ -z $monitor_pid ]] || wait "$monitor_pid" 2>/dev/null || true
rm -f "$stop_monitor"
monitor_pid=""
stop_progress
stop_pids

# ---- check --------------------------------------------------------------------
echo "--- done after $(elapsed)s"
if verbose; then
    "${PSQL[@]}" -P footer=off -c "SELECT * FROM taskq.action_stats
         WHERE action IN ('next-export', 'start-export', 'done-export', 'export-copy',
                          'export-delete', 'export-success', 'export-manifest') ORDER BY action"
fi
"${PSQL[@]}" -P footer=off -c "SELECT * FROM export_demo.summary"
fail_on_violations export_demo.violations
# The task graph of the smallest export (its tasks carry the workflow key export@<commit>):
# copies and deletes signal the _SUCCESS of their prefix, each _SUCCESS its parent's.
flow=$("${PSQL[@]}" -At -c "SELECT workflow FROM taskq.tasks WHERE workflow LIKE 'export@%'
                              GROUP BY workflow ORDER BY count(*), workflow LIMIT 1")
if [[ -n $flow ]]; then
    echo "--- taskq.task_graph('$flow', 'mermaid'):"
    "${PSQL[@]}" -At -c "SELECT taskq.task_graph('$flow', 'mermaid')" | grep -v classDef
    if command -v dot >/dev/null; then
        "${PSQL[@]}" -At -c "SELECT taskq.task_graph('$flow')" | dot -Tsvg >/dev/null ||
            die "dot -Tsvg cannot render the task graph of $flow"
        echo "(its DOT form renders with dot -Tsvg)"
    fi
fi
echo "branch-export: ok (checked: last commits exported, each object copied once per export," \
    "_SUCCESS after its objects, one export at a time per branch, no task left)"
