#!/usr/bin/env bash
# test/static/meta.sh — META.json, the PGXN distribution metadata:
#   - it parses as JSON;
#   - it has the keys PGXN's meta spec 1.0.0 requires (name, abstract,
#     version, maintainer, license, provides, meta-spec), and name is taskq;
#   - its version and provides.taskq.version are taskq.control's
#     default_version, written as a semantic version as PGXN requires
#     ('0.5' is 0.5.0), so that a release bumps all three together;
#   - provides.taskq names files that exist (the install script's source,
#     the documentation).
# The checker first proves on a bad copy that it catches a wrong version.
# Exit 0 when all hold; otherwise print each violation and exit 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# check META CONTROL: print one line per violation.
check() {
    python3 - "$1" "$2" <<'PY'
import json, re, sys, os

meta_file, control_file = sys.argv[1], sys.argv[2]
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

with open(control_file, encoding="utf-8") as f:
    m = re.search(r"^default_version = '([^']*)'$", f.read(), re.M)
if not m:
    print(f"{control_file}: no default_version")
    sys.exit(0)
control = m.group(1)
parts = control.split(".")
semver = ".".join(parts + ["0"] * (3 - len(parts))) if len(parts) < 3 else control

for key in ("name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"):
    if key not in meta or meta[key] in ("", None, {}, []):
        v.append(f"missing required key {key}")
if meta.get("name") != "taskq":
    v.append(f"name is {meta.get('name')!r}, not 'taskq'")
if not isinstance(meta.get("meta-spec"), dict) or meta["meta-spec"].get("version") != "1.0.0":
    v.append("meta-spec.version is not 1.0.0")
if meta.get("version") != semver:
    v.append(f"version is {meta.get('version')!r}; taskq.control's default_version {control} is {semver!r}")
taskq = meta.get("provides", {}).get("taskq") if isinstance(meta.get("provides"), dict) else None
if not isinstance(taskq, dict):
    v.append("provides.taskq is missing")
else:
    if taskq.get("version") != semver:
        v.append(f"provides.taskq.version is {taskq.get('version')!r}, not {semver!r}")
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

# --- self-test: a META.json one version behind is caught ---------------------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - META.json "$tmp/META.json" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1], encoding="utf-8"))
meta["version"] = meta["provides"]["taskq"]["version"] = "0.0.1"
json.dump(meta, open(sys.argv[2], "w", encoding="utf-8"))
PY
out=$(check "$tmp/META.json" taskq.control)
[[ $out == *"version is '0.0.1'"* && $out == *"provides.taskq.version is '0.0.1'"* ]] ||
    report "self-test: the checker misses a wrong version: ${out:-no violation}"
printf '{"name": "taskq",' >"$tmp/bad.json"
check "$tmp/bad.json" taskq.control | grep -q "does not parse" ||
    report "self-test: the checker misses a file that is not JSON"

# --- the real META.json -------------------------------------------------------
[[ -f META.json ]] || { report "META.json not found"; exit 1; }
while IFS= read -r line; do
    [[ -n $line ]] && report "$line"
done < <(check META.json taskq.control)

exit $fail
