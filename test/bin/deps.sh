#!/usr/bin/env bash
# test/bin/deps.sh — `make deps`; also the first step of test.sh and demo.sh.
# Owns: installing the Debian packages needed to build taskq and run every
# suite. Idempotent and quiet: checks dpkg first, calls apt only for what is
# missing, logs apt to a file and prints the log only when it fails.
# `deps.sh cluster` adds the packages of the local sharded, highly available
# cluster (tools/cluster.sh): pg_auto_failover (PL/Proxy is in the base).
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The server's packages are those of TQ_PG (lib.sh): Debian 12's 15 here,
# 17 or 18 in the chroot of make test PG=17 (Debian 13) or PG=18 (Debian 14),
# whose names for everything else are the same.
PACKAGES=(
    "postgresql-$TQ_PG"                    # server, initdb, pg_ctl, psql
    "postgresql-server-dev-$TQ_PG"         # PGXS, pg_regress, isolation tester, PostgreSQL::Test perl lib
    libpq-dev                              # tools/taskq-worker (libpq-fe.h, -lpq)
    "postgresql-$TQ_PG-pgtap"              # CREATE EXTENSION pgtap
    libtap-parser-sourcehandler-pgtap-perl # pg_prove
    libipc-run-perl                        # needed by PostgreSQL::Test::Cluster
    perl                                   # prove
    make gcc
    util-linux                             # runuser
    passwd                                 # useradd
    tar coreutils findutils grep sed mawk  # used by the scripts
    python3 python3-psycopg2               # examples/ (make demo)
    python3-psycopg python3-pytest         # clients/python (the python suite)
    python3-flask python3-flaskext.wtf     # tools/taskq-console: the web framework and its CSRF protection
    python3-waitress python3-psycopg-pool  # tools/taskq-console: its WSGI server and connection pools
    chromium chromium-driver python3-selenium # test/console: the console in a real browser (suite console)
    sqlsmith                               # test/t/012_sqlsmith.pl
    graphviz                               # dot -Tsvg renders every graph (test/t/022_graphs.pl, 030_dag_property.pl)
    libasan8 libubsan1                     # make check-asan (gcc's sanitizer runtimes)
    nodejs jq                              # the README's Node and taskq-worker workers (suite docs)
    git unzip                              # make dist, make check-dist
    curl                                   # make demo KEEP=1 and bench/console.sh ask taskq-console for pages
    prometheus                             # promtool: metrics_text() checked, the alert rules tested (contrib/prometheus)
    python3-yaml                           # test/static/prometheus.sh reads the rules and their tests
    prometheus-postgres-exporter           # contrib/prometheus/queries.yaml run by the exporter (test/t/)
)

# The Node worker of the README needs the PostgreSQL client `pg`, found
# through NODE_PATH (lib.sh TQ_NODE_PATH): Debian's node-pg, or, where it
# cannot be installed (a nodejs from outside Debian, which node-pg's
# dependencies do not accept), pg 8 from the npm registry into $TQ_NODE_DIR.
node_pg() { NODE_PATH=$TQ_NODE_PATH node -e 'require("pg")' >/dev/null 2>&1; }

# PL/Proxy for taskq_proxy (test/t/050_proxy.pl): Debian 12 has it for 15;
# the other majors' releases are asked (the test skips where it is missing).
if [[ $TQ_PG == 15 ]] || apt-cache show "postgresql-$TQ_PG-plproxy" >/dev/null 2>&1; then
    PACKAGES+=("postgresql-$TQ_PG-plproxy")
fi

# From 18, Debian ships the server's JIT provider as a package of its own
# (test/t/014_no_jit.pl needs one); up to 17 it is in the server's.
if apt-cache show "postgresql-$TQ_PG-jit" >/dev/null 2>&1; then
    PACKAGES+=("postgresql-$TQ_PG-jit")
fi

# The local cluster (tools/cluster.sh): pg_auto_failover's monitor
# extension and pg_autoctl.  A release that lacks one (pg_auto_failover
# follows the server's majors late) is named when tools/cluster.sh checks
# what it needs.
if [[ ${1:-} == cluster ]]; then
    for p in "postgresql-$TQ_PG-auto-failover" pg-auto-failover-cli; do
        if apt-cache show "$p" >/dev/null 2>&1; then PACKAGES+=("$p"); fi
    done
elif [[ -n ${1:-} ]]; then
    echo "deps: unknown package group '$1' (known: cluster)" >&2
    exit 2
fi

# One dpkg-query for all: "name ii " for each installed package.
installed=" $(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PACKAGES[@]}" 2>/dev/null |
    awk '$2 == "ii" { printf "%s ", $1 }' || true)"
missing=()
for p in "${PACKAGES[@]}"; do
    [[ $installed == *" $p "* ]] || missing+=("$p")
done
need_pg=0
node_pg || need_pg=1
[[ ${#missing[@]} -eq 0 && $need_pg == 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
    [[ ${#missing[@]} -gt 0 ]] && echo "deps: missing packages: ${missing[*]}" >&2
    [[ $need_pg == 1 ]] && echo "deps: missing: the Node.js module pg (node-pg, or npm's pg in $TQ_NODE_DIR)" >&2
    echo "deps: run as root (make deps)" >&2
    exit 1
fi

log=/var/log/taskq-deps.log
: >"$log" 2>/dev/null || log=$(mktemp /tmp/taskq-deps.XXXXXX.log)
what=${missing[*]}
[[ $need_pg == 1 ]] && what="$what${what:+ }node-pg (or npm's pg)"
echo "deps: installing $what (log: $log)"

export DEBIAN_FRONTEND=noninteractive
apt_get() { apt-get -o Dpkg::Use-Pty=0 -o APT::Color=0 "$@" >>"$log" 2>&1; }

# Only refresh the package lists when a package is unknown or the install fails.
need_update=0
for p in "${missing[@]}"; do
    apt-cache show "$p" >/dev/null 2>&1 || need_update=1
done
if [[ $need_update == 1 ]] && ! apt_get update; then
    cat "$log" >&2
    echo "deps: apt-get update failed" >&2
    exit 1
fi
install_pg() {
    node_pg && return 0
    apt_get install -y --no-install-recommends node-pg && node_pg && return 0
    echo "deps: node-pg does not install here; pg 8 from the npm registry into $TQ_NODE_DIR" >>"$log"
    command -v npm >/dev/null 2>&1 || apt_get install -y --no-install-recommends npm || return 1
    mkdir -p "$TQ_NODE_DIR" &&
        npm install --prefix "$TQ_NODE_DIR" --no-audit --no-fund --loglevel=error 'pg@8' >>"$log" 2>&1 &&
        node_pg
}

if [[ ${#missing[@]} -eq 0 ]]; then
    :
elif ! apt_get install -y --no-install-recommends "${missing[@]}"; then
    if [[ $need_update == 0 ]] && apt_get update &&
        apt_get install -y --no-install-recommends "${missing[@]}"; then
        :
    else
        cat "$log" >&2
        echo "deps: apt-get install failed" >&2
        exit 1
    fi
fi
if [[ $need_pg == 1 ]] && ! install_pg; then
    cat "$log" >&2
    echo "deps: cannot install the Node.js module pg" >&2
    exit 1
fi
echo "deps: done"
