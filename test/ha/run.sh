#!/bin/bash
# test/ha/run.sh: the failover scenarios of `make ha-test`, under load.
#
# Reads the cluster state file ($TASKQ_CLUSTER_DIR/cluster.env, written by
# tools/cluster.sh start) and nothing else about the cluster: each scenario
# is a function that uses only its variables (TQC_USER, TQC_BINDIR,
# TQC_MONITOR, TQC_SHARDS, TQC_SHARD_<k>, TQC_NODES_<k>, TQC_PROXY; and
# where given TQC_AUTOCTL, the pg_autoctl wrapper, TQC_KEEPERS_<k>, the
# keepers' pid files, TQC_MONITOR_NODE), the pg_autoctl commands,
# tools/cluster.sh node-start to start a node's keeper again, and signals to
# the processes of a node, found through its PGDATA (postmaster.pid, the
# keeper's pid file).
#
# Each scenario runs test/ha/haload.py load in the background (producers
# through the proxy, a worker pool per shard, proxy claimers), lets it warm
# up, breaks shard $HA_SHARD (default 1), notes each fault in
# RUN/events.jsonl, repairs the cluster, stops the load (which drains), and
# runs haload.py check: L1-L5 on every primary, and the fault's measurements.
#
#   bash test/ha/run.sh                      # the six scenarios
#   HA_SCENARIOS="switchover kill" bash test/ha/run.sh
#   FAST=1 bash test/ha/run.sh               # pg_auto_failover's timeouts lowered first
#
# Knobs: HA_SHARD, HA_SCENARIOS, HA_WARMUP (s of load before the fault, 10),
# HA_AFTER (s of load after recovery, 10), HA_OUT (results; default
# $TASKQ_CLUSTER_DIR/ha-test-<time>), HA_NO_PROXY=1 (route producer calls
# in the client instead of through TQC_PROXY), HA_LOAD_ARGS (more options
# for haload.py load).  Exit status: 0 when every scenario passed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
PY=/usr/bin/python3
CLUSTER_DIR=${TASKQ_CLUSTER_DIR:-/var/tmp/taskq-cluster}
ENV_FILE=$CLUSTER_DIR/cluster.env
[[ -f $ENV_FILE ]] || { echo "ha-test: no $ENV_FILE (start the cluster: tools/cluster.sh start 4)" >&2; exit 2; }
# shellcheck disable=SC1090
. "$ENV_FILE"
export TASKQ_CLUSTER_DIR=$CLUSTER_DIR
SHARD=${HA_SHARD:-1}
WARMUP=${HA_WARMUP:-10}
AFTER=${HA_AFTER:-10}
FAST=${FAST:-0}
SCENARIOS=${HA_SCENARIOS:-switchover kill rejoin monitor standby_then_primary sigstop}
OUT=${HA_OUT:-$CLUSTER_DIR/ha-test-$(date +%Y%m%d-%H%M%S)}
if [[ $FAST == 1 ]]; then WAIT=60; else WAIT=180; fi
mkdir -p "$OUT"
LOAD_PID=""
RUN=""

say() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" | tee -a "$OUT/driver.log" >&2; }

# Commands as the cluster's user (pg_autoctl refuses to run as root).
# pg_autoctl finds a node's files through XDG_CONFIG_HOME, XDG_DATA_HOME and
# XDG_RUNTIME_DIR (and its socket directory through PG_REGRESS_SOCK_DIR):
# passed on when the state file or the caller sets them.
as_user() {
    local -a e=(PATH="$TQC_BINDIR:/usr/bin:/bin")
    local v
    for v in XDG_CONFIG_HOME XDG_DATA_HOME XDG_RUNTIME_DIR PG_REGRESS_SOCK_DIR; do
        [[ -n ${!v:-} ]] && e+=("$v=${!v}")
    done
    if [[ $(id -u) -eq 0 && $(id -un) != "$TQC_USER" ]]; then
        runuser -u "$TQC_USER" -- env HOME="$(getent passwd "$TQC_USER" | cut -d: -f6)" "${e[@]}" "$@"
    else
        env "${e[@]}" "$@"
    fi
}
# pg_autoctl with the cluster's environment: the wrapper the state file
# names (TQC_AUTOCTL), else pg_autoctl as the cluster's user.
autoctl() {
    if [[ -n ${TQC_AUTOCTL:-} && -x ${TQC_AUTOCTL:-} ]]; then "$TQC_AUTOCTL" "$@"; else as_user pg_autoctl "$@"; fi
}

# --- the state file's nodes ------------------------------------------------

shard_dsn() { local v="TQC_SHARD_$1"; printf '%s' "${!v}"; }
nodes_of() { local v="TQC_NODES_$1"; printf '%s\n' ${!v}; }       # name:port:pgdata per line
node_field() {  # node_field NAME 2|3: its port or PGDATA
    local k
    for ((k = 0; k < TQC_SHARDS; k++)); do
        nodes_of "$k" | awk -F: -v n="$1" -v f="$2" '$1 == n { print $f }'
    done | head -n 1
}
dsn_word() { sed -n "s/.*\\b$2=\\([^ ]*\\).*/\\1/p" <<<"$1"; }
# A connection string for one node of shard k (user and database of TQC_SHARD_k).
node_dsn() {
    local d
    d=$(shard_dsn "$1")
    printf 'host=127.0.0.1 port=%s dbname=%s user=%s connect_timeout=2' "$2" \
        "$(dsn_word "$d" dbname)" "$(dsn_word "$d" user)"
}
psql_at() { PGCONNECT_TIMEOUT=2 psql -X -At -q -d "$1" -c "$2" 2>/dev/null; }

# The port of shard k's primary: where its multi-host string lands, read-write.
primary_port() { psql_at "$(shard_dsn "$1") connect_timeout=2" 'SELECT inet_server_port()'; }
node_of_port() { nodes_of "$1" | awk -F: -v p="$2" '$2 == p { print $1 }'; }
# Nodes of shard k that answer read-write (a second one would be split brain).
writable_nodes() {
    local n p pd
    while IFS=: read -r n p pd; do
        [[ $(psql_at "$(node_dsn "$1" "$p")" 'SELECT NOT pg_is_in_recovery()') == t ]] && echo "$n"
    done < <(nodes_of "$1")
}

# pg_autoctl's view: "name port reported assigned" per node of formation shard<k>.
formation_state() {
    autoctl show state --formation "shard$1" --monitor "$TQC_MONITOR" --json 2>/dev/null |
        $PY -c '
import json, sys
try:
    nodes = json.load(sys.stdin)
except ValueError:
    sys.exit(0)
if isinstance(nodes, dict):
    nodes = nodes.get("nodes", [nodes])
for n in nodes:
    g = lambda *ks: next((n[k] for k in ks if k in n), "?")
    print(g("nodename", "node_name", "name"), g("nodeport", "node_port", "port"),
          g("current_group_state", "reported_state", "reportedstate"),
          g("assigned_group_state", "goal_state", "goalstate"))'
}
# Every node of shard k primary or secondary, as assigned.
formation_healthy() {
    local st
    st=$(formation_state "$1")
    [[ -n $st ]] || return 1
    awk '$3 != $4 || ($3 != "primary" && $3 != "secondary") { bad = 1 } END { exit bad }' <<<"$st" &&
        [[ $(grep -c ' primary primary$' <<<"$st") -eq 1 ]]
}

# --- processes of a node -------------------------------------------------------

descendants() {  # a pid and every process below it
    ps -e -o pid=,ppid= | awk -v top="$1" '
        { kids[$2] = kids[$2] " " $1 }
        END { todo[1] = top; n = 1; while (n > 0) { p = todo[n--]; print p;
              m = split(kids[p], k, " "); for (i = 1; i <= m; i++) todo[++n] = k[i] } }'
}
# The keeper's pid file: from TQC_KEEPERS_<k> (name:pidfile), else pg_autoctl's word.
keeper_pid() {  # keeper_pid PGDATA
    local f="" k v entry
    for ((k = 0; k < TQC_SHARDS; k++)); do
        v="TQC_KEEPERS_$k"
        for entry in ${!v:-}; do
            [[ $(node_field "${entry%%:*}" 3) == "$1" ]] && f=${entry#*:}
        done
    done
    [[ -n $f ]] || f=$(autoctl show file --pid --pgdata "$1" 2>/dev/null | tail -n 1)
    [[ -n $f && -f $f ]] && head -n 1 "$f"
}
postmaster_pid() { [[ -f $1/postmaster.pid ]] && head -n 1 "$1/postmaster.pid"; }
# A pid file may be stale and its pid another process's now: a pid counts
# only when it is the cluster user's pg_autoctl or postgres.
ours() { [[ $(ps -o user=,comm= -p "$1" 2>/dev/null) =~ ^$TQC_USER\ +(pg_autoctl|postgres)$ ]]; }
node_pids() {  # the keeper and the postmaster of a PGDATA, with their children
    local pd=$1 p
    for p in $(keeper_pid "$pd") $(postmaster_pid "$pd"); do
        ours "$p" && descendants "$p"
    done | sort -un
}
# signal_node SIG NAME [SCENARIO WHAT]: the node's processes are found first
# (pg_autoctl takes a moment), then the fault is noted, then they are signalled.
signal_node() {
    local pd pids
    pd=$(node_field "$2" 3)
    pids=$(node_pids "$pd")
    [[ -n $pids ]] || { say "no process found for node $2 ($pd)"; return 1; }
    [[ -n ${3:-} ]] && fault "$3" "$4" "$SHARD"
    say "kill -$1 node $2: $(echo $pids)"
    # shellcheck disable=SC2086
    kill "-$1" $pids 2>/dev/null || true
    if [[ $1 == CONT ]]; then
        # a parent that stopped itself with its child (runuser, su) goes on too
        local p pp
        for p in $pids; do
            pp=$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')
            [[ -n $pp && $pp != 1 && $(ps -o stat= -p "$pp" 2>/dev/null) == T* ]] && kill -CONT "$pp"
        done
    fi
}
now() { date +%s.%N; }
# Start a node's keeper again (it starts its postgres).
start_node() {  # start_node NAME [PGDATA]
    local pd=${2:-$(node_field "$1" 3)}
    say "start node $1 ($pd)"
    if [[ -f $root/tools/cluster.sh ]] && grep -q 'node-start' "$root/tools/cluster.sh"; then
        bash "$root/tools/cluster.sh" node-start "$1" >>"$OUT/driver.log" 2>&1 && return 0
    fi
    # setsid -f: the keeper's parent exits at once, so no runuser stays
    # above it (runuser stops itself when its child is stopped, and a
    # stopped parent never reaps the keeper's zombie, whose pid then still
    # holds the keeper's pid file).
    as_user setsid -f pg_autoctl run --pgdata "$pd" >>"$OUT/node-$1.log" 2>&1 </dev/null
}
# The monitor's PGDATA: TQC_MONITOR_PGDATA, else the running postmaster whose
# postmaster.pid names the monitor's port (a postmaster's cwd is its PGDATA).
monitor_pgdata() {
    local port pid dir
    if [[ -n ${TQC_MONITOR_NODE:-} ]]; then echo "${TQC_MONITOR_NODE#*:*:}"; return; fi
    if [[ -n ${TQC_MONITOR_PGDATA:-} ]]; then echo "$TQC_MONITOR_PGDATA"; return; fi
    port=$(sed -n 's|.*@[^:/]*:\([0-9]*\)/.*|\1|p' <<<"$TQC_MONITOR")
    for pid in $(pgrep -x postgres); do
        dir=$(readlink "/proc/$pid/cwd" 2>/dev/null) || continue
        [[ -f $dir/postmaster.pid && $(head -n 1 "$dir/postmaster.pid") == "$pid" &&
            $(sed -n 4p "$dir/postmaster.pid") == "$port" ]] && { echo "$dir"; return; }
    done
}

monitor_up() { [[ $(psql_at "$TQC_MONITOR" 'SELECT 1') == 1 ]]; }
wait_until() {  # wait_until SECONDS WHAT cmd...: true when cmd succeeded in time
    local t_end=$((SECONDS + $1)) what=$2
    shift 2
    while ((SECONDS < t_end)); do
        "$@" && return 0
        sleep 0.5
    done
    say "timed out after ${t_end}s waiting for: $what"
    return 1
}
port_moved() { local p; p=$(primary_port "$1"); [[ -n $p && $p != "$2" ]]; }
# await_promotion SHARD OLD_PORT: the shard's standby promoted (its primary
# no longer on OLD_PORT) within WAIT, noted as an event, or the scenario fails
await_promotion() {
    wait_until "$WAIT" "the standby of shard $1 promoted" port_moved "$1" "$2" || failed "no promotion"
    event promoted "\"shard\": $1, \"old_port\": $2, \"port\": $(primary_port "$1" || echo null)"
}
has_primary() { [[ -n $(primary_port "$1") ]]; }

# --- load, events, check -----------------------------------------------------------

event() {  # event KIND [json fields...]: a line of RUN/events.jsonl, now
    local extra=${2:-}
    printf '{"t": %s, "event": "%s"%s}\n' "$(date +%s.%N)" "$1" "${extra:+, $extra}" >>"$RUN/events.jsonl"
}
fault() {  # fault SCENARIO WHAT [SHARD]
    event fault "\"scenario\": \"$1\", \"what\": \"$2\", \"shard\": ${3:-null}"
    say "fault: $2"
}
start_load() {
    RUN=$OUT/$1
    mkdir -p "$RUN"
    local -a a=(--dir "$RUN" --cluster-env "$ENV_FILE" --duration 0 --lease 15)
    [[ ${HA_NO_PROXY:-0} == 1 ]] && a+=(--no-proxy)
    # shellcheck disable=SC2086
    $PY "$here/haload.py" load "${a[@]}" ${HA_LOAD_ARGS:-} >"$RUN/load.log" 2>&1 &
    LOAD_PID=$!
    say "scenario $1: load started (pid $LOAD_PID), results in $RUN"
    sleep "$WARMUP"
}
stop_load() {
    touch "$RUN/stop"
    wait "$LOAD_PID"
    LOAD_PID=""
}
check() {  # check NAME: L1-L5 and the measurements; the scenario's verdict
    local rc=0
    event end
    stop_load
    $PY "$here/haload.py" check --dir "$RUN" --cluster-env "$ENV_FILE" >"$RUN/check.txt" 2>&1 || rc=$?
    sed 's/^/    /' "$RUN/check.txt" | tee -a "$OUT/driver.log"
    if [[ $rc -ne 0 || -n ${SCENARIO_FAILED:-} ]]; then
        say "scenario $1: FAILED ${SCENARIO_FAILED:-}"
        RESULTS+=("FAIL $1 ${SCENARIO_FAILED:-}")
        return 1
    fi
    RESULTS+=("ok   $1")
}
failed() { SCENARIO_FAILED="${SCENARIO_FAILED:-}$*; "; say "scenario failure: $*"; }
# Wait until the shard is whole again (its nodes primary and secondary).
heal() {
    wait_until "$WAIT" "shard $1 healthy" formation_healthy "$1" || failed "shard $1 did not heal"
    event repaired "\"shard\": $1"
}

# --- the scenarios: each uses only the state file ------------------------------------

# 1. Planned switchover of one shard.
scenario_switchover() {
    local k=$SHARD old t0
    old=$(primary_port "$k")
    start_load switchover
    fault switchover "pg_autoctl perform switchover --formation shard$k" "$k"
    t0=$(now)
    autoctl perform switchover --formation "shard$k" --monitor "$TQC_MONITOR" >>"$RUN/autoctl.log" 2>&1 ||
        failed "perform switchover failed"
    wait_until "$WAIT" "a new primary of shard $k" port_moved "$k" "$old" || failed "no new primary"
    event promoted "\"shard\": $k, \"old_port\": $old, \"port\": $(primary_port "$k" || echo null)"
    $PY "$here/haload.py" wait-ok --dir "$RUN" --shard "$k" --after "$t0" --timeout "$WAIT" >/dev/null ||
        failed "no write acknowledged on shard $k after the switchover"
    sleep "$AFTER"
    heal "$k"
    check switchover
}

# 2. SIGKILL of one shard primary's keeper and postmaster (and their children).
scenario_kill() {
    local k=$SHARD old name t0
    old=$(primary_port "$k"); name=$(node_of_port "$k" "$old")
    start_load kill
    signal_node KILL "$name" kill "kill -9 of primary $name (keeper and postgres)"
    t0=$(now)
    await_promotion "$k" "$old"
    $PY "$here/haload.py" wait-ok --dir "$RUN" --shard "$k" --after "$t0" --timeout "$WAIT" >/dev/null ||
        failed "no write acknowledged on shard $k after the failover"
    sleep "$AFTER"
    start_node "$name"
    heal "$k"
    check kill
}

# 3. The old primary comes back and rejoins as a standby (measured from its return).
scenario_rejoin() {
    local k=$SHARD old name
    old=$(primary_port "$k"); name=$(node_of_port "$k" "$old")
    start_load rejoin
    signal_node KILL "$name" rejoin "kill -9 of primary $name"
    await_promotion "$k" "$old"
    sleep "$AFTER"
    fault rejoin "old primary $name started again: rejoins as a standby" "$k"
    start_node "$name"
    wait_until "$WAIT" "$name secondary" is_secondary "$k" "$name" ||
        failed "$name did not rejoin as a secondary"
    [[ $(writable_nodes "$k" | wc -l) -le 1 ]] || failed "two writable nodes in shard $k"
    sleep "$AFTER"
    heal "$k"
    check rejoin
}
is_secondary() { node_in "$1" "$2" secondary; }
node_in() { [[ $(formation_state "$1" | awk -v n="$2" '$1 == n { print $3 }') == "$3" ]]; }  # node_in K NAME STATE

# 4. The monitor is down: service goes on, no failover happens.
scenario_monitor() {
    local mon k before after
    mon=$(monitor_pgdata)
    [[ -n $mon ]] || { failed "the monitor's PGDATA not found (TQC_MONITOR_PGDATA)"; RESULTS+=("FAIL monitor (no PGDATA)"); return 1; }
    before=$(for ((k = 0; k < TQC_SHARDS; k++)); do primary_port "$k"; done)
    start_load monitor
    fault monitor "monitor stopped ($mon)"
    autoctl stop --pgdata "$mon" >>"$RUN/autoctl.log" 2>&1 || failed "pg_autoctl stop of the monitor"
    sleep $((FAST == 1 ? 30 : 60))
    after=$(for ((k = 0; k < TQC_SHARDS; k++)); do primary_port "$k"; done)
    [[ $before == "$after" ]] || failed "primaries changed while the monitor was down: $before -> $after"
    start_node monitor "$mon"
    wait_until "$WAIT" "the monitor back" monitor_up ||
        failed "the monitor did not come back"
    event repaired
    for ((k = 0; k < TQC_SHARDS; k++)); do heal "$k"; done
    check monitor
}

# 5. The standby dies and writes go on; then the primary dies: the shard is
# unavailable, the standby that came back is not promoted (it misses writes).
scenario_standby_then_primary() {
    local k=$SHARD old pname sname t0 n p pd
    old=$(primary_port "$k"); pname=$(node_of_port "$k" "$old")
    while IFS=: read -r n p pd; do [[ $n != "$pname" ]] && sname=$n; done < <(nodes_of "$k")
    start_load standby_then_primary
    signal_node KILL "$sname" standby_then_primary "kill -9 of standby $sname"
    # the monitor lets the primary commit without its standby (wait_primary)
    wait_until "$WAIT" "$pname wait_primary" node_in "$k" "$pname" wait_primary ||
        failed "the primary was not told to go on alone"
    t0=$(now)
    event alone "\"shard\": $k"
    $PY "$here/haload.py" wait-ok --dir "$RUN" --shard "$k" --after "$t0" --timeout "$WAIT" >/dev/null ||
        failed "writes did not go on without the standby"
    sleep "$AFTER"
    signal_node KILL "$pname" standby_then_primary "kill -9 of primary $pname; standby $sname started again"
    start_node "$sname"
    sleep $((FAST == 1 ? 30 : 60))
    if [[ -n $(writable_nodes "$k") ]]; then
        failed "shard $k has a writable node without its old primary: $(writable_nodes "$k" | tr '\n' ' ')"
    fi
    event repaired_start "\"shard\": $k"
    start_node "$pname"
    wait_until "$WAIT" "shard $k writable again" has_primary "$k" || failed "shard $k did not come back"
    [[ $(primary_port "$k") == "$old" ]] || failed "shard $k came back on another node than $pname"
    heal "$k"
    check standby_then_primary
}

# 6. SIGSTOP of one shard's primary for longer than the failover timeout: no
# write is acknowledged by it after its standby was promoted.
scenario_sigstop() {
    local k=$SHARD old name
    old=$(primary_port "$k"); name=$(node_of_port "$k" "$old")
    start_load sigstop
    signal_node STOP "$name" sigstop "SIGSTOP of primary $name (keeper and postgres)"
    await_promotion "$k" "$old"
    sleep "$AFTER"
    signal_node CONT "$name" sigstop "SIGCONT of old primary $name"
    sleep "$AFTER"
    [[ $(writable_nodes "$k" | wc -l) -le 1 ]] || failed "two writable nodes in shard $k"
    heal "$k"
    check sigstop
}

# --- lower pg_auto_failover's timeouts (FAST=1) ------------------------------------------

fast_timeouts() {
    local mon_url k n p pd kp
    mon_url=$(sed "s|//[^@]*@|//$TQC_USER@|" <<<"$TQC_MONITOR")
    say "FAST=1: lowering the monitor's and the keepers' timeouts"
    as_user psql -X -q -d "$mon_url" \
        -c "ALTER SYSTEM SET pgautofailover.health_check_period = 1000" \
        -c "ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000" \
        -c "ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500" \
        -c "ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 5000" \
        -c "ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 10000" \
        -c "SELECT pg_reload_conf()" >>"$OUT/driver.log" 2>&1 ||
        say "FAST=1: could not lower the monitor's timeouts (as $TQC_USER); defaults stay"
    for ((k = 0; k < TQC_SHARDS; k++)); do
        while IFS=: read -r n p pd; do
            autoctl config set --pgdata "$pd" timeout.network_partition_timeout 5 >>"$OUT/driver.log" 2>&1 &&
                autoctl config set --pgdata "$pd" timeout.prepare_promotion_catchup 10 >>"$OUT/driver.log" 2>&1 ||
                say "FAST=1: could not set the timeouts of $n"
            kp=$(keeper_pid "$pd")
            [[ -n $kp ]] && kill -HUP "$kp" 2>/dev/null
        done < <(nodes_of "$k")
    done
}

# --- main ------------------------------------------------------------------------------------

cleanup() {
    if [[ -n $LOAD_PID ]]; then
        touch "$RUN/stop" 2>/dev/null
        kill "$LOAD_PID" 2>/dev/null
    fi
}
trap cleanup EXIT
RESULTS=()
say "ha-test: $TQC_SHARDS shards, faults on shard $SHARD, scenarios: $SCENARIOS; results in $OUT"
[[ $FAST == 1 ]] && fast_timeouts
for k in $(seq 0 $((TQC_SHARDS - 1))); do
    wait_until "$WAIT" "shard $k healthy before the scenarios" formation_healthy "$k" ||
        { say "shard $k is not healthy: $(formation_state "$k" | tr '\n' ';')"; exit 2; }
done
t_start=$SECONDS
for s in $SCENARIOS; do
    SCENARIO_FAILED=""
    declare -F "scenario_$s" >/dev/null || { say "no scenario $s"; RESULTS+=("FAIL $s (unknown)"); continue; }
    t0=$SECONDS
    "scenario_$s"
    say "scenario $s took $((SECONDS - t0)) s"
done
say "ha-test: $((SECONDS - t_start)) s"
printf '%s\n' "${RESULTS[@]}" | tee "$OUT/summary.txt"
! grep -q '^FAIL' "$OUT/summary.txt"
