#!/usr/bin/env bash
# examples/email-subscription/run.sh — an email to every subscriber as a taskq state machine.
#
# Needs: a database with CREATE EXTENSION taskq (libpq variables PGHOST, PGPORT,
# PGDATABASE, PGUSER say where), psql, python3, python3-psycopg2 and python3-psycopg.
# Makes SUBSCRIBERS subscribers and the machine SendSubscriberEmail (schema.sql),
# starts WORKERS workers (worker.py) and one run; the continuation forks one
# instance per subscriber, the fan-in counts them in 3-second batches.  Waits
# until every run ended, prints the runs, the batches and, when the server has
# them, the machine's graph and per-state statistics; then checks that every
# subscriber got exactly one email and the counter equals their number
# (mail_demo.violations), and exits non-zero otherwise.
#
#   SUBSCRIBERS=2000 WORKERS=4 TIMEOUT=120 VERBOSE=0 bash run.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
export PYTHONDONTWRITEBYTECODE=1    # no __pycache__ in the tree

SUBSCRIBERS=${SUBSCRIBERS:-2000}
WORKERS=${WORKERS:-4}
TIMEOUT=${TIMEOUT:-120}             # seconds for the machine to finish

EXAMPLE=email-subscription
# shellcheck source=../lib.sh
source ../lib.sh    # run.sh is in its directory now (cd above)

"${PSQL[@]}" -v subscribers="$SUBSCRIBERS" -f schema.sql >/dev/null

cat <<EOF
email-subscription: the SendSubscriberEmail machine.  SendEmail is a continuation: each
  instance forks the next one (one per subscriber of $SUBSCRIBERS) and sends one email; CountEmail
  fans the instances in every 3 seconds and adds each batch's size to one counter.
  $WORKERS workers run the steps.
EOF
start_progress send-email,count-email \
    "SELECT 'runs: ' || count(*) FILTER (WHERE finished_at IS NULL) || ' running, '
            || count(*) FILTER (WHERE status = 'succeeded') || ' succeeded, '
            || count(*) FILTER (WHERE status = 'merged') || ' merged; counter '
            || (SELECT counter FROM mail_demo.email_batch)
       FROM taskq.runs WHERE definition = 'SendSubscriberEmail'"
workers=()
for i in $(seq 1 "$WORKERS"); do
    "$PYTHON" -u worker.py --name "w$i" &
    workers+=($!)
done
PIDS=("${workers[@]}")
"${PSQL[@]}" -At -c "SELECT 'started run ' || taskq.start_machine('SendSubscriberEmail', 'mail-1')"

# ---- wait ---------------------------------------------------------------------
deadline=$(($(date +%s) + TIMEOUT))
until [[ $("${PSQL[@]}" -At -c "SELECT count(*) FROM taskq.runs
                                 WHERE definition = 'SendSubscriberEmail' AND finished_at IS NULL") == 0 ]]; do
    [[ $(date +%s) -lt $deadline ]] || { echo "$EXAMPLE: runs not finished after ${TIMEOUT}s" >&2; break; }
    for p in "${workers[@]}"; do
        kill -0 "$p" 2>/dev/null || die "a worker died (pid $p)"
    done
    sleep 0.3
done
stop_progress
stop_pids

# ---- report -------------------------------------------------------------------
echo "--- done after $(elapsed)s"
"${PSQL[@]}" -P footer=off -c "
    SELECT status, state, count(*) AS runs FROM taskq.runs
     WHERE definition = 'SendSubscriberEmail' GROUP BY 1, 2 ORDER BY 1, 2"
"${PSQL[@]}" -P footer=off -c "
    SELECT count(*) AS batches, min(size) AS smallest, max(size) AS largest, sum(size) AS counted,
           (SELECT counter FROM mail_demo.email_batch) AS counter,
           (SELECT count(*) FROM mail_demo.outbox) AS emails,
           (SELECT count(DISTINCT worker) FROM mail_demo.outbox) AS sending_workers
      FROM mail_demo.batches"
# The machine's graph with live figures and its per-state statistics, where
# the server has them (taskq.definition_graph, taskq.state_stats).
if [[ $("${PSQL[@]}" -At -c "SELECT to_regprocedure('taskq.definition_graph(text,text,integer)') IS NOT NULL") == t ]]; then
    echo "--- the machine (taskq.definition_graph, Mermaid):"
    "${PSQL[@]}" -At -c "SELECT taskq.definition_graph('SendSubscriberEmail', 'mermaid')"
else
    echo "--- (this server has no taskq.definition_graph: no picture of the machine)"
fi
if [[ $("${PSQL[@]}" -At -c "SELECT to_regclass('taskq.state_stats') IS NOT NULL") == t ]]; then
    "${PSQL[@]}" -P footer=off -c "SELECT * FROM taskq.state_stats WHERE definition = 'SendSubscriberEmail'"
fi

# ---- check --------------------------------------------------------------------
fail_on_violations mail_demo.violations
echo "$EXAMPLE: ok (checked: each of $SUBSCRIBERS subscribers got exactly one email, one run per" \
    "subscriber, every run succeeded or merged, the counter equals the number of subscribers" \
    "and the batches add up to it)"
