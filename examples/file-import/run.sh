#!/usr/bin/env bash
# examples/file-import/run.sh — a file import with progress, with real concurrent workers.
#
# Needs: a database with CREATE EXTENSION taskq (libpq variables PGHOST, PGPORT,
# PGDATABASE, PGUSER say where), psql, python3, python3-psycopg2 and python3-psycopg.
# Starts 4 workers, a producer (3 import jobs of 200-600 rows) and a monitor
# that prints a summary line a second with each job's progress from
# taskq.job_states (VERBOSE=1: a progress bar per job, and every worker's log
# line); waits until every job is completed; then checks the end state
# (import_demo.violations) and exits non-zero on any violation.
#
#   WORKERS=4 JOBS=3 WORK_MS=20 TIMEOUT=60 VERBOSE=0 bash run.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export PYTHONDONTWRITEBYTECODE=1    # no __pycache__ in the tree

WORKERS=${WORKERS:-4}
JOBS=${JOBS:-3}
WORK_MS=${WORK_MS:-20}           # mean milliseconds of work per row
TIMEOUT=${TIMEOUT:-60}           # seconds for the jobs to finish

EXAMPLE=file-import
# ---- requirements: psql, python3 + psycopg2 + psycopg, a connection, the extension ----
# shellcheck source=../lib.sh
source ../lib.sh    # run.sh is in its directory now (cd above)

"${PSQL[@]}" -f schema.sql

# ---- processes ----------------------------------------------------------------

cat <<EOF
file-import: $JOBS uploaded files, one import job each: create-job queues one process-item
  task per row, plus a join task (taskq.chord) that runs only after all of them.  $WORKERS workers
  report progress as they go: watch each job's rows done/total climb in taskq.job_states,
  and its join run last, once per job.
EOF
workers=()
for i in $(seq 1 "$WORKERS"); do
    "$PYTHON" -u worker.py --name "w$i" --work-ms "$WORK_MS" &
    workers+=($!)
done
"$PYTHON" -u producer.py --jobs "$JOBS" &
producer=$!
PIDS=("${workers[@]}" "$producer")

# The monitor runs in the foreground: it returns once every job is completed.
rc=0
bars=()
if verbose; then bars=(--bars); fi
"$PYTHON" -u monitor.py --jobs "$JOBS" --timeout "$TIMEOUT" --t0 "$T0" "${bars[@]}" || rc=$?
wait "$producer" || die "producer failed (exit $?)"
for p in "${workers[@]}"; do
    kill -0 "$p" 2>/dev/null || die "a worker died (pid $p)"
done
[[ $rc == 0 ]] || echo "file-import: jobs not completed after ${TIMEOUT}s" >&2
# The job-completed join commits in the same transaction as the job's last
# task: once job_states says completed, the job is marked done too.
deadline=$(($(date +%s) + 10))
until [[ $("${PSQL[@]}" -At -c "SELECT jobs_left FROM import_demo.work_left") == 0 ]]; do
    [[ $(date +%s) -lt $deadline ]] || break
    sleep 0.2
done
stop_pids

# ---- check --------------------------------------------------------------------
echo "--- done after $(elapsed)s"
"${PSQL[@]}" -P footer=off -c "SELECT * FROM import_demo.summary"
fail_on_violations import_demo.violations
echo "file-import: ok (checked: each job completed with progress = count = its rows," \
    "each row imported once, each join ran once, after the job's last row)"
