#!/usr/bin/env bash
# test/static/meta.sh — META.json, the PGXN distribution metadata:
#   - it parses as JSON;
#   - it has the keys PGXN's meta spec 1.0.0 requires (name, abstract,
#     version, maintainer, license, provides, meta-spec), and name is taskq;
#   - it has no key the spec does not define, at the top level, in
#     provides.taskq, meta-spec and prereqs (custom keys only as x_ or
#     X_ ...: PGXN rejects a distribution with any other);
#   - release_status is one of the spec's (stable, testing, unstable);
#   - provides.taskq names files that exist (the install script's source,
#     the documentation).
# Its versions are test/static/versions.sh's to check.
# The checker first proves on bad copies that it catches a key outside the
# spec and a file that is not JSON.
# Exit 0 when all hold; otherwise print each violation and exit 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# check META: print one line per violation.
check() {
    python3 - "$1" <<'PY'
import json, sys, os

meta_file = sys.argv[1]
v = []
try:
    with open(meta_file, encoding="utf-8") as f:
        meta = json.load(f)
except (OSError, ValueError) as e:
    print(f"{meta_file}: does not parse: {e}")
    sys.exit(0)
if not isinstance(meta, dict):
    print(f"{meta_file}: not a JSON object")
    sys.exit(0)

# PGXN meta spec 1.0.0 (https://pgxn.org/spec/): the keys it defines.
TOP = {"name", "abstract", "description", "version", "maintainer", "license",
       "provides", "meta-spec", "prereqs", "release_status", "resources",
       "tags", "no_index", "generated_by"}
PROVIDES = {"file", "version", "abstract", "docfile"}
META_SPEC = {"version", "url"}
PHASES = {"configure", "build", "runtime", "test", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}

def unknown(where, obj, allowed):
    if isinstance(obj, dict):
        for key in sorted(obj):
            if key not in allowed and not key.startswith(("x_", "X_")):
                v.append(f"{where}key {key!r} is not in the meta spec")

unknown("", meta, TOP)
unknown("meta-spec: ", meta.get("meta-spec"), META_SPEC)
if isinstance(meta.get("provides"), dict):
    for ext, p in meta["provides"].items():
        unknown(f"provides.{ext}: ", p, PROVIDES)
if isinstance(meta.get("prereqs"), dict):
    unknown("prereqs: ", meta["prereqs"], PHASES)
    for phase, rel in meta["prereqs"].items():
        unknown(f"prereqs.{phase}: ", rel, RELATIONS)
if meta.get("release_status", "stable") not in ("stable", "testing", "unstable"):
    v.append(f"release_status is {meta['release_status']!r}, not stable, testing or unstable")

for key in ("name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"):
    if key not in meta or meta[key] in ("", None, {}, []):
        v.append(f"missing required key {key}")
if meta.get("name") != "taskq":
    v.append(f"name is {meta.get('name')!r}, not 'taskq'")
if not isinstance(meta.get("meta-spec"), dict) or meta["meta-spec"].get("version") != "1.0.0":
    v.append("meta-spec.version is not 1.0.0")
taskq = meta.get("provides", {}).get("taskq") if isinstance(meta.get("provides"), dict) else None
if not isinstance(taskq, dict):
    v.append("provides.taskq is missing")
else:
    for key in ("file", "docfile"):
        path = taskq.get(key)
        if not path:
            v.append(f"provides.taskq.{key} is missing")
        elif not os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(meta_file)), path)):
            v.append(f"provides.taskq.{key} {path} does not exist")
prereq = meta.get("prereqs", {}).get("runtime", {}).get("requires", {}).get("PostgreSQL")
if not prereq:
    v.append("prereqs.runtime.requires.PostgreSQL is missing")
for line in v:
    print(f"{meta_file}: {line}")
PY
}

fail=0
report() { echo "meta: $1" >&2; fail=1; }

# --- self-test: keys the spec does not define are caught ---------------------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - META.json "$tmp/META.json" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1], encoding="utf-8"))
meta["homepage"] = "x"                       # belongs in resources
meta["x_note"] = "custom keys are allowed"
meta["provides"]["taskq"]["docs"] = "x"
meta["prereqs"]["runtime"]["needs"] = {}
meta["release_status"] = "beta"
json.dump(meta, open(sys.argv[2], "w", encoding="utf-8"))
PY
out=$(check "$tmp/META.json")
[[ $out == *"key 'homepage' is not"* && $out == *"provides.taskq: key 'docs'"* &&
    $out == *"prereqs.runtime: key 'needs'"* && $out == *"release_status is 'beta'"* ]] ||
    report "self-test: the checker misses a key outside the spec: ${out:-no violation}"
[[ $out != *x_note* ]] || report "self-test: the checker rejects an x_ key: $out"
printf '{"name": "taskq",' >"$tmp/bad.json"
check "$tmp/bad.json" | grep -q "does not parse" ||
    report "self-test: the checker misses a file that is not JSON"

# --- the real META.json -------------------------------------------------------
[[ -f META.json ]] || { report "META.json not found"; exit 1; }
while IFS= read -r line; do
    [[ -n $line ]] && report "$line"
done < <(check META.json)

exit $fail
