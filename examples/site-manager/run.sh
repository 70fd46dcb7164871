#!/usr/bin/env bash
# examples/site-manager/run.sh — a status-driven workflow with real concurrent workers.
#
# Needs: a database with CREATE EXTENSION taskq (libpq variables PGHOST, PGPORT,
# PGDATABASE, PGUSER say where), psql, python3, python3-psycopg2 and python3-psycopg.
# Starts 4 workers that fail 30 % of their tries (retried with exponential
# backoff by the action policy), a producer (the API: 7 site requests, 2 refused
# at once, 1 a retry; then it deletes site-3 mid-way) and a summary line a
# second (progress.py; with VERBOSE=1 also monitor.py, a status line per site
# as it changes, and every worker's log line); waits until no task is left;
# then checks the end state (site_demo.violations) and exits non-zero on any
# violation.
#
#   WORKERS=4 FAIL_RATE=0.3 DELETE=site-3 TIMEOUT=60 VERBOSE=0 bash run.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export PYTHONDONTWRITEBYTECODE=1    # no __pycache__ in the tree

WORKERS=${WORKERS:-4}
FAIL_RATE=${FAIL_RATE:-0.3}
DELETE=${DELETE:-site-3}
TIMEOUT=${TIMEOUT:-60}           # seconds for the workflows to finish

EXAMPLE=site-manager
ACTIONS=save-metadata,create-fs,create-db,bootstrap,mark-running
# ---- requirements: psql, python3 + psycopg2 + psycopg, a connection, the extension ----
# shellcheck source=../lib.sh
source ../lib.sh    # run.sh is in its directory now (cd above)

"${PSQL[@]}" -f schema.sql >/dev/null

# ---- processes ----------------------------------------------------------------

cat <<EOF
site-manager: an API creates sites; each is a workflow of 4 steps and a join (mark-running)
  that runs after them.  Bad requests are refused before anything is queued, a retried one
  queues nothing twice.  $WORKERS workers fail $FAIL_RATE of their tries: watch taskq retry them
  with backoff, and $DELETE get deleted mid-way (cancel_workflow): none of its steps runs after.
EOF
start_progress "$ACTIONS" \
    "SELECT 'sites: ' || string_agg(site_id || ' ' || state, ', ' ORDER BY site_id) FROM site_demo.sites"
workers=()
for i in $(seq 1 "$WORKERS"); do
    "$PYTHON" -u worker.py --name "w$i" --fail-rate "$FAIL_RATE" &
    workers+=($!)
done
monitor=()
if verbose; then
    "$PYTHON" -u monitor.py &
    monitor=($!)
fi
"$PYTHON" -u producer.py --delete "$DELETE" &
producer=$!
PIDS=("${workers[@]}" "${monitor[@]}" "$producer")

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
stop_progress
stop_pids

# ---- check --------------------------------------------------------------------
echo "--- done after $(elapsed)s"
"${PSQL[@]}" -P footer=off -c "SELECT * FROM site_demo.summary"
if verbose; then
    "${PSQL[@]}" -P footer=off \
        -c "SELECT site_id, tasks AS cancelled, cancel_at::time(3), committed_seen::time(3),
                   (SELECT max(at) FROM site_demo.executions e WHERE e.site_id = c.site_id)::time(3)
                       AS last_execution
              FROM site_demo.cancellations c"
fi
"${PSQL[@]}" -P footer=off \
    -c "SELECT id, status_code, status FROM taskq.tasks WHERE workflow = '$DELETE' ORDER BY seq"
fail_on_violations site_demo.violations
echo "site-manager: ok (checked: other sites running, each step done once, in order;" \
    "nothing of $DELETE ran after its deletion, its unfinished tasks aborted)"
