#!/usr/bin/env bash
# test/bin/demo.sh — `make demo`.
# Owns: running every examples/*/run.sh against a throwaway cluster with
# database taskq_demo (CREATE EXTENSION taskq done). Each example runs as the
# test user from its own directory (in a private copy of the tree) with
#   PGHOST PGPORT PGDATABASE PGUSER   where to connect (PGHOST = socket dir;
#                                     the server also listens on 127.0.0.1:$PGPORT)
#   PGDATA TASKQ_PGLOG                the cluster, e.g. for pg_ctl restart
#   PATH                              PostgreSQL 15 bin dir first
#   VERBOSE                           1: the examples' full monitors
# VERBOSE=1: each example's full monitor (tables, progress bars, status
# lines) and every worker's log line, instead of a summary line a second
# and the events worth seeing.
# KEEP=1 leaves the cluster running, prints how to connect, and names the
# temp dir in $TQ_DEMO_KEPT for `make demo-stop` (test/bin/demo-stop.sh);
# it also starts the web console, taskq-console, on the demo database as
# the test user, connected as the login role `console` (a member of
# taskq_admin: its write actions are offered), on 127.0.0.1:8080 or, if
# that is taken, a free port (TASKQ_DEMO_CONSOLE_PORT picks one); its pid
# is in $TQ_WORK/console.pid, its log in $TQ_WORK/log/console.log.
# TASKQ_DEMO_TIMEOUT: seconds per example (default 600).
# TASKQ_PRIVATE_INSTALL=1: taskq goes into a private copy of PostgreSQL in
# the temp dir, not into the system's (test/bin/lib.sh, tq_build_install).
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DEMO_DB=taskq_demo
START_DIR=$PWD
TQ_DEMO_KEPT=/tmp/taskq-demo.kept    # the kept temp dirs, one a line (demo-stop.sh)
DEMO_TIMEOUT=${TASKQ_DEMO_TIMEOUT:-600}

trap 'tq_cleanup' EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

bash "$(dirname "${BASH_SOURCE[0]}")/deps.sh"
tq_ensure_user
tq_make_work
tq_build_install
tq_cluster_start demo
tq_psql postgres -c "CREATE DATABASE $DEMO_DB"
tq_psql "$DEMO_DB" -c 'CREATE EXTENSION taskq'
echo "demo: cluster on port $TQ_PORT, database $DEMO_DB"
if [[ ${VERBOSE:-0} == 0 ]]; then
    echo "demo: a summary line a second per example and the events worth seeing; VERBOSE=1 for everything"
fi

# start_console: taskq-console on $DEMO_DB, detached from this script (its
# own session, output to its log) so that it outlives make; waits until
# /healthz answers.  Sets CONSOLE_PORT.
CONSOLE_PORT=""
start_console() {
    local port=${TASKQ_DEMO_CONSOLE_PORT:-8080} i log=$TQ_WORK/log/console.log
    if [[ -z ${TASKQ_DEMO_CONSOLE_PORT:-} ]] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        port=$(tq_free_port) || { tq_warn "demo: no free port for the console"; return 1; }
    fi
    tq_psql "$DEMO_DB" -c "DO \$\$ BEGIN
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'console') THEN
            CREATE ROLE console LOGIN IN ROLE taskq_admin;
        END IF; END \$\$" || return 1
    tq_user_prefix
    # shellcheck disable=SC2016  # the inner shell expands them
    setsid "${TQ_PREFIX[@]}" bash -c 'echo $$ >"$1"; shift; exec "$@"' console \
        "$TQ_WORK/console.pid" /usr/bin/python3 "$TQ_WORK/src/tools/taskq-console/taskq-console" \
        --dsn "$DEMO_DB=host=$TQ_SOCK port=$TQ_PORT dbname=$DEMO_DB user=console" \
        --listen "127.0.0.1:$port" </dev/null >"$log" 2>&1 &
    for ((i = 0; i < 100; i++)); do
        if curl -sf -o /dev/null -m 2 "http://127.0.0.1:$port/healthz"; then
            CONSOLE_PORT=$port
            return 0
        fi
        sleep 0.2
    done
    tq_warn "demo: taskq-console did not answer on 127.0.0.1:$port; its log:"
    tail -n 20 "$log" >&2
    return 1
}

ran=0
failed=()
for script in "$TQ_WORK"/src/examples/*/run.sh; do
    [[ -f $script ]] || continue
    dir=$(dirname "$script")
    name=examples/$(basename "$dir")
    echo
    echo "=== $name"
    ran=$((ran + 1))
    t0=$(tq_now)
    rc=0
    cd "$dir"
    tq_run_as_user - env \
        PGHOST="$TQ_SOCK" PGPORT="$TQ_PORT" PGDATABASE="$DEMO_DB" PGUSER="$TQ_DBUSER" \
        PGDATA="$TQ_PGDATA" TASKQ_PGLOG="$TQ_PGLOG" VERBOSE="${VERBOSE:-0}" \
        timeout -k 10 "$DEMO_TIMEOUT" bash ./run.sh || rc=$?
    cd "$TQ_WORK/src"
    if [[ $rc -eq 0 ]]; then
        echo "=== $name: ok ($(($(tq_now) - t0))s)"
    else
        echo "=== $name: FAILED (exit $rc, $(($(tq_now) - t0))s)"
        failed+=("$name")
    fi
done

echo
if [[ $ran -eq 0 ]]; then
    echo "demo: no examples yet (examples/*/run.sh); the cluster and extension work."
else
    echo "demo: $ran example(s) ran, ${#failed[@]} failed${failed[*]:+: ${failed[*]}}"
fi

if [[ ${KEEP:-0} == 1 ]]; then
    # shellcheck disable=SC2034  # read by tq_cleanup (lib.sh)
    TQ_KEEP=1
    # The cluster belongs to the OS user $(tq_user_name); its superuser role is $TQ_DBUSER.
    as_u=""
    tq_is_root && as_u="runuser -u $TQ_USER -- "
    if ! { [[ ! -e $TQ_DEMO_KEPT || -O $TQ_DEMO_KEPT ]] && echo "$TQ_WORK" >>"$TQ_DEMO_KEPT"; }; then
        tq_warn "demo: could not record $TQ_WORK in $TQ_DEMO_KEPT: make demo-stop will not find it"
    fi
    here=""
    [[ $START_DIR == "$TQ_ROOT" ]] || here=" -C $TQ_ROOT"
    console_line="  console:  not started (see $TQ_WORK/log/console.log)"
    if start_console; then
        console_line="  console:  http://127.0.0.1:$CONSOLE_PORT/  (taskq-console as role console, in taskq_admin; log $TQ_WORK/log/console.log)"
    fi
    cat <<EOF

KEEP=1: the cluster is still running (temp dir $TQ_WORK, owned by OS user $(tq_user_name)).
  connect:  ${as_u}$TQ_BINDIR/psql -h $TQ_SOCK -p $TQ_PORT -U $TQ_DBUSER $DEMO_DB
       or:  psql "host=127.0.0.1 port=$TQ_PORT user=$TQ_DBUSER dbname=$DEMO_DB"
  log:      $TQ_PGLOG
$console_line
  stop:     make$here demo-stop     (stops the console and the cluster, removes $TQ_WORK)
EOF
fi
[[ ${#failed[@]} -eq 0 ]]
