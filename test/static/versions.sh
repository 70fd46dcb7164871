#!/usr/bin/env bash
# test/static/versions.sh — the version numbers a release bumps together:
#   - taskq.control's default_version (the extension's SQL version, X.Y);
#   - META.json's version and provides.taskq.version (PGXN: the
#     distribution's, a semantic version X.Y.Z; make dist names its bundle
#     after it);
#   - clients/python/pyproject.toml's [project] version (the Python
#     client, X.Y.Z), and the same in its package's __version__.
# Each must have taskq.control's major.minor: 0.6 goes with 0.6.0, and with
# 0.6.1, a release of the library or the client that left the SQL alone.
# The checker first proves on bad copies that it catches a version behind.
# Exit 0 when all hold; otherwise print each violation and exit 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# check CONTROL META PYPROJECT: print one line per violation.
check() {
    python3 - "$@" <<'PY'
import json, re, sys

control_file, meta_file, pyproject_file, init_file = sys.argv[1:5]

def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()

m = re.search(r"^default_version = '(\d+)\.(\d+)'$", read(control_file), re.M)
if not m:
    print(f"{control_file}: no default_version of the form X.Y")
    sys.exit(0)
want = (m.group(1), m.group(2))

def agree(where, version):
    m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version or "")
    if not m:
        print(f"{where} is {version!r}, not a version X.Y.Z")
    elif (m.group(1), m.group(2)) != want:
        print(f"{where} is {version}, not {'.'.join(want)}.Z as taskq.control's default_version {'.'.join(want)}")

try:
    meta = json.loads(read(meta_file))
    agree(f"{meta_file}: version", meta.get("version"))
    agree(f"{meta_file}: provides.taskq.version",
          (meta.get("provides") or {}).get("taskq", {}).get("version"))
except (OSError, ValueError, AttributeError) as e:
    print(f"{meta_file}: cannot read its versions: {e}")

# The [project] table's version (pyproject.toml has one version line there;
# tomllib is not in Debian 12's Python 3.11 without the package, a regex is).
project = re.search(r"^\[project\]\n(.*?)(?=^\[|\Z)", read(pyproject_file), re.M | re.S)
pv = re.search(r'^version\s*=\s*"([^"]*)"', project.group(1), re.M) if project else None
agree(f"{pyproject_file}: [project] version", pv.group(1) if pv else None)
iv = re.search(r'^__version__ = "([^"]*)"$', read(init_file), re.M)
if (iv.group(1) if iv else None) != (pv.group(1) if pv else None):
    print(f"{init_file}: __version__ is {iv.group(1) if iv else None!r}, not pyproject's "
          f"{pv.group(1) if pv else None!r}")
PY
}

files=(taskq.control META.json clients/python/pyproject.toml clients/python/taskq/__init__.py)
fail=0
report() { echo "versions: $1" >&2; fail=1; }

# --- self-test: a version behind is caught, a patch release is not ----------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf "default_version = '9.4'\n" >"$tmp/c.control"
printf '{"version": "9.4.2", "provides": {"taskq": {"version": "9.3.0"}}}\n' >"$tmp/META.json"
printf '[project]\nname = "x"\nversion = "9.5.0"\n\n[tool.x]\nversion = "9.4.0"\n' >"$tmp/pyproject.toml"
printf '__version__ = "9.4.0"\n' >"$tmp/__init__.py"
out=$(check "$tmp/c.control" "$tmp/META.json" "$tmp/pyproject.toml" "$tmp/__init__.py")
[[ $out == *"provides.taskq.version is 9.3.0"* && $out == *"[project] version is 9.5.0"* &&
    $out == *"__version__ is '9.4.0'"* ]] ||
    report "self-test: the checker misses a version behind or ahead: ${out:-no violation}"
[[ $out != *": version is 9.4.2"* ]] ||
    report "self-test: the checker rejects a patch release: $out"

# --- the real files -----------------------------------------------------------
for f in "${files[@]}"; do
    [[ -f $f ]] || { report "$f not found"; exit 1; }
done
while IFS= read -r line; do
    [[ -n $line ]] && report "$line"
done < <(check "${files[@]}")

exit $fail
