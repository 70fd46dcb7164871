#!/usr/bin/env bash
# bench/console.sh — taskq-console on a large database: how long each page
# takes, and what an operator's open console costs a drain.  Run by hand
# (not part of make test or make bench); about ten minutes on 2 cores.
#
#   bash bench/console.sh
#   TASKS=100000 RUNS=1000 REQUESTS=5 DRAIN_TASKS=20000 bash bench/console.sh   # a quick look
#
# On a throwaway cluster with bench/run.sh's settings (test/bin/lib.sh,
# tq_cluster_start bench: durable commits, 1 GB of shared buffers in huge
# pages when the kernel grants them):
#   1. the data, through taskq's SQL functions in batches (the load is timed
#      and printed, not part of the figures): TASKS (1,000,000) tasks over 8
#      actions, one in ten in a workflow (a thousand workflows), one in five
#      with a concurrency key (500 keys); then claimed and returned by
#      batches of 5,000 so that 90 % are completed, 2 % aborted, 1 % in
#      progress (a lease of a day) and the rest pending; RUNS (10,000) runs,
#      seven in ten of a state machine (succeeded, waiting for an event,
#      running, failed, cancelled) and the rest of a saga (succeeded, undone
#      after a fatal step, running, cancelled); then VACUUM ANALYZE;
#   2. taskq-console connected as a login role in taskq_admin (as an admin
#      sees every page, reading body and result too); each page URL
#      (PAGES below) fetched REQUESTS (20) times in a row with curl, after
#      one untimed fetch: the median and p95 of curl's time_total, ms, and
#      the page's size; a page must answer 200;
#   3. DRAIN_TASKS (60,000) tasks of their own action drained by 16 workers,
#      1 per claim (bench/driver.c, the drain of bench/run.sh), alone and
#      while a poller fetches the overview, tasks and runs pages each second
#      (three browser tabs, each reloaded every second over a kept-alive
#      connection, by one Python process), DRAIN_RUNS (5) of
#      each, the two taking turns; the median rates and the slowdown, %.
# The results go to standard output as markdown tables (OUT=file: there
# too).  KEEP=1 leaves the cluster and the console running, and says how to
# stop them; AGAIN=/tmp/taskq-run.XXXXXX (the temp dir a KEEP=1 run named)
# then measures steps 2 and 3 again on its data, with the tree's current
# tools/taskq-console (a changed page measured without loading the data
# again), and leaves it running too.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../test/bin/lib.sh
source "$here/../test/bin/lib.sh"
# shellcheck source=lib.sh
source "$here/lib.sh"

TASKS=${TASKS:-1000000}
RUNS=${RUNS:-10000}
REQUESTS=${REQUESTS:-20}
DRAIN_TASKS=${DRAIN_TASKS:-60000}
DRAIN_RUNS=${DRAIN_RUNS:-5}
OUT=${OUT:-}

AGAIN=${AGAIN:-}
[[ ${KEEP:-0} == 1 || -n $AGAIN ]] && TQ_KEEP=1
CONSOLE_PID=""
POLLERS=()
stop_all() {
    local p
    for p in "${POLLERS[@]}"; do kill "$p" 2>/dev/null || true; done
    if [[ $TQ_KEEP != 1 && -n $CONSOLE_PID ]]; then kill "$CONSOLE_PID" 2>/dev/null || true; fi
    tq_cleanup
}
trap 'stop_all' EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

if [[ -z $AGAIN ]]; then
    bash "$here/../test/bin/deps.sh"
    tq_ensure_user
    tq_make_work
    tq_build_install
    tq_cluster_start bench
else
    # the kept run's cluster, with the tree's console in place of its copy
    [[ $AGAIN =~ ^/tmp/taskq-run\.[A-Za-z0-9]+$ && -f $AGAIN/bench-console.env ]] ||
        { echo "console bench: AGAIN=$AGAIN is not the temp dir of a KEEP=1 run" >&2; exit 2; }
    TQ_WORK=$AGAIN TQ_PGDATA=$AGAIN/data TQ_SOCK=$AGAIN TQ_PGLOG=$AGAIN/log/postgres.log
    # shellcheck disable=SC1091  # written by the KEEP=1 run below
    source "$AGAIN/bench-console.env"
    pid=$(cat "$TQ_WORK/console.pid" 2>/dev/null || true)
    if [[ $pid =~ ^[0-9]+$ ]] && grep -qa taskq-console "/proc/$pid/cmdline" 2>/dev/null; then
        kill "$pid"
        while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
    fi
    rm -rf "$TQ_WORK/src/tools/taskq-console"
    cp -r "$here/../tools/taskq-console" "$TQ_WORK/src/tools/"
    find "$TQ_WORK/src/tools/taskq-console" -name __pycache__ -prune -exec rm -rf {} +
    if tq_is_root; then chown -R "$TQ_USER:" "$TQ_WORK/src/tools/taskq-console"; fi
fi
gcc -O2 -Wall -o "$TQ_WORK/driver" "$here/driver.c" "$here/common.c" \
    -I"$("$TQ_PG_CONFIG" --includedir)" -lpq -lpthread -lm
export PGHOST=127.0.0.1 PGPORT=$TQ_PORT PGUSER=$TQ_DBUSER PGDATABASE=bench

# p95 by nearest rank: the 19th of 20
p95() { sort -g | awk '{a[NR]=$1} END {i = int(NR * 0.95 + 0.999); if (i < 1) i = 1; print a[i]}'; }
say() { echo "console bench: $*" >&2; }
out() { echo "$*"; [[ -z $OUT ]] || echo "$*" >>"$OUT"; }
[[ -z $OUT ]] || : >"$OUT"

# ------------------------------------------------------------ the data
if [[ -z $AGAIN ]]; then   # (the load, up to the else below; AGAIN reuses a kept run's)
tq_psql postgres -q -c "CREATE DATABASE bench"
tq_psql bench -q -c "CREATE EXTENSION taskq"
t0=$(tq_now)
say "loading $TASKS tasks"
# ids t1..tN, 8 actions, a workflow for one in ten, a key for one in five
batch=20000
for ((lo = 1; lo <= TASKS; lo += batch)); do
    hi=$((lo + batch - 1 < TASKS ? lo + batch - 1 : TASKS))
    sql "SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
            'id', 't' || g,
            'action', (ARRAY['email', 'resize', 'export', 'import', 'notify', 'billing', 'report', 'sync'])[g % 8 + 1],
            'body', jsonb_build_object('n', g, 'payload', 'abcdefghijklmnopqrstuvwxyz0123456789'),
            'workflow', CASE WHEN g % 10 = 0 THEN 'wf' || (g / 1000) END,
            'concurrency_key', CASE WHEN g % 5 = 1 THEN 'k' || (g % 500) END)))
           FROM generate_series($lo, $hi) g))" >/dev/null
done
say "  inserted in $(($(tq_now) - t0)) s"
# claim_return N CODE [LEASE]: claim N tasks of the 8 actions by batches of
# 5,000 and return them with status code CODE (completed or aborted); with
# CODE "hold", claim them for LEASE and do not return them.
claim_return() {
    sql "DO \$\$
DECLARE ids text[]; toks uuid[]; n int; todo int := $1;
BEGIN
    WHILE todo > 0 LOOP
        SELECT array_agg(id), array_agg(token) INTO ids, toks
          FROM taskq.own_tasks('loader', least(todo, 5000),
                               ARRAY['email', 'resize', 'export', 'import', 'notify', 'billing', 'report', 'sync'],
                               interval '${3:-5 minutes}');
        n := coalesce(array_length(ids, 1), 0);
        EXIT WHEN n = 0;
        IF '$2' <> 'hold' THEN
            PERFORM taskq.return_tasks(ids, toks, array_fill(CASE '$2' WHEN 'completed' THEN 'done' ELSE 'gave up' END, ARRAY[n]),
                                       array_fill('$2'::taskq.status, ARRAY[n]));
        END IF;
        todo := todo - n;
        COMMIT;
    END LOOP;
END \$\$"
}
claim_return $((TASKS * 90 / 100)) completed
claim_return $((TASKS * 2 / 100)) aborted
claim_return $((TASKS / 100)) hold '1 day'
say "  tasks in their states after $(($(tq_now) - t0)) s"

t1=$(tq_now)
machines=$((RUNS * 7 / 10))
sagas=$((RUNS - machines))
say "starting $machines machine runs and $sagas saga runs"
sql "SELECT taskq.define_machine('bench_order', '{\"states\": [
        {\"name\": \"Check\", \"action\": \"check-order\", \"initial\": true,
         \"transitions\": [{\"event\": \"ok\", \"to\": \"Ship\"}, {\"event\": \"hold\", \"to\": \"Approve\"}]},
        {\"name\": \"Approve\", \"action\": null, \"transitions\": [{\"event\": \"approved\", \"to\": \"Ship\"}]},
        {\"name\": \"Ship\", \"action\": \"ship-order\", \"final\": true, \"max_tries\": 1}]}')" \
    "SELECT taskq.define_saga('bench_signup', '{\"steps\": [
        {\"name\": \"account\", \"do\": \"create-account\", \"undo\": \"delete-account\"},
        {\"name\": \"mailbox\", \"do\": \"create-mailbox\", \"undo\": null}]}')" >/dev/null
# start N FUNCTION DEFINITION PREFIX: N runs, 1,000 per transaction
start() {
    sql "DO \$\$ BEGIN FOR b IN 0 .. ($1 - 1) / 1000 LOOP
           PERFORM taskq.$2('$3', '$4' || g, jsonb_build_object('n', g))
              FROM generate_series(b * 1000 + 1, least((b + 1) * 1000, $1)) AS g;
           IF b IN (1, 4) THEN ANALYZE taskq.runs; ANALYZE taskq.tasks; END IF;
           COMMIT; END LOOP; END \$\$"
}
start "$machines" start_machine bench_order order-
t2=$(tq_now)
start "$sagas" start_saga bench_signup signup-
t3=$(tq_now)
say "  started: machines in $((t2 - t1)) s ($((machines / (t2 - t1 > 0 ? t2 - t1 : 1))) runs/s), sagas in $((t3 - t2)) s"
# steps ACTION N 'PL/pgSQL statement on r.id, r.token and i': N steps of
# ACTION claimed and ended by the statement, 1,000 per transaction
steps() {
    sql "DO \$\$
DECLARE r record; i int := 0; n int; todo int := $2;
BEGIN
    WHILE todo > 0 LOOP
        n := 0;
        FOR r IN SELECT id, token FROM taskq.own_tasks('loader', least(todo, 1000), ARRAY['$1']) LOOP
            i := i + 1; n := n + 1;
            $3;
        END LOOP;
        EXIT WHEN n = 0;
        todo := todo - n;
        COMMIT;
    END LOOP;
END \$\$"
}
# machines: 6 in 7 checked (1 in 6 of those held for approval), 5 in 8 of
# the machines succeed, 1 in 8 fail (the step aborted, one try), 1 in 10
# of the unchecked cancelled
steps check-order $((machines * 6 / 7)) "PERFORM taskq.transition(r.id, r.token, CASE WHEN i % 6 = 0 THEN 'hold' ELSE 'ok' END)"
steps ship-order $((machines * 5 / 8)) "PERFORM taskq.transition(r.id, r.token, NULL)"
steps ship-order $((machines / 8)) "PERFORM taskq.return_task(r.id, r.token, 'carrier refused', 'aborted')"
sql "SELECT count(taskq.cancel_run(id)) FROM taskq.runs WHERE definition = 'bench_order' AND state = 'Check' AND finished_at IS NULL AND id LIKE 'order-%5'" >/dev/null
# sagas: 5 in 6 accounts made (1 in 10 of them fatal: undone), 4 in 6
# mailboxes made (succeeded), 1 in 10 of the unfinished cancelled
steps create-account $((sagas * 5 / 6)) "PERFORM taskq.return_step(r.id, r.token, CASE WHEN i % 10 = 0 THEN 'fatal' ELSE 'success' END, '{\"account\": 7}', CASE WHEN i % 10 = 0 THEN 'quota exceeded' END)"
steps delete-account $((sagas / 12)) "PERFORM taskq.return_step(r.id, r.token, 'success')"
steps create-mailbox $((sagas * 4 / 6)) "PERFORM taskq.return_step(r.id, r.token, 'success')"
sql "SELECT count(taskq.cancel_run(id)) FROM taskq.runs WHERE definition = 'bench_signup' AND finished_at IS NULL AND id LIKE 'signup-%3'" >/dev/null
sql "VACUUM ANALYZE taskq.tasks" "VACUUM ANALYZE taskq.runs" "CHECKPOINT"
say "  runs in their states after $(($(tq_now) - t1)) s; the whole load $(($(tq_now) - t0)) s"
load="load: $TASKS tasks and $RUNS runs through the SQL functions in $(($(tq_now) - t0)) s (starting $machines machine runs took $((t2 - t1)) s)"
sql "CREATE ROLE console LOGIN IN ROLE taskq_admin" >/dev/null
printf 'TQ_PORT=%q TQ_BINDIR=%q TQ_HUGE_STATE=%q\n' "$TQ_PORT" "$TQ_BINDIR" "$TQ_HUGE_STATE" >"$TQ_WORK/bench-console.env"
else
    load="the data of $AGAIN, measured again with the tree's taskq-console"
fi
out "### Data ($(date -u +%Y-%m-%d), $(nproc) cores, huge pages $TQ_HUGE_STATE)"
out ""
out "| tasks by status | count |"
out "|---|---:|"
sql "SELECT '| ' || status_code || ' | ' || n || ' |' FROM (SELECT status_code, count(*) AS n FROM taskq.tasks GROUP BY 1) AS s ORDER BY status_code" |
    while read -r l; do out "$l"; done
out ""
out "| runs by kind and status | count |"
out "|---|---:|"
sql "SELECT '| ' || kind || ' ' || status || ' | ' || n || ' |' FROM (SELECT kind, status, count(*) AS n FROM taskq.runs GROUP BY 1, 2) AS s ORDER BY kind, status" |
    while read -r l; do out "$l"; done
out ""
out "$load"
out ""

# --------------------------------------------------------- the console
CONSOLE_PORT=$(tq_free_port)
BASE=http://127.0.0.1:$CONSOLE_PORT/d/bench
tq_user_prefix
# shellcheck disable=SC2016  # the inner shell expands them
"${TQ_PREFIX[@]}" bash -c 'echo $$ >"$1"; shift; exec "$@"' console "$TQ_WORK/console.pid" \
    /usr/bin/python3 "$TQ_WORK/src/tools/taskq-console/taskq-console" \
    --dsn "bench=host=$TQ_SOCK port=$TQ_PORT dbname=bench user=console" \
    --listen "127.0.0.1:$CONSOLE_PORT" </dev/null >"$TQ_WORK/log/console.log" 2>&1 &
for ((i = 0; i < 100; i++)); do
    curl -sf -o /dev/null -m 2 "http://127.0.0.1:$CONSOLE_PORT/healthz" && break
    sleep 0.2
done
CONSOLE_PID=$(cat "$TQ_WORK/console.pid")
curl -sf -o /dev/null "http://127.0.0.1:$CONSOLE_PORT/healthz" || { tail "$TQ_WORK/log/console.log" >&2; exit 1; }
if [[ $TQ_KEEP == 1 ]]; then
    say "kept: the console on http://127.0.0.1:$CONSOLE_PORT/ (pid $CONSOLE_PID), the cluster on port $TQ_PORT" \
        "(psql -h 127.0.0.1 -p $TQ_PORT -U $TQ_DBUSER bench); again: AGAIN=$TQ_WORK bash bench/console.sh;" \
        "stop: kill $CONSOLE_PID; runuser -u $(tq_user_name) -- $TQ_BINDIR/pg_ctl -D $TQ_PGDATA stop; rm -rf $TQ_WORK"
fi

# next_of URL: the href of the page's link to its next page (rel="next")
next_of() {
    curl -s "$1" | tr '\n' ' ' | grep -o '<a [^>]*rel="next"[^>]*>' | head -n 1 |
        sed -n 's/.*href="\([^"]*\)".*/\1/p' | sed 's/&amp;/\&/g' || true   # none: the last page
}
wf=wf$((TASKS / 2000))
# a finished machine run, an undone saga (each with its steps and graph),
# and an unfinished run, whose graph its page fetches again every 2 s
run_m=$(sql "SELECT id FROM taskq.runs WHERE kind = 'machine' AND status = 'succeeded' ORDER BY id LIMIT 1")
run_s=$(sql "SELECT id FROM taskq.runs WHERE kind = 'saga' AND status = 'failed' ORDER BY id LIMIT 1")
run_u=$(sql "SELECT id FROM taskq.runs WHERE kind = 'machine' AND status = 'running' ORDER BY id LIMIT 1")
PAGES=(
    "overview|$BASE/"
    "workers|$BASE/workers"
    "tasks|$BASE/tasks"
    "tasks action=email|$BASE/tasks?action=email"
    "tasks state=aborted|$BASE/tasks?state=aborted"
    "tasks state=in_progress|$BASE/tasks?state=in_progress"
    "tasks state=pending|$BASE/tasks?state=pending"
    "tasks action=email state=pending|$BASE/tasks?action=email&state=pending"
    "tasks workflow=$wf|$BASE/tasks?workflow=$wf"
    "task t$((TASKS / 2))|$BASE/tasks/t$((TASKS / 2))"
    "runs|$BASE/runs"
    "runs definition=bench_order|$BASE/runs?definition=bench_order"
    "runs status=failed|$BASE/runs?status=failed"
    "run $run_m (machine)|$BASE/runs/$run_m"
    "run $run_s (saga, undone)|$BASE/runs/$run_s"
    "run $run_u (machine, running)|$BASE/runs/$run_u"
    "run graph $run_u (live)|$BASE/run-graph/$run_u"
    "definitions|$BASE/definitions"
    "definition bench_order|$BASE/definitions?name=bench_order"
    "dead letters|$BASE/dead"
    "dead letters action=email|$BASE/dead?action=email"
    "dead letters status=carrier|$BASE/dead?status=carrier"
    "limits and schedules|$BASE/flow"
)
# the next pages by cursor: the 2nd, and the 10th by following nine links
u=$(next_of "$BASE/tasks")
if [[ -n $u ]]; then
    PAGES+=("tasks, 2nd page|http://127.0.0.1:$CONSOLE_PORT$u")
    for ((k = 3; k <= 10; k++)); do
        [[ -n $u ]] && u=$(next_of "http://127.0.0.1:$CONSOLE_PORT$u")
    done
    [[ -z $u ]] || PAGES+=("tasks, 10th page|http://127.0.0.1:$CONSOLE_PORT$u")
fi
u=$(next_of "$BASE/tasks?action=email")
[[ -z $u ]] || PAGES+=("tasks action=email, 2nd page|http://127.0.0.1:$CONSOLE_PORT$u")
u=$(next_of "$BASE/dead")
[[ -z $u ]] || PAGES+=("dead letters, 2nd page|http://127.0.0.1:$CONSOLE_PORT$u")
u=$(next_of "$BASE/runs")
[[ -z $u ]] || PAGES+=("runs, 2nd page|http://127.0.0.1:$CONSOLE_PORT$u")

say "timing ${#PAGES[@]} pages, $REQUESTS requests each"
out "### Pages: $REQUESTS requests each, one after the other (curl time_total, ms)"
out ""
out "| page | URL | status | kB | median | p95 |"
out "|---|---|---:|---:|---:|---:|"
slow=0 bad=0
for p in "${PAGES[@]}"; do
    label=${p%%|*} url=${p#*|}
    curl -s -o /dev/null "$url" || true      # once untimed: the pool's connection, the role
    : >"$TQ_WORK/times"
    code="" size=0
    for ((k = 0; k < REQUESTS; k++)); do
        read -r code t size < <(curl -s -o /dev/null -w '%{http_code} %{time_total} %{size_download}\n' "$url")
        awk -v t="$t" 'BEGIN { printf "%.1f\n", t * 1000 }' >>"$TQ_WORK/times"
    done
    med=$(median <"$TQ_WORK/times")
    p=$(p95 <"$TQ_WORK/times")
    if awk -v p="$p" 'BEGIN { exit !(p >= 300) }'; then slow=$((slow + 1)); fi
    [[ $code == 200 ]] || bad=$((bad + 1))
    out "| $label | \`${url#http://127.0.0.1:"$CONSOLE_PORT"}\` | $code | $(awk -v b="$size" 'BEGIN { printf "%.1f", b / 1024 }') | $med | $p |"
done
out ""
out "pages with a p95 of 300 ms or more: $slow; pages that did not answer 200: $bad"
out ""

# ------------------------------------------------- the drain's slowdown
# fill: DRAIN_TASKS tasks of action work (not timed), VACUUM ANALYZE,
# CHECKPOINT.  Their ids sort after the loaded ones, as the newest tasks'
# time-ordered ids do: the first page of the Tasks page shows old tasks
# while the drain churns the newest.
fill() {
    sql "DELETE FROM taskq.tasks WHERE action = 'work'" >/dev/null
    sql "SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'x$1-' || g, 'action', 'work', 'body', '{\"payload\": \"0123456789abcdef\"}'::jsonb)) FROM generate_series(1, $DRAIN_TASKS) g))" >/dev/null
    sql "VACUUM ANALYZE taskq.tasks" "CHECKPOINT"
}
console_ticks() { awk '{print $14 + $15}' "/proc/$CONSOLE_PID/stat"; }
poll() {   # the browser tabs: each URL fetched every second, over kept-alive
    # connections, by one process (as a browser would: no process per reload)
    exec /usr/bin/python3 - "$@" <<'PY'
import http.client, sys, threading, time, urllib.parse
def tab(url):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    while True:
        try:
            conn.request("GET", u.path + ("?" + u.query if u.query else ""))
            conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            conn.close()
        time.sleep(1)
for url in sys.argv[1:]:
    threading.Thread(target=tab, args=(url,), daemon=True).start()
threading.Event().wait()
PY
}
declare -A rates=() dbcpu=() concpu=()
for ((r = 1; r <= DRAIN_RUNS; r++)); do
    order=(alone polled)
    ((r % 2 == 0)) && order=(polled alone)
    for mode in "${order[@]}"; do
        fill "$r$mode"
        if [[ $mode == polled ]]; then
            poll "$BASE/" "$BASE/tasks" "$BASE/runs" & POLLERS+=($!)
        fi
        sleep 2   # alone or polled alike: after the fill's checkpoint, the tabs open
        d0=$(cluster_ticks) c0=$(console_ticks)
        line=$("$TQ_WORK/driver" taskq drain --clients 16 --per-claim 1 --tasks "$DRAIN_TASKS" --action work --prefix "c$r")
        c1=$(console_ticks)
        if ((${#POLLERS[@]})); then   # (a bare wait would wait for the console too)
            kill "${POLLERS[@]}" 2>/dev/null || true
            wait "${POLLERS[@]}" 2>/dev/null || true
        fi
        POLLERS=()
        sleep 0.3   # the run's backends exit and are reaped
        d1=$(cluster_ticks)
        n=$(field tasks <<<"$line")
        say "  drain $mode run $r: $line db_cpu_us_per_task=$(( (d1 - d0) * TICK_US / (n > 0 ? n : 1) )) console_cpu_s=$(awk -v t=$((c1 - c0)) -v u="$TICK_US" 'BEGIN { printf "%.2f", t * u / 1e6 }')"
        rates[$mode]+="$(field rate <<<"$line") "
        dbcpu[$mode]+="$(( (d1 - d0) * TICK_US / (n > 0 ? n : 1) )) "
        concpu[$mode]+="$(awk -v t=$((c1 - c0)) -v u="$TICK_US" 'BEGIN { printf "%.2f", t * u / 1e6 }') "
    done
done
# shellcheck disable=SC2086  # the runs' rates, one a word
alone=$(printf '%s\n' ${rates[alone]} | median)
# shellcheck disable=SC2086
polled=$(printf '%s\n' ${rates[polled]} | median)
out "### Drain: $DRAIN_TASKS tasks, 16 workers, 1 per claim, alone and with the overview, tasks and runs pages fetched every second ($DRAIN_RUNS runs each, in turns)"
out ""
out "| drain | tasks/s (median) | run by run | database CPU per task, µs (run by run) | console's CPU, s (run by run) |"
out "|---|---:|---|---|---|"
out "| alone | $alone | ${rates[alone]% } | ${dbcpu[alone]% } | ${concpu[alone]% } |"
out "| with the console polled | $polled | ${rates[polled]% } | ${dbcpu[polled]% } | ${concpu[polled]% } |"
out ""
out "slowdown: $(awk -v a="$alone" -v b="$polled" 'BEGIN { printf "%.1f %%", (a - b) / a * 100 }')"
