#!/usr/bin/env bash
# examples/site-manager/run.sh — the status-driven seed with real concurrent workers.
#
# Needs: a database with CREATE EXTENSION taskq (libpq variables PGHOST, PGPORT,
# PGDATABASE, PGUSER say where), psql, python3 and python3-psycopg2.
# Starts 4 workers that fail 30 % of their tries (retried with exponential
# backoff by the action policy), a producer (the API: 7 site requests, 2 refused
# at once, 1 a retry; then it deletes site-3 mid-way) and a monitor (a status
# line per site as it changes); waits until no task is left; then checks the end
# state (site_demo.violations) and exits non-zero on any violation.
#
#   WORKERS=4 FAIL_RATE=0.3 DELETE=site-3 TIMEOUT=60 bash run.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export PYTHONDONTWRITEBYTECODE=1    # no __pycache__ in the tree

WORKERS=${WORKERS:-4}
FAIL_RATE=${FAIL_RATE:-0.3}
DELETE=${DELETE:-site-3}
TIMEOUT=${TIMEOUT:-60}           # seconds for the workflows to finish

EXAMPLE=site-manager
# ---- requirements: psql, python3 + psycopg2, a connection, the extension ----
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

"${PSQL[@]}" -f schema.sql >/dev/null

# ---- processes ----------------------------------------------------------------

echo "site-manager: $WORKERS workers failing ${FAIL_RATE} of their tries; $DELETE is deleted mid-way"
workers=()
for i in $(seq 1 "$WORKERS"); do
    "$PYTHON" -u worker.py --name "w$i" --fail-rate "$FAIL_RATE" &
    workers+=($!)
done
"$PYTHON" -u monitor.py &
monitor=$!
"$PYTHON" -u producer.py --delete "$DELETE" &
producer=$!
PIDS=("${workers[@]}" "$monitor" "$producer")

# ---- wait ---------------------------------------------------------------------
wait "$producer" || die "producer failed (exit $?)"
deadline=$(($(date +%s) + TIMEOUT))
until [[ $("${PSQL[@]}" -At -c "SELECT unfinished_tasks FROM site_demo.work_left") == 0 ]]; do
    [[ $(date +%s) -lt $deadline ]] || { echo "site-manager: tasks not done after ${TIMEOUT}s" >&2; break; }
    for p in "${workers[@]}"; do
        kill -0 "$p" 2>/dev/null || die "a worker died (pid $p)"
    done
    sleep 0.2
done
sleep 0.5                        # the monitor's last lines
stop_pids

# ---- check --------------------------------------------------------------------
echo "--- done after $(elapsed)s"
"${PSQL[@]}" -P footer=off -c "SELECT * FROM site_demo.summary" \
    -c "SELECT site_id, tasks AS cancelled, cancel_at::time(3), committed_seen::time(3),
               (SELECT max(at) FROM site_demo.executions e WHERE e.site_id = c.site_id)::time(3)
                   AS last_execution
          FROM site_demo.cancellations c" \
    -c "SELECT id, status_code, status FROM taskq.tasks WHERE workflow = '$DELETE' ORDER BY seq"
fail_on_violations site_demo.violations
echo "site-manager: ok: the sites not deleted are running, every step done once, in order;"
echo "  nothing of $DELETE ran after its deletion committed, its unfinished tasks ended aborted"
