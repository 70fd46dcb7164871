#!/usr/bin/env bash
# tools/cluster.sh — `make cluster`, `make cluster-stop`, `make demo-cluster`.
# Owns: a local sharded, highly available taskq cluster on this machine, for
# demos and the failover tests (docs/scaling.md, "A local cluster"):
#   - one pg_auto_failover monitor;
#   - N formations shard0..shardN-1 (N a power of two, PL/Proxy's rule), each
#     a primary and one synchronous standby, with taskq preloaded and
#     CREATE EXTENSION taskq in the database taskq;
#   - one proxy: a plain PostgreSQL instance (not highly available) with the
#     database taskq_proxy, PL/Proxy, taskq_proxy when it is installed, and
#     the foreign server taskq whose partitions are the formations'
#     multi-host connection strings;
#   - the state file $TASKQ_CLUSTER_DIR/cluster.env that says where all that is.
# Every process runs as the unprivileged user taskq (the invoking user when
# not run as root), on 127.0.0.1 only, with trust authentication: a cluster
# for one machine, not for a network.  pg_auto_failover does the failover:
# the keepers run as `pg_autoctl run`, and nothing here promotes anything.
#
# Usage: tools/cluster.sh start [N] | stop | status | node-start NAME | demo [N] | test
#   start       as root: installs the packages (deps.sh cluster), builds and
#               installs taskq into the system's PostgreSQL (skipped when the
#               installed build is this tree's), creates the user taskq; then
#               starts the cluster (default N=4).  A start that fails stops
#               what it started and removes the directory.
#   stop        stops everything the directory's pid files name (monitor
#               first, so that no failover starts) and removes the directory.
#               Nothing running: says so, exits 0.
#   status      `pg_autoctl show state` per formation, and the proxy.
#   node-start  starts the keeper of node NAME (e.g. shard0a) again, in the
#               background, as start did (after a test stopped or killed it).
#   demo [N]    examples/cluster/demo.py on the running cluster (or on one
#               of N shards started for it and stopped after, unless KEEP=1).
#   test        start 2 shards, check them, the demo with a switchover,
#               stop, check that nothing is left (make cluster-test).
# TASKQ_CLUSTER_DIR: where everything lives (default /var/tmp/taskq-cluster).
set -euo pipefail

# shellcheck source=../test/bin/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../test/bin/lib.sh"

CL_DIR=${TASKQ_CLUSTER_DIR:-/var/tmp/taskq-cluster}
CL_MARK=$CL_DIR/.taskq-cluster      # what makes the directory ours to remove
CL_ENV=$CL_DIR/cluster.env
CL_SOCK=$CL_DIR/sock
CL_LOG=$CL_DIR/log
CL_XDG=$CL_DIR/xdg                  # pg_autoctl's configuration, state and pid files
CL_AUTOCTL=$CL_DIR/bin/pg_autoctl   # pg_autoctl as the cluster's user, with its environment
CL_DBUSER=postgres                  # the clients' superuser role on the shards and the proxy
CL_STAMP=/var/tmp/taskq-cluster.build   # what the installed taskq was built from (as root)
CL_MAX_SHARDS=16

cl_say() { printf 'cluster: %s\n' "$*"; }
cl_die() { printf 'cluster: %s\n' "$*" >&2; exit 1; }

# The directory is removed by stop: only an absolute path of plain
# characters, not a system directory.
[[ $CL_DIR =~ ^/[A-Za-z0-9._/-]+$ && $CL_DIR != *..* ]] ||
    cl_die "TASKQ_CLUSTER_DIR must be an absolute path of letters, digits, . _ - / (got '$CL_DIR')"
case ${CL_DIR%/} in
    "" | /bin | /boot | /dev | /etc | /home | /lib* | /opt | /proc | /root | /run | /sbin | /srv | /sys | /tmp | /usr | /usr/* | /var | /var/tmp | /var/lib)
        cl_die "TASKQ_CLUSTER_DIR=$CL_DIR: not a directory to fill and remove" ;;
esac
CL_DIR=${CL_DIR%/}

# The cluster's OS user: taskq when run as root, else the invoking user.
cl_user() { tq_user_name; }

# cl_env: the environment of every process of the cluster.  pg_autoctl keeps
# its configuration, state and pid files under XDG_* (here in the cluster's
# directory, so that stop removes them); PGHOST and PG_REGRESS_SOCK_DIR put
# the sockets in $CL_SOCK (the Debian default, /var/run/postgresql, is not
# the user's).  PGUSER is left unset: pg_autoctl connects as the OS user.
cl_env() {
    CL_ENVV=("HOME=$(tq_user_home)" "USER=$(cl_user)" "LOGNAME=$(cl_user)"
        "PATH=$TQ_BINDIR:$TQ_SYS_PATH" "LANG=$(tq_lang)" "TMPDIR=$CL_DIR/tmp"
        "PG_CONFIG=$TQ_PG_CONFIG"
        "XDG_CONFIG_HOME=$CL_XDG/config" "XDG_DATA_HOME=$CL_XDG/data" "XDG_RUNTIME_DIR=$CL_XDG/run"
        "PGHOST=$CL_SOCK" "PG_REGRESS_SOCK_DIR=$CL_SOCK")
}

# cl_as cmd args...: run as the cluster's user in the cluster's environment.
cl_as() {
    local -a pre=()
    tq_is_root && pre=(runuser -u "$TQ_USER" --)
    cl_env
    "${pre[@]}" env -i "${CL_ENVV[@]}" "$@"
}

# cl_psql PORT DB [args]: psql on a node of the cluster (unix socket).
cl_psql() {
    local port=$1 db=$2
    shift 2
    cl_as psql -X -q -v ON_ERROR_STOP=1 -h "$CL_SOCK" -p "$port" -d "$db" "$@"
}

# Seconds since $1 (for the step timings).
cl_since() { echo "$(($(tq_now) - $1))s"; }

# cl_step NAME cmd...: run one step of start, print how long it took.
cl_step() {
    local name=$1 t0
    shift
    t0=$(tq_now)
    "$@"
    cl_say "$name ($(cl_since "$t0"))"
}

# ---------------------------------------------------------------- install

cl_install() {
    if ! tq_is_root; then
        [[ -f /usr/share/postgresql/$TQ_PG/extension/taskq.control ]] ||
            cl_die "taskq is not installed: run as root (it installs what it needs), or make install first"
        return 0
    fi
    local t0
    t0=$(tq_now)
    bash "$TQ_ROOT/test/bin/deps.sh" cluster
    cl_say "packages ($(cl_since "$t0"))"
    tq_ensure_user
    cl_build
}

# Build and install taskq from a copy of this tree, as make demo does,
# unless the installed build is already this tree's: the stamp records the
# hash of what the build reads (the Makefile, the control files, the
# sources) and of the installed library.
cl_build() {
    local tree lib f t0 stamp=""
    t0=$(tq_now)
    unset TASKQ_PRIVATE_INSTALL
    tq_make_work
    local -a inputs=()
    for f in Makefile "$TQ_WORK"/src/*.control src tools/taskq-worker proxy; do
        [[ -e $TQ_WORK/src/${f#"$TQ_WORK"/src/} ]] && inputs+=("${f#"$TQ_WORK"/src/}")
    done
    tree=$(cd "$TQ_WORK/src" && find "${inputs[@]}" -type f -print0 | sort -z | xargs -0 sha256sum |
        sha256sum | cut -c1-64)
    [[ -f $CL_STAMP ]] && stamp=$(cat "$CL_STAMP")
    lib=/usr/lib/postgresql/$TQ_PG/lib/taskq.so
    if [[ -f $lib && $stamp == "$tree $(sha256sum <"$lib" | cut -c1-64)" ]]; then
        cl_say "taskq: the installed build is this tree's, not built again ($(cl_since "$t0"))"
    else
        tq_build_install || { tq_cleanup; cl_die "build or install failed"; }
        echo "$tree $(sha256sum <"$lib" | cut -c1-64)" >"$CL_STAMP"
        cl_say "taskq built and installed into the system's PostgreSQL $TQ_PG ($(cl_since "$t0"))"
    fi
    tq_cleanup
}

cl_check_tools() {
    local f missing=()
    command -v pg_autoctl >/dev/null || missing+=("pg_autoctl (pg-auto-failover-cli)")
    for f in pgautofailover plproxy taskq; do
        [[ -f /usr/share/postgresql/$TQ_PG/extension/$f.control ]] || missing+=("extension $f")
    done
    [[ ${#missing[@]} -eq 0 ]] ||
        cl_die "missing for PostgreSQL $TQ_PG: ${missing[*]} (as root: bash test/bin/deps.sh cluster)"
}

# ---------------------------------------------------------------- ports

CL_PORTS=()
# cl_ports N: N distinct free TCP ports into CL_PORTS.
cl_ports() {
    local n=$1 p q dup
    CL_PORTS=()
    while ((${#CL_PORTS[@]} < n)); do
        p=$(tq_free_port) || cl_die "no free port found"
        dup=0
        for q in ${CL_PORTS[@]+"${CL_PORTS[@]}"}; do [[ $q == "$p" ]] && dup=1; done
        [[ $dup == 1 ]] || CL_PORTS+=("$p")
    done
}

# ---------------------------------------------------------------- nodes

# Settings for a 2-core machine, after pg_auto_failover's own (its file is
# included at the top of postgresql.conf and sizes memory for the whole
# machine); fsync stays on.  Appended before the first start of a primary,
# so that its standby, a copy, has them too.
cl_settings() {
    local role=$1
    echo
    echo "# --- added by tools/cluster.sh ($role) ---"
    echo "unix_socket_directories = '$CL_SOCK'"
    echo "lc_messages = 'C'"
    echo "log_line_prefix = '%m [%p] %q%a '"
    echo "work_mem = '4MB'"
    echo "maintenance_work_mem = '64MB'"
    echo "effective_cache_size = '1GB'"
    echo "autovacuum_max_workers = 2"
    case $role in
        monitor)
            echo "shared_buffers = '16MB'"
            echo "max_connections = 40"
            ;;
        shard)
            echo "shared_preload_libraries = 'pg_stat_statements,taskq'"
            echo "shared_buffers = '64MB'"
            echo "max_connections = 60"
            echo "max_worker_processes = 16"
            # pg_auto_failover keeps 8 GB of WAL for its standbys by default;
            # its replication slots already hold what a standby still needs.
            echo "wal_keep_size = '256MB'"
            ;;
        proxy)
            echo "listen_addresses = '127.0.0.1'"
            echo "shared_buffers = '32MB'"
            echo "max_connections = 60"
            ;;
    esac
}

# cl_keeper_pidfile PGDATA: where pg_autoctl run keeps its pid.
cl_keeper_pidfile() { echo "$CL_XDG/run/pg_autoctl$1/pg_autoctl.pid"; }

# cl_run_keeper NAME: start `pg_autoctl run` for the node in PGDATA
# $CL_DIR/NAME in the background, in a session of its own (its process
# group: the keeper, its services and the postmaster, is the keeper's pid).
cl_run_keeper() {
    local name=$1
    cl_as setsid -f pg_autoctl run --pgdata "$CL_DIR/$name" \
        >>"$CL_LOG/$name.log" 2>&1 </dev/null
}

# cl_wait_sql PORT DB SQL SECONDS: until SQL returns t on the node.
cl_wait_sql() {
    local port=$1 db=$2 sql=$3 end=$((SECONDS + $4))
    while ((SECONDS < end)); do
        [[ $(cl_psql "$port" "$db" -At -c "$sql" 2>/dev/null) == t ]] && return 0
        sleep 0.25
    done
    return 1
}

CL_MONITOR_URI=""
cl_monitor() {
    local port=$1
    CL_MONITOR_URI="postgres://autoctl_node@127.0.0.1:$port/pg_auto_failover?sslmode=disable"
    cl_as setsid -w pg_autoctl create monitor --pgdata "$CL_DIR/monitor" --pgport "$port" \
        --listen 127.0.0.1 --hostname 127.0.0.1 --auth trust --ssl-mode disable --no-ssl \
        >>"$CL_LOG/setup-monitor.log" 2>&1 || { cl_tail "$CL_LOG/setup-monitor.log"; return 1; }
    cl_settings monitor | cl_as tee -a "$CL_DIR/monitor/postgresql.conf" >/dev/null
    cl_run_keeper monitor
    cl_wait_sql "$port" pg_auto_failover "SELECT true FROM pg_extension WHERE extname = 'pgautofailover'" 60 ||
        { cl_tail "$CL_LOG/monitor.log"; return 1; }
}

cl_tail() { { echo "--- last lines of $1:"; tail -n 30 "$1"; } >&2 2>/dev/null || true; }

# cl_node NAME PORT FORMATION: pg_autoctl create postgres (the first node
# of a formation becomes its primary, the next one a standby cloned from it).
cl_node() {
    local name=$1 port=$2 formation=$3
    # In a session of its own (setsid -w waits for it), so that a start
    # that is interrupted can end it with its services and its postmaster.
    cl_as setsid -w pg_autoctl create postgres --pgdata "$CL_DIR/$name" --pgport "$port" \
        --listen 127.0.0.1 --hostname 127.0.0.1 --name "$name" --formation "$formation" \
        --monitor "$CL_MONITOR_URI" --auth trust --ssl-mode disable --no-ssl --dbname taskq
}

# cl_shard K PRIMARY_PORT STANDBY_PORT: one formation, in the background
# (its output to $CL_LOG/setup-shardK.log).  The primary gets taskq in
# shared_preload_libraries and CREATE EXTENSION taskq before its standby is
# cloned, so that the standby has both.
cl_shard() {
    local k=$1 p1=$2 p2=$3 f=shard$1
    set -e
    cl_node "${f}a" "$p1" "$f"
    cl_settings shard | cl_as tee -a "$CL_DIR/${f}a/postgresql.conf" >/dev/null
    cl_run_keeper "${f}a"
    cl_wait_sql "$p1" taskq "SELECT NOT pg_is_in_recovery()" 60
    # The CHECKPOINT spares the clone's pg_basebackup a spread one (half
    # a minute on a busy machine).
    cl_psql "$p1" taskq <<EOF
CREATE ROLE $CL_DBUSER SUPERUSER LOGIN;
CREATE EXTENSION taskq;
CHECKPOINT;
EOF
    cl_node "${f}b" "$p2" "$f"
    cl_run_keeper "${f}b"
}

# cl_wait_formations N SECONDS: until every formation has a primary and a
# secondary, in the monitor's view (reported and assigned states).
cl_wait_formations() {
    local n=$1 secs=$2 port=$3
    cl_wait_sql "$port" pg_auto_failover "
        SELECT count(*) = $n FROM (
          SELECT formationid FROM pgautofailover.node
           WHERE formationid LIKE 'shard%'
           GROUP BY formationid
          HAVING count(*) FILTER (WHERE reportedstate = 'primary' AND goalstate = 'primary') = 1
             AND count(*) FILTER (WHERE reportedstate = 'secondary' AND goalstate = 'secondary') = 1) AS f" "$secs"
}

# cl_proxy PORT N PORTS...: the proxy instance and its database, in the
# background beside the formations (its output to $CL_LOG/setup-proxy.log):
# the partitions are connection strings, the shards need not run yet.
cl_proxy() {
    local port=$1 n=$2 k opts="" have
    shift 2
    local -a ports=("$@")
    set -e
    cl_as initdb -D "$CL_DIR/proxy" -U "$CL_DBUSER" -A trust --no-locale -E UTF8 --no-instructions --no-sync
    { cl_settings proxy; echo "port = $port"; } | cl_as tee -a "$CL_DIR/proxy/postgresql.conf" >/dev/null
    cl_as pg_ctl -D "$CL_DIR/proxy" -l "$CL_LOG/proxy.log" -w -t 60 -s start ||
        { cl_tail "$CL_LOG/proxy.log"; return 1; }
    for ((k = 0; k < n; k++)); do
        opts+="${opts:+, }p$k '$(cl_shard_connstr "${ports[2 * k]}" "${ports[2 * k + 1]}")'"
    done
    cl_psql "$port" postgres -U "$CL_DBUSER" -c 'CREATE DATABASE taskq_proxy'
    have=$(cl_psql "$port" taskq_proxy -U "$CL_DBUSER" -At -c \
        "SELECT count(*) FROM pg_available_extensions WHERE name = 'taskq_proxy'")
    {
        echo 'CREATE EXTENSION plproxy;'
        if [[ $have == 1 ]]; then echo 'CREATE EXTENSION taskq_proxy;'; fi
        echo "CREATE SERVER taskq FOREIGN DATA WRAPPER plproxy OPTIONS ($opts);"
        echo 'CREATE USER MAPPING FOR PUBLIC SERVER taskq;'
        if [[ $have == 1 ]]; then
            echo 'GRANT USAGE ON FOREIGN SERVER taskq TO taskq_producer, taskq_worker, taskq_monitor, taskq_admin;'
        fi
    } | cl_psql "$port" taskq_proxy -U "$CL_DBUSER"
    if [[ $have != 1 ]]; then
        echo "proxy: the extension taskq_proxy is not installed: only plproxy and the server taskq"
    fi
}

# A formation's connection string: both nodes, the one that takes writes.
cl_shard_connstr() {
    echo "host=127.0.0.1,127.0.0.1 port=$1,$2 dbname=taskq target_session_attrs=read-write connect_timeout=2"
}

# The wrapper $CL_AUTOCTL: pg_autoctl as the cluster's user, with the
# cluster's environment and its monitor (PG_AUTOCTL_MONITOR): for
# pg_autoctl perform switchover, show state, run.
cl_write_wrapper() {
    local v
    cl_env
    {
        echo '#!/bin/sh'
        echo "# pg_autoctl for the cluster in $CL_DIR (written by tools/cluster.sh start)"
        echo 'cd /'
        printf 'set -- env -i'
        for v in "${CL_ENVV[@]}" "PG_AUTOCTL_MONITOR=$CL_MONITOR_URI"; do printf " '%s'" "$v"; done
        echo ' pg_autoctl "$@"'
        if tq_is_root; then
            echo "[ \"\$(id -u)\" = 0 ] && set -- runuser -u '$TQ_USER' -- \"\$@\""
        fi
        echo 'exec "$@"'
    } >"$CL_AUTOCTL"
    chmod 755 "$CL_AUTOCTL"
}

# cl_write_env N MONITOR_PORT PROXY_PORT PORTS...: the state file, written
# last and renamed into place (a reader sees all of it or none).
cl_write_env() {
    local n=$1 mport=$2 xport=$3 k a b tmp=$CL_ENV.tmp
    shift 3
    local -a ports=("$@")
    cl_env
    {
        echo "# The taskq cluster in $CL_DIR, written by tools/cluster.sh start; sourceable."
        echo "# Removed by tools/cluster.sh stop.  See docs/scaling.md, \"A local cluster\"."
        echo "TQC_DIR='$CL_DIR'"
        echo "TQC_USER='$(cl_user)'"
        echo "TQC_BINDIR='$TQ_BINDIR'"
        echo "TQC_SOCKDIR='$CL_SOCK'"
        echo "TQC_MONITOR='$CL_MONITOR_URI'"
        echo "TQC_MONITOR_NODE='monitor:$mport:$CL_DIR/monitor'"
        echo "TQC_SHARDS=$n"
        for ((k = 0; k < n; k++)); do
            a=${ports[2 * k]} b=${ports[2 * k + 1]}
            echo "TQC_SHARD_$k='$(cl_shard_connstr "$a" "$b") user=$CL_DBUSER'"
            echo "TQC_NODES_$k='shard${k}a:$a:$CL_DIR/shard${k}a shard${k}b:$b:$CL_DIR/shard${k}b'"
            echo "TQC_KEEPERS_$k='shard${k}a:$(cl_keeper_pidfile "$CL_DIR/shard${k}a") shard${k}b:$(cl_keeper_pidfile "$CL_DIR/shard${k}b")'"
        done
        echo "TQC_PROXY='host=127.0.0.1 port=$xport dbname=taskq_proxy user=$CL_DBUSER'"
        echo "TQC_PROXY_PGDATA='$CL_DIR/proxy'"
        echo "# pg_autoctl as the cluster's user with the cluster's environment:"
        echo "#   \$TQC_AUTOCTL perform switchover --formation shard0"
        echo "TQC_AUTOCTL='$CL_AUTOCTL'"
        echo "TQC_AUTOCTL_ENV='${CL_ENVV[*]:6}'"
    } >"$tmp"
    chmod 644 "$tmp"
    mv "$tmp" "$CL_ENV"
}

# ---------------------------------------------------------------- start

CL_STARTED=0
CL_JOBS=()
cl_start_failed() {
    local j
    [[ $CL_STARTED == 1 ]] && return 0
    for j in ${CL_JOBS[@]+"${CL_JOBS[@]}"}; do kill -TERM "$j" 2>/dev/null || true; done
    wait 2>/dev/null || true
    tq_cleanup
    if [[ -f $CL_MARK ]]; then
        cl_say "start failed: stopping what it started" >&2
        cl_stop || true
    else
        cl_say "start failed" >&2
    fi
}

cl_start() {
    local n=${1:-4} t0 tc t1 k mport xport rc failed=()
    if ! [[ $n =~ ^[1-9][0-9]*$ ]] || ((n < 1 || n > CL_MAX_SHARDS || (n & (n - 1)) != 0)); then
        cl_die "start N: N must be a power of two from 1 to $CL_MAX_SHARDS (PL/Proxy's partitions), got '$n'"
    fi
    if [[ -e $CL_DIR ]]; then
        if [[ -f $CL_ENV ]]; then
            cl_die "a cluster is running in $CL_DIR (tools/cluster.sh status; stop it first: tools/cluster.sh stop)"
        elif [[ -f $CL_MARK ]]; then
            cl_die "$CL_DIR holds an unfinished start: tools/cluster.sh stop removes it"
        else
            cl_die "$CL_DIR exists and is not a cluster's: remove it or set TASKQ_CLUSTER_DIR"
        fi
    fi
    t0=$(tq_now)
    trap 'cl_start_failed' EXIT
    trap 'echo "interrupted" >&2; exit 130' INT TERM
    cl_install
    cl_check_tools

    tc=$(tq_now)
    mkdir -p "$CL_DIR"
    touch "$CL_MARK"
    mkdir -p "$CL_SOCK" "$CL_LOG" "$CL_XDG/config" "$CL_XDG/data" "$CL_XDG/run" "$CL_DIR/tmp" "$CL_DIR/bin"
    chmod 700 "$CL_XDG/run"
    chmod 755 "$CL_DIR" "$CL_LOG"
    tq_is_root && chown -R "$TQ_USER:" "$CL_DIR"
    cl_ports $((2 + 2 * n))
    mport=${CL_PORTS[0]} xport=${CL_PORTS[1]}
    local -a ports=("${CL_PORTS[@]:2}")

    cl_step "monitor on port $mport" cl_monitor "$mport"
    cl_write_wrapper

    t1=$(tq_now)
    local proxy_job
    {
        cl_proxy "$xport" "$n" "${ports[@]}"
        echo "ready after $(cl_since "$t1")"
    } >"$CL_LOG/setup-proxy.log" 2>&1 &
    proxy_job=$!
    CL_JOBS+=("$proxy_job")
    for ((k = 0; k < n; k++)); do
        cl_as pg_autoctl create formation --monitor "$CL_MONITOR_URI" --formation "shard$k" \
            --kind pgsql --dbname taskq --enable-secondary --number-sync-standbys 0 \
            >>"$CL_LOG/setup-monitor.log" 2>&1 || { cl_tail "$CL_LOG/setup-monitor.log"; return 1; }
    done
    local -a jobs=()
    for ((k = 0; k < n; k++)); do
        cl_shard "$k" "${ports[2 * k]}" "${ports[2 * k + 1]}" >"$CL_LOG/setup-shard$k.log" 2>&1 &
        jobs+=($!)
        CL_JOBS+=($!)
    done
    for ((k = 0; k < n; k++)); do
        rc=0
        wait "${jobs[k]}" || rc=$?
        if [[ $rc -ne 0 ]]; then
            failed+=("shard$k")
            cl_tail "$CL_LOG/setup-shard$k.log"
        fi
    done
    [[ ${#failed[@]} -eq 0 ]] || cl_die "could not create ${failed[*]}"
    cl_say "formations shard0..shard$((n - 1)) created: primaries with taskq, standbys cloned ($(cl_since "$t1"))"
    t1=$(tq_now)
    if ! cl_wait_formations "$n" 120 "$mport"; then
        for ((k = 0; k < n; k++)); do cl_as pg_autoctl show state --monitor "$CL_MONITOR_URI" --formation "shard$k" >&2 || true; done
        cl_die "the formations did not all reach primary + secondary in 120 s (logs: $CL_LOG)"
    fi
    cl_say "every formation has a primary and a synchronous secondary ($(cl_since "$t1"))"

    rc=0
    wait "$proxy_job" || rc=$?
    CL_JOBS=()
    [[ $rc -eq 0 ]] || { cl_tail "$CL_LOG/setup-proxy.log"; cl_die "could not create the proxy"; }
    grep '^proxy: ' "$CL_LOG/setup-proxy.log" | sed 's/^/cluster: /' || true
    cl_say "proxy on port $xport, database taskq_proxy (beside the formations: $(tail -n 1 "$CL_LOG/setup-proxy.log"))"
    cl_write_env "$n" "$mport" "$xport" "${ports[@]}"
    CL_STARTED=1
    trap - EXIT
    cl_say "started in $(cl_since "$t0") (the cluster itself: $(cl_since "$tc"))"
    cl_summary
}

cl_summary() {
    # shellcheck disable=SC1090
    source "$CL_ENV"
    local k
    echo
    echo "  state file: $CL_ENV (source it)"
    echo "  monitor:    $TQC_MONITOR"
    for ((k = 0; k < TQC_SHARDS; k++)); do
        local v=TQC_SHARD_$k
        echo "  shard$k:     ${!v}"
    done
    echo "  proxy:      $TQC_PROXY"
    echo "  connect:    psql \"$TQC_PROXY\""
    echo "  status:     tools/cluster.sh status    stop: tools/cluster.sh stop (or make cluster-stop)"
}

# ---------------------------------------------------------------- status

cl_status() {
    [[ -f $CL_ENV ]] || { cl_say "no cluster in $CL_DIR (tools/cluster.sh start)"; return 1; }
    # shellcheck disable=SC1090
    source "$CL_ENV"
    local k rc=0 port
    echo "monitor: $TQC_MONITOR"
    for ((k = 0; k < TQC_SHARDS; k++)); do
        echo
        echo "formation shard$k:"
        cl_as pg_autoctl show state --monitor "$TQC_MONITOR" --formation "shard$k" 2>&1 || rc=1
    done
    echo
    port=${TQC_PROXY#*port=}
    port=${port%% *}
    if cl_as pg_ctl -D "$TQC_PROXY_PGDATA" status >/dev/null 2>&1; then
        echo "proxy: running, $TQC_PROXY"
        cl_psql "$port" taskq_proxy -U "$CL_DBUSER" -At -c "
            SELECT '  ' || split_part(o, '=', 1) || ': ' || substr(o, strpos(o, '=') + 1)
              FROM pg_foreign_server, unnest(srvoptions) AS o WHERE srvname = 'taskq'" || rc=1
    else
        echo "proxy: NOT running ($TQC_PROXY_PGDATA)"
        rc=1
    fi
    return "$rc"
}

# ---------------------------------------------------------------- stop

# cl_ours PID: the process is one of this cluster's (its command line names
# the cluster's directory), so that a recycled pid is never signalled.
cl_ours() {
    local -a argv=()
    [[ $1 =~ ^[0-9]+$ ]] || return 1
    mapfile -d '' argv 2>/dev/null <"/proc/$1/cmdline" || return 1
    [[ " ${argv[*]} " == *"$CL_DIR/"* ]]
}

# Every pid the directory names: keepers (pg_autoctl's pid files) and
# postmasters (postmaster.pid), of this cluster; of node $1 only if given.
cl_pids() {
    local f pid node=${1:-} depth=2
    [[ -z $node ]] || depth=1
    while IFS= read -r f; do
        pid=$(head -n 1 "$f" 2>/dev/null || true)
        cl_ours "$pid" && echo "$pid"
    done < <(find "$CL_XDG/run/pg_autoctl$CL_DIR/$node" -name pg_autoctl.pid 2>/dev/null
             find "$CL_DIR/$node" -maxdepth "$depth" -name postmaster.pid 2>/dev/null) | sort -u
    return 0
}

# The keepers' process groups (each keeper runs in a session of its own:
# the group's id is the keeper's pid, first line of its pid file), of node
# $1 only if given.  Read before stopping: pg_autoctl stop removes the pid
# file of a keeper that died, whose services ("pg_autoctl: node active",
# their command line does not name the directory) and postmaster may live on.
cl_groups() {
    local f node=${1:-}
    while IFS= read -r f; do
        head -n 1 "$f" 2>/dev/null || true
    done < <(find "$CL_XDG/run/pg_autoctl$CL_DIR/$node" -name pg_autoctl.pid 2>/dev/null)
    return 0
}

# cl_members GROUP...: the cluster user's pg_autoctl and postgres processes
# in those process groups.
cl_members() {
    [[ $# -gt 0 ]] || return 0
    local uid
    uid=$(id -u "$(cl_user)")
    ps -e -o pgid=,pid=,uid=,comm= | awk -v uid="$uid" -v groups=" $* " '
        index(groups, " " $1 " ") && $3 == uid && ($4 == "pg_autoctl" || $4 == "postgres") { print $2 }'
}

# cl_live NODE GROUP...: what of node NODE ("": of every node) still runs.
cl_live() {
    local node=$1
    shift
    { cl_pids "$node"; cl_members "$@"; } | sort -u
}

# cl_wait_gone SECONDS NODE GROUP...: until nothing of cl_live is left.
cl_wait_gone() {
    local end=$((SECONDS + $1))
    shift
    while ((SECONDS < end)); do
        [[ -z $(cl_live "$@") ]] && return 0
        sleep 0.25
    done
    return 1
}

# cl_leader PID: PID is a pg_autoctl of this cluster that leads its own
# process group (a keeper, or a create: both run in sessions of their own).
cl_leader() {
    local stat comm
    read -r comm 2>/dev/null <"/proc/$1/comm" || return 1
    [[ $comm == pg_autoctl ]] && cl_ours "$1" || return 1
    stat=$(<"/proc/$1/stat") || return 1
    stat=${stat##*) }
    read -r -a stat <<<"$stat"
    [[ ${stat[2]} == "$1" ]]
}

# The processes left: PostgreSQL's and pg_autoctl's programs whose command
# line names the directory (a keeper's services, an interrupted create).
cl_stragglers() {
    local d pid comm
    for d in /proc/[0-9]*; do
        pid=${d#/proc/}
        comm=""
        read -r comm 2>/dev/null <"$d/comm" || continue
        case $comm in
            pg_autoctl | postgres | pg_basebackup | pg_ctl | initdb | psql) ;;
            *) continue ;;
        esac
        cl_ours "$pid" && echo "$pid"
    done
    return 0
}

cl_stop() {
    local pids=() p d t1
    if [[ ! -e $CL_DIR ]]; then
        cl_say "nothing to stop: no cluster in $CL_DIR"
        return 0
    fi
    [[ -f $CL_MARK ]] || cl_die "$CL_DIR is not a cluster's directory (no $CL_MARK): left alone"
    if ! tq_is_root && [[ ! -O $CL_MARK ]]; then
        cl_die "the cluster in $CL_DIR belongs to $(stat -c %U "$CL_MARK"): run stop as root or as that user"
    fi
    local t0 g groups=() mgroups=()
    t0=$(tq_now)
    mapfile -t groups < <(cl_groups)
    mapfile -t mgroups < <(cl_groups monitor)
    mapfile -t pids < <(cl_live "" ${groups[@]+"${groups[@]}"}; cl_stragglers)
    # A test may have stopped a node with SIGSTOP: let it see the signals.
    for p in ${pids[@]+"${pids[@]}"}; do kill -CONT "$p" 2>/dev/null || true; done
    # An interrupted start's pg_autoctl create: its session goes at once.
    for p in ${pids[@]+"${pids[@]}"}; do
        if cl_leader "$p" && [[ " $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" == *" create "* ]]; then
            kill -KILL -- "-$p" 2>/dev/null || true
        fi
    done
    # The monitor first, so that stopping the primaries starts no failover.
    if [[ -d $CL_DIR/monitor ]]; then
        t1=$(tq_now)
        cl_as pg_autoctl stop --pgdata "$CL_DIR/monitor" >/dev/null 2>&1 || true
        cl_wait_gone 20 monitor ${mgroups[@]+"${mgroups[@]}"} || true
        cl_say "monitor stopped ($(cl_since "$t1"))"
    fi
    # The nodes at once, without a shutdown checkpoint: the directory goes.
    t1=$(tq_now)
    for d in "$CL_DIR"/shard*; do
        [[ -d $d ]] || continue
        cl_as pg_autoctl stop --immediate --pgdata "$d" >/dev/null 2>&1 &
    done
    if [[ -f $CL_DIR/proxy/postmaster.pid ]]; then
        cl_as pg_ctl -D "$CL_DIR/proxy" -m immediate -w -t 30 -s stop >/dev/null 2>&1 &
    fi
    # A keeper that was killed left its services and its postmaster, which
    # no pg_autoctl stop reaches: end the services (which would start the
    # postmaster again), then stop the postmaster.
    local -a orphans=()
    for g in ${groups[@]+"${groups[@]}"}; do
        cl_ours "$g" && continue
        for p in $(cl_members "$g"); do
            read -r d 2>/dev/null <"/proc/$p/comm" || continue
            if [[ $d == pg_autoctl ]]; then
                kill -KILL "$p" 2>/dev/null || true
            else
                d=$(tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | sed -n '/^-D$/{n;p;q}')
                [[ -n $d && $d == "$CL_DIR"/* ]] && orphans+=("$d")
            fi
        done
    done
    for d in ${orphans[@]+"${orphans[@]}"}; do
        cl_as pg_ctl -D "$d" -m immediate -w -t 30 -s stop >/dev/null 2>&1 &
    done
    wait || true
    cl_wait_gone 30 "" ${groups[@]+"${groups[@]}"} || true
    cl_say "nodes and proxy stopped ($(cl_since "$t1"))"
    # What did not stop in 30 s (a keeper that was killed leaves its
    # services and postmaster), and whatever else runs from the directory.
    mapfile -t pids < <(cl_live "" ${groups[@]+"${groups[@]}"}; cl_stragglers)
    if [[ ${#pids[@]} -gt 0 ]]; then
        cl_say "killing what did not stop: $(printf '%s\n' "${pids[@]}" | sort -un | paste -sd' ')"
        for g in ${groups[@]+"${groups[@]}"}; do
            [[ -z $(cl_members "$g") ]] || kill -KILL -- "-$g" 2>/dev/null || true
        done
        for p in "${pids[@]}"; do
            if cl_leader "$p"; then kill -KILL -- "-$p" 2>/dev/null || true; fi
            kill -KILL "$p" 2>/dev/null || true
        done
        sleep 1
    fi
    rm -rf "$CL_DIR"
    cl_say "stopped and removed $CL_DIR ($(cl_since "$t0"))"
}

# ---------------------------------------------------------------- node-start

cl_node_start() {
    local name=${1:-}
    [[ $name =~ ^(monitor|shard[0-9]+[ab])$ && -d $CL_DIR/$name ]] ||
        cl_die "node-start NAME: NAME is monitor or a node of $CL_DIR (shard0a, shard0b, ...), got '$name'"
    local pid
    pid=$(head -n 1 "$(cl_keeper_pidfile "$CL_DIR/$name")" 2>/dev/null || true)
    if cl_ours "$pid" && kill -0 "$pid" 2>/dev/null; then
        cl_say "$name: its keeper runs already (pid $pid)"
        return 0
    fi
    cl_run_keeper "$name"
    cl_say "$name: keeper started (log $CL_LOG/$name.log)"
}

# ---------------------------------------------------------------- demo, test

CL_SELF=$TQ_ROOT/tools/cluster.sh

# The demo (examples/cluster/demo.py) as the cluster's user, on the running
# cluster, or on one started for it (N shards) and stopped after it unless
# KEEP=1.
cl_demo() {
    local n=${1:-4} rc=0 started=0
    if [[ ! -f $CL_ENV ]]; then
        bash "$CL_SELF" start "$n"
        started=1
        echo
    fi
    cp "$TQ_ROOT/examples/cluster/demo.py" "$CL_DIR/tmp/demo.py"
    tq_is_root && chown "$TQ_USER:" "$CL_DIR/tmp/demo.py"
    cl_as env TASKQ_CLUSTER_DIR="$CL_DIR" TASKS="${TASKS:-5}" TIMEOUT="${TIMEOUT:-120}" \
        SWITCHOVER="${SWITCHOVER:-0}" python3 "$CL_DIR/tmp/demo.py" || rc=$?
    if [[ $started == 1 && ${KEEP:-0} != 1 ]]; then
        echo
        bash "$CL_SELF" stop || rc=1
    elif [[ $started == 1 ]]; then
        cl_say "KEEP=1: the cluster runs on (tools/cluster.sh status; make cluster-stop)"
    fi
    return "$rc"
}

# `make cluster-test`: start 2 shards from nothing, check them, run the
# demo with a switchover, stop, check that nothing is left.  In its own
# directory (the Makefile sets TASKQ_CLUSTER_DIR), beside a running cluster.
CL_T_OK=0
CL_T_BAD=0
# cl_check WHAT cmd...: one check; the command's output is shown (as "#"
# lines) when it fails, or always with CL_SHOW=1.
cl_check() {
    local what=$1 out line rc=0
    shift
    out=$("$@" 2>&1) || rc=$?
    if [[ $rc -eq 0 ]]; then
        echo "ok - $what"
        CL_T_OK=$((CL_T_OK + 1))
    else
        echo "not ok - $what (exit $rc)"
        CL_T_BAD=$((CL_T_BAD + 1))
    fi
    if [[ $rc -ne 0 || ${CL_SHOW:-0} == 1 ]] && [[ -n $out ]]; then
        while IFS= read -r line; do echo "#   $line"; done <<<"$out"
    fi
}

cl_test() {
    local t0 k v p nodes
    t0=$(tq_now)
    [[ ! -e $CL_DIR ]] || bash "$CL_SELF" stop
    trap 'bash "$CL_SELF" stop >/dev/null 2>&1 || true' EXIT
    CL_SHOW=1 cl_check "start 2 shards" bash "$CL_SELF" start 2
    [[ -f $CL_ENV ]] || { echo "cluster-test: start failed"; return 1; }
    # shellcheck disable=SC1090
    source "$CL_ENV"
    cl_check "status" bash "$CL_SELF" status
    cl_check "a second start is refused" bash -c "! bash '$CL_SELF' start 2"
    for ((k = 0; k < TQC_SHARDS; k++)); do
        v=TQC_SHARD_$k
        cl_check "shard$k: taskq on the primary, commits wait for the standby" cl_sql_true "${!v}" \
            "SELECT current_setting('synchronous_standby_names') LIKE 'ANY 1 (%)'
                AND EXISTS (SELECT FROM pg_extension WHERE extname = 'taskq')
                AND current_setting('shared_preload_libraries') LIKE '%taskq%'"
        nodes=TQC_NODES_$k
        p=${!nodes#* }    # the second node, shardKb: name:port:pgdata
        p=${p#*:}
        p=${p%%:*}
        cl_check "shard$k: the standby is in recovery, with taskq" cl_sql_true \
            "host=127.0.0.1 port=$p dbname=taskq user=$CL_DBUSER" \
            "SELECT pg_is_in_recovery() AND EXISTS (SELECT FROM pg_extension WHERE extname = 'taskq')"
    done
    cl_check "proxy: plproxy and the server taskq with $TQC_SHARDS partitions" cl_sql_true "$TQC_PROXY" \
        "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'plproxy')
            AND (SELECT count(*) FROM pg_foreign_server, unnest(srvoptions) AS o
                  WHERE srvname = 'taskq' AND o LIKE 'p_=%') = $TQC_SHARDS"
    cl_check "the keepers' pid files name running processes" cl_keepers_alive
    CL_SHOW=1 cl_check "the demo, with a switchover of shard0" env SWITCHOVER=1 TASKS=3 bash "$CL_SELF" demo
    CL_SHOW=1 cl_check "stop" bash "$CL_SELF" stop
    cl_check "the directory is gone" test ! -e "$CL_DIR"
    cl_check "no process of the cluster is left" test -z "$(cl_stragglers)"
    cl_check "a second stop is a no-op" bash "$CL_SELF" stop
    trap - EXIT
    echo "cluster-test: $CL_T_OK passed, $CL_T_BAD failed ($(cl_since "$t0"))"
    [[ $CL_T_BAD -eq 0 ]]
}

cl_sql_true() {
    [[ $(cl_as psql -X -At -d "$1" -c "$2") == t ]]
}

cl_keepers_alive() {
    local k v e pid
    for ((k = 0; k < TQC_SHARDS; k++)); do
        v=TQC_KEEPERS_$k
        for e in ${!v}; do
            pid=$(head -n 1 "${e#*:}") && cl_ours "$pid" || return 1
        done
    done
}

cd /    # the cluster's user may not read the caller's directory
case ${1:-} in
    start) cl_start "${2:-4}" ;;
    stop) cl_stop ;;
    status) cl_status ;;
    node-start) cl_node_start "${2:-}" ;;
    demo) cl_demo "${2:-4}" ;;
    test) cl_test ;;
    *)
        echo "usage: tools/cluster.sh start [N] | stop | status | node-start NAME | demo [N] | test" >&2
        exit 2
        ;;
esac
