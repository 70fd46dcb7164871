#!/usr/bin/env bash
# test/bin/demo-stop.sh — `make demo-stop`.
# Owns: stopping what `KEEP=1 make demo` left running.  demo.sh names each
# kept temp dir (/tmp/taskq-run.XXXXXX) on a line of /tmp/taskq-demo.kept;
# for each, stop the taskq-console it started (its pid in console.pid there,
# checked to be a taskq-console process), then its cluster as the OS user
# that owns it (the test user when the demo ran as root: the cluster is not
# root's) and remove the dir.
# Nothing kept: says so and exits 0.  Exits 1 if a cluster would not stop
# (its dir is left, and named in the state file still).
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TQ_DEMO_KEPT=/tmp/taskq-demo.kept    # as in demo.sh
cd /    # pg_ctl runs as another user, who may not read the current directory

if [[ ! -e $TQ_DEMO_KEPT ]]; then
    echo "demo-stop: nothing to stop: no KEEP=1 demo was kept ($TQ_DEMO_KEPT does not exist)"
    exit 0
fi
# Only a state file of our own: its lines name directories to remove.
if [[ ! -O $TQ_DEMO_KEPT || -L $TQ_DEMO_KEPT ]]; then
    tq_warn "demo-stop: $TQ_DEMO_KEPT is not ours (owner $(stat -c %U "$TQ_DEMO_KEPT")): not used"
    exit 1
fi

# stop_console DIR: TERM to the demo's taskq-console, KILL after 10 s;
# nothing if it is not running.
stop_console() {
    local dir=$1 pid i
    [[ -f $dir/console.pid ]] || return 0
    pid=$(head -n 1 "$dir/console.pid")
    if [[ ! $pid =~ ^[0-9]+$ ]] || ! grep -qa taskq-console "/proc/$pid/cmdline" 2>/dev/null; then
        echo "demo-stop: the console of $dir is not running"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
    echo "demo-stop: stopped taskq-console (pid $pid)"
}

left=()
stopped=0
while IFS= read -r dir || [[ -n $dir ]]; do
    [[ -n $dir ]] || continue
    if [[ ! $dir =~ ^/tmp/taskq-run\.[A-Za-z0-9]+$ ]]; then
        tq_warn "demo-stop: ignored line '$dir' (not a demo temp dir)"
        continue
    fi
    if [[ ! -d $dir ]]; then
        echo "demo-stop: $dir is gone already"
        continue
    fi
    data=$dir/data
    bindir=/usr/lib/postgresql/15/bin
    [[ -x $dir/pg/usr/lib/postgresql/15/bin/pg_ctl ]] && bindir=$dir/pg/usr/lib/postgresql/15/bin
    owner=$(stat -c %U "$data" 2>/dev/null || echo "")
    as_owner=()
    if [[ -n $owner && $owner != "$(id -un)" ]]; then
        if ! tq_is_root; then
            tq_warn "demo-stop: $data belongs to $owner; run make demo-stop as root or $owner"
            left+=("$dir")
            continue
        fi
        as_owner=(runuser -u "$owner" --)
    fi
    stop_console "$dir"
    if [[ -f $data/postmaster.pid ]] &&
        "${as_owner[@]}" "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        port=$(sed -n 4p "$data/postmaster.pid")
        if "${as_owner[@]}" "$bindir/pg_ctl" -D "$data" -m fast -w -t 60 -s stop ||
            "${as_owner[@]}" "$bindir/pg_ctl" -D "$data" -m immediate -w -t 30 -s stop; then
            echo "demo-stop: stopped the demo cluster on port $port (as OS user ${owner:-$(id -un)})"
        else
            tq_warn "demo-stop: the cluster in $data would not stop; $dir left in place"
            left+=("$dir")
            continue
        fi
    else
        echo "demo-stop: the cluster in $dir is not running"
    fi
    rm -rf "$dir"
    echo "demo-stop: removed $dir"
    stopped=$((stopped + 1))
done <"$TQ_DEMO_KEPT"

if [[ ${#left[@]} -eq 0 ]]; then
    rm -f "$TQ_DEMO_KEPT"
    [[ $stopped -gt 0 ]] || echo "demo-stop: nothing left to stop"
    exit 0
fi
printf '%s\n' "${left[@]}" >"$TQ_DEMO_KEPT"
exit 1
