#!/usr/bin/env bash
# examples/workspace-saga/run.sh — provisioning workspaces as a saga, with
# random failures, undo, and a cancellation mid-way.
#
# Needs: a database with CREATE EXTENSION taskq (libpq variables PGHOST, PGPORT,
# PGDATABASE, PGUSER say where), psql, python3, python3-psycopg2 and python3-psycopg.
# Defines the saga workspace (reserve-name; create-dir and create-db in
# parallel; register), starts WORKERS workers that fail some of their tries
# (transient: retried; fatal: the saga undoes), a producer (16 workspaces, one
# name asked for twice; then cancel_run of one mid-way) and a summary line a
# second; waits until every run is finished; then checks the end state
# (check.py: every failed or cancelled workspace left nothing behind, every
# succeeded one is whole) and prints run_graph of one failed run.
#
#   WORKERS=4 FAIL_RATE=0.2 FATAL_RATE=0.06 UNDO_FAIL_RATE=0.2 CANCEL=6 TIMEOUT=60 bash run.sh
#   SABOTAGE=remove-dir bash run.sh     # an undo that does nothing: the check must fail
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export PYTHONDONTWRITEBYTECODE=1    # no __pycache__ in the tree

WORKERS=${WORKERS:-4}
FAIL_RATE=${FAIL_RATE:-0.2}
FATAL_RATE=${FATAL_RATE:-0.06}
UNDO_FAIL_RATE=${UNDO_FAIL_RATE:-0.2}
CANCEL=${CANCEL:-6}
SABOTAGE=${SABOTAGE:-}
TIMEOUT=${TIMEOUT:-60}           # seconds for the runs to finish

EXAMPLE=workspace-saga
ACTIONS=reserve-name,release-name,create-dir,remove-dir,create-db,drop-db,register,unregister
# ---- requirements: psql, python3 + psycopg2 + psycopg, a connection, the extension ----
# shellcheck source=../lib.sh
source ../lib.sh    # run.sh is in its directory now (cd above)

WS_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/workspace-saga.XXXXXX") || die "mktemp failed"
remove_root() { rm -rf "$WS_ROOT"; }
EXIT_HOOK=remove_root

"${PSQL[@]}" -f schema.sql >/dev/null

# ---- processes ----------------------------------------------------------------
cat <<EOF
workspace-saga: each workspace is a saga: reserve a name; then a directory and a database (a
  schema) in parallel; then register it in a catalogue.  Every step has an undo.  $WORKERS workers
  fail $FAIL_RATE of their tries for now (retried, 3 tries per step) and $FATAL_RATE for good
  (the saga undoes every step it started, in reverse order); ws-$CANCEL (or the next one still
  running) is cancelled mid-way with cancel_run.  Directories go under $WS_ROOT.
EOF
start_progress "$ACTIONS" \
    "SELECT 'runs: ' || string_agg(status || ' ' || n, ', ' ORDER BY status)
       FROM (SELECT status, count(*) AS n FROM taskq.runs WHERE definition = 'workspace'
              GROUP BY 1) s"
workers=()
for i in $(seq 1 "$WORKERS"); do
    "$PYTHON" -u worker.py --name "w$i" --root "$WS_ROOT" --fail-rate "$FAIL_RATE" \
        --fatal-rate "$FATAL_RATE" --undo-fail-rate "$UNDO_FAIL_RATE" --sabotage "$SABOTAGE" &
    workers+=($!)
done
"$PYTHON" -u producer.py --cancel "$CANCEL" &
producer=$!
PIDS=("${workers[@]}" "$producer")

# ---- wait ---------------------------------------------------------------------
wait "$producer" || die "producer failed (exit $?)"
deadline=$(($(date +%s) + TIMEOUT))
until [[ $("${PSQL[@]}" -At -c "SELECT count(*) FROM taskq.runs WHERE definition = 'workspace'
                                   AND finished_at IS NULL") == 0 ]]; do
    [[ $(date +%s) -lt $deadline ]] || { echo "$EXAMPLE: runs not finished after ${TIMEOUT}s" >&2; break; }
    for p in "${workers[@]}"; do
        kill -0 "$p" 2>/dev/null || die "a worker died (pid $p)"
    done
    sleep 0.2
done
stop_progress
stop_pids

# ---- check --------------------------------------------------------------------
echo "--- done after $(elapsed)s"
"${PSQL[@]}" -P footer=off -c "SELECT * FROM ws_demo.summary"
"$PYTHON" -u check.py --root "$WS_ROOT" || exit 1
echo "$EXAMPLE: ok (checked: every failed or cancelled workspace left nothing behind, every" \
    "succeeded one is whole, every started step of a failed run undone exactly once)"
