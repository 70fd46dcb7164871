#!/usr/bin/env bash
# examples/photo-album/run.sh — photo uploads as a state machine: a customer
# confirmation with a timeout, a child saga that provisions storage, and a map
# state that resizes every image, the results in the images' order.
#
# Needs: a database with CREATE EXTENSION taskq, taskq in shared_preload_libraries
# and its background worker running (it fires the timeouts); libpq variables
# PGHOST, PGPORT, PGDATABASE, PGUSER say where; psql, python3, python3-psycopg2
# and python3-psycopg.  Defines the saga provision-storage and the machine
# photo-upload (schema.sql), starts WORKERS workers, a producer (UPLOADS runs;
# it confirms most and lets every EXPIRE_EVERY-th time out; every FAIL_EVERY-th
# gets storage that fails) and a summary line a second; waits until every run
# is finished; then checks the end state (check.py) and prints its verdict.
#
#   UPLOADS=30 WORKERS=4 MAX_PARALLEL=3 FAIL_RATE=0.1 CONFIRM_TIMEOUT="3 seconds" \
#   EXPIRE_EVERY=6 FAIL_EVERY=9 DEADLINE="2 minutes" TIMEOUT=60 bash run.sh
#   SABOTAGE=delete-bucket bash run.sh  # an undo that does nothing: the check must fail
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export PYTHONDONTWRITEBYTECODE=1    # no __pycache__ in the tree

UPLOADS=${UPLOADS:-30}
WORKERS=${WORKERS:-4}
MAX_PARALLEL=${MAX_PARALLEL:-3}     # resizes of one upload at once
FAIL_RATE=${FAIL_RATE:-0.1}         # first and second resize tries that fail for now
CONFIRM_TIMEOUT=${CONFIRM_TIMEOUT:-3 seconds}   # 48 hours in real life
EXPIRE_EVERY=${EXPIRE_EVERY:-6}     # every n-th upload is never confirmed
FAIL_EVERY=${FAIL_EVERY:-9}         # every n-th upload's storage is refused
DEADLINE=${DEADLINE:-2 minutes}     # each run's deadline (start_machine)
TIMEOUT=${TIMEOUT:-60}              # seconds for the runs to finish
SABOTAGE=${SABOTAGE:-}              # an undo that does nothing: the check must fail

EXAMPLE=photo-album
ACTIONS=receive-upload,resize,build-album,expire-upload,abandon-upload,reserve-quota,release-quota,create-bucket,delete-bucket,apply-policy,remove-policy
# ---- requirements: psql, python3 + psycopg2 + psycopg, a connection, the extension ----
# shellcheck source=../lib.sh
source ../lib.sh    # run.sh is in its directory now (cd above)

"${PSQL[@]}" -v confirm_timeout="$CONFIRM_TIMEOUT" -v max_parallel="$MAX_PARALLEL" \
    -f schema.sql >/dev/null

# ---- timers: the server's background worker fires the Confirm timeouts (and
# the deadlines).  Where it is off (taskq.background_worker = off, as make
# test's cluster has it), run.sh stands in for it: taskq._fire_timers(), the
# worker's own firing, every 0.2 s (it needs the extension's owner).
TIMER_PID=""
if [[ $("${PSQL[@]}" -At -c "SELECT current_setting('taskq.background_worker', true)") != on ]]; then
    "${PSQL[@]}" -At -c "SELECT taskq._fire_timers()" >/dev/null 2>&1 ||
        die "the background worker is off and taskq._fire_timers() is not allowed: no timeout would fire"
    echo "$EXAMPLE: the server's background worker is off: run.sh fires the timers with" \
        "taskq._fire_timers() every 0.2 s"
    (while sleep 0.2; do "${PSQL[@]}" -At -c "SELECT taskq._fire_timers()" >/dev/null || true; done) &
    TIMER_PID=$!
fi

# ---- processes ----------------------------------------------------------------
cat <<EOF
photo-album: each upload is a run of the machine photo-upload.  It waits for the customer's
  confirmation ($CONFIRM_TIMEOUT, then the timeout moves it on 'expired'); then a child saga
  provisions its storage (quota, bucket, policy; every $FAIL_EVERY-th is refused and undone);
  then a map state resizes its images, $MAX_PARALLEL at a time, and the album is built from the
  results in the images' order.  $UPLOADS uploads, every $EXPIRE_EVERY-th never confirmed;
  $WORKERS workers, $FAIL_RATE of the first resize tries fail for now (retried).
EOF
start_progress "$ACTIONS" \
    "SELECT 'uploads: ' || string_agg(s || ' ' || n, ', ' ORDER BY s)
       FROM (SELECT CASE WHEN finished_at IS NULL THEN 'in ' || state
                         ELSE status || ' in ' || state END AS s, count(*) AS n
               FROM taskq.runs WHERE definition = 'photo-upload' GROUP BY 1) x"
workers=()
for i in $(seq 1 "$WORKERS"); do
    "$PYTHON" -u worker.py --name "w$i" --fail-rate "$FAIL_RATE" --sabotage "$SABOTAGE" &
    workers+=($!)
done
"$PYTHON" -u producer.py --uploads "$UPLOADS" --expire-every "$EXPIRE_EVERY" \
    --fail-every "$FAIL_EVERY" --deadline "$DEADLINE" &
producer=$!
PIDS=("${workers[@]}" "$producer" ${TIMER_PID:+"$TIMER_PID"})

# ---- wait ---------------------------------------------------------------------
wait "$producer" || die "producer failed (exit $?)"
deadline=$(($(date +%s) + TIMEOUT))
until [[ $("${PSQL[@]}" -At -c "SELECT count(*) FROM taskq.runs
                                 WHERE definition IN ('photo-upload', 'provision-storage')
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
"${PSQL[@]}" -P footer=off -c "
    SELECT ended, storage, count(*) AS uploads, sum(images) AS images, sum(pages) AS pages
      FROM album_demo.summary GROUP BY 1, 2 ORDER BY 1, 2"
"$PYTHON" -u check.py --name "$EXAMPLE" || exit 1
