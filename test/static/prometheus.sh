#!/usr/bin/env bash
# test/static/prometheus.sh — the Prometheus files of contrib/prometheus/:
#   - taskq.rules.yml passes promtool check rules;
#   - taskq.rules.test.yml (promtool test rules) passes, and has a test
#     of every alert the rules define, and a case where it does not fire
#     (an eval with exp_alerts: [], or other series that stay out);
#   - queries.yaml is YAML whose every query reads taskq.metrics().
# The checker first proves on a bad copy that it catches a rule whose test
# no longer holds, and an alert without a test.  Without promtool (Debian's
# prometheus package, make deps) it fails: the files would go unchecked.
# Exit 0 when all hold; otherwise print each violation and exit 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

if ! command -v promtool >/dev/null; then
    echo "prometheus.sh: promtool not found (Debian's prometheus package: make deps)"
    exit 1
fi

# check DIR: print one line per violation of the files in DIR.
check() {
    local dir=$1 out
    if ! out=$(cd "$dir" && promtool check rules taskq.rules.yml 2>&1); then
        echo "$dir/taskq.rules.yml: promtool check rules failed:"
        echo "$out"
    fi
    if ! out=$(cd "$dir" && promtool test rules taskq.rules.test.yml 2>&1); then
        echo "$dir/taskq.rules.test.yml: promtool test rules failed:"
        echo "$out"
    fi
    python3 - "$dir" <<'PY'
import sys, yaml
d = sys.argv[1]
rules = yaml.safe_load(open(f"{d}/taskq.rules.yml"))
tests = yaml.safe_load(open(f"{d}/taskq.rules.test.yml"))
alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
fires, quiet = set(), set()
for t in tests.get("tests", []):
    for a in t.get("alert_rule_test", []):
        if a.get("exp_alerts"):
            fires.add(a["alertname"])
        else:
            quiet.add(a["alertname"])
for a in sorted(alerts - fires):
    print(f"{d}/taskq.rules.test.yml: no test where {a} fires")
for a in sorted(alerts - quiet):
    print(f"{d}/taskq.rules.test.yml: no test where {a} does not fire (exp_alerts: [])")
queries = yaml.safe_load(open(f"{d}/queries.yaml"))
for key, q in queries.items():
    if "taskq.metrics()" not in q.get("query", ""):
        print(f"{d}/queries.yaml: {key} does not read taskq.metrics()")
    if not q.get("metrics"):
        print(f"{d}/queries.yaml: {key} has no metrics")
PY
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A threshold moved under the tests: promtool test rules must fail.
cp contrib/prometheus/* "$tmp/"
sed -i 's/taskq_tasks_ready > 1000/taskq_tasks_ready > 5000/' "$tmp/taskq.rules.yml"
if [[ -z $(check "$tmp") ]]; then
    echo "prometheus.sh: a broken rule was not caught"
    exit 1
fi
# An alert without a test.
cp contrib/prometheus/* "$tmp/"
cat >>"$tmp/taskq.rules.yml" <<'YML'
      - alert: TaskqUntested
        expr: taskq_tasks_ready > 1
YML
if ! check "$tmp" | grep -q 'no test where TaskqUntested fires'; then
    echo "prometheus.sh: an alert without a test was not caught"
    exit 1
fi

out=$(check contrib/prometheus)
if [[ -n $out ]]; then
    echo "$out"
    exit 1
fi
echo "prometheus.sh: ok"
