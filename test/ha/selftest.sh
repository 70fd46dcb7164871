#!/bin/bash
# test/ha/selftest.sh: the self-test of make ha-test's load, ledger and checkers
# on one plain server, without pg_auto_failover or PL/Proxy.
#
# Builds and installs this tree into a private copy of PostgreSQL, starts a
# throwaway cluster (test/bin/lib.sh) with four databases s0..s3 as the
# shards, runs the load routed by the client's own partition computation,
# and checks L1-L5: all must hold.  Then it plants one fault for each check
# (an acknowledged insert lost and another on a second shard, a wrong token,
# a wrong signal count, a stranded task, an unknown call never retried) and
# checks again: each check must fail, naming what was planted.
#
#   bash test/ha/selftest.sh                  # about a minute with the build
#   HA_SELFTEST_PORT=5432 HA_SELFTEST_HOST=/tmp bash test/ha/selftest.sh
#       # against a server of yours with taskq preloaded (databases
#       # ha_s0..ha_s3 are dropped and made again)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../bin/lib.sh
. "$here/../bin/lib.sh"
PY=/usr/bin/python3
SECONDS_OF_LOAD=${HA_SELFTEST_SECONDS:-6}

fail() { echo "selftest: FAIL: $*" >&2; exit 1; }

if [[ -n ${HA_SELFTEST_PORT:-} ]]; then
    host=${HA_SELFTEST_HOST:-127.0.0.1} port=$HA_SELFTEST_PORT user=${HA_SELFTEST_USER:-postgres}
    dir=$(mktemp -d /tmp/haload-self.XXXXXX)
    trap 'rm -rf "$dir"' EXIT
    sql() { psql -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -U "$user" -d "$1" -c "$2"; }
else
    trap tq_cleanup EXIT INT TERM
    export TASKQ_PRIVATE_INSTALL=${TASKQ_PRIVATE_INSTALL:-1}
    tq_ensure_user
    tq_make_work
    tq_build_install >/dev/null
    tq_cluster_start demo
    host=127.0.0.1 port=$TQ_PORT user=$TQ_DBUSER
    dir=$TQ_WORK/ha
    mkdir -p "$dir"
    sql() { tq_psql "$1" -c "$2"; }
fi

shards=()
for k in 0 1 2 3; do
    sql postgres "DROP DATABASE IF EXISTS ha_s$k" >/dev/null 2>&1
    if [[ $k == 0 ]]; then
        sql postgres "CREATE DATABASE ha_s0" >/dev/null
        sql ha_s0 "CREATE EXTENSION taskq" >/dev/null
    else
        sql postgres "CREATE DATABASE ha_s$k TEMPLATE ha_s0" >/dev/null
    fi
    shards+=(--shard "host=$host port=$port user=$user dbname=ha_s$k")
done
for k in 0 1 2 3; do sql postgres "ALTER DATABASE ha_s$k SET taskq.retention = -1" >/dev/null; done

echo "selftest: load for $SECONDS_OF_LOAD s on four databases of one server"
$PY "$here/haload.py" load --dir "$dir" "${shards[@]}" --duration "$SECONDS_OF_LOAD" \
    --rate 10 --retry-grace 10 --drain 60 || fail "the load failed"
echo "selftest: check of the clean run (every check must hold)"
$PY "$here/haload.py" check --dir "$dir" "${shards[@]}" --settle 5 >"$dir/clean.txt" ||
    { cat "$dir/clean.txt"; fail "a check failed on a clean run"; }
cat "$dir/clean.txt"
grep -q '^ok   L1' "$dir/clean.txt" || fail "no L1 line"

planted=$($PY "$here/haload.py" plant --dir "$dir" "${shards[@]}") || fail "plant failed"
echo "selftest: planted $planted"
rc=0
$PY "$here/haload.py" check --dir "$dir" "${shards[@]}" --settle 0 >"$dir/planted.txt" || rc=$?
cat "$dir/planted.txt"
[[ $rc -eq 1 ]] || fail "check exit $rc with faults planted, expected 1"
$PY - "$dir/report.json" "$planted" <<'PY' || fail "a planted fault was not reported"
import json, sys
report = json.load(open(sys.argv[1]))
planted = json.loads(sys.argv[2])
bad = 0
for check, ids in planted.items():
    c = report["checks"][check]
    text = "\n".join(c["first"])
    for i in ids:
        if c["ok"] or i not in text:
            print("selftest: %s did not report %s" % (check, i))
            bad += 1
        else:
            print("selftest: %s reports %s" % (check, i))
sys.exit(1 if bad else 0)
PY
echo "selftest: ok (every check holds on the clean run and reports each planted fault)"
