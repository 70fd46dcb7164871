#!/usr/bin/env bash
# test/bin/dist.sh — `make check-dist`.
# Owns: proving that the PGXN source bundle make dist writes is one a user
# can build: make dist -> unzip into a temp dir -> make and make install
# (DESTDIR, a temp dir) with PGXS there -> check what was installed.
#   - the zip holds one directory, taskq-<META.json's version>/, with what
#     git tracks and nothing .gitattributes marks export-ignore, and no
#     built file (the default version's install script is the build's);
#   - the bundle's own build makes src/sql/taskq--<default_version>.sql,
#     a copy of src/sql/taskq.sql;
#   - the install has taskq.so, taskq.control, the default version's
#     install script, taskq--0.1.sql and every update script the bundle
#     holds, and taskq-worker.
# PG_CONFIG (default PostgreSQL 15's) picks the server to build against.
# Needs git, unzip, and what make needs (make deps).  Not a suite of make
# test: it builds taskq once more, outside the test cluster.
set -euo pipefail
export LC_ALL=C

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
fail=0
bad() { echo "dist: $1" >&2; fail=1; }

for tool in git unzip python3 make "$PG_CONFIG"; do
    command -v "$tool" >/dev/null || { echo "dist: $tool not found" >&2; exit 1; }
done

cd "$root"
version=$(python3 -c 'import json; print(json.load(open("META.json"))["version"])')
default=$(sed -n "s/^default_version = '\(.*\)'\$/\1/p" taskq.control)
zip=$(make -s --no-print-directory dist | tail -n 1)
[[ $zip == "dist/taskq-$version.zip" && -f $zip ]] ||
    { echo "dist: make dist did not write dist/taskq-$version.zip (it said: $zip)" >&2; exit 1; }
echo "dist: $zip ($(unzip -Z1 "$zip" | grep -vc '/$') files)"

tmp=$(mktemp -d /tmp/taskq-dist.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# --- the bundle's contents ---------------------------------------------------
unzip -q "$zip" -d "$tmp/unpacked"
tops=$(find "$tmp/unpacked" -mindepth 1 -maxdepth 1 -printf '%f\n')
[[ $tops == "taskq-$version" ]] || bad "the zip's top level is not taskq-$version/ alone: $tops"
src=$tmp/unpacked/taskq-$version
[[ -d $src ]] || { echo "dist: no taskq-$version/ in the zip" >&2; exit 1; }

# Exactly HEAD's tracked files, less the export-ignore ones (a file is left
# out when it or a directory above it is marked, as git archive does).
git ls-tree -r -z --name-only HEAD | python3 -c '
import subprocess, sys
files = [p for p in sys.stdin.buffer.read().decode().split("\0") if p]
paths = sorted({"/".join(f.split("/")[:i]) for f in files for i in range(1, f.count("/") + 2)})
out = subprocess.run(["git", "check-attr", "-z", "--stdin", "export-ignore"],
                     input="\0".join(paths).encode(), capture_output=True, check=True).stdout
f = out.decode().split("\0")
ignored = {p for p, _, v in zip(f[0::3], f[1::3], f[2::3]) if v == "set"}
for path in files:
    parts = path.split("/")
    if not any("/".join(parts[:i]) in ignored for i in range(1, len(parts) + 1)):
        print(path)' | sort >"$tmp/want"
(cd "$src" && find . -type f -printf '%P\n' | sort) >"$tmp/got"
if ! cmp -s "$tmp/want" "$tmp/got"; then
    bad "the bundle's files are not HEAD's tracked files less export-ignore:"
    diff "$tmp/want" "$tmp/got" | sed -n '1,40p' >&2 || true
fi
for f in .ci/run .gitattributes .gitignore "src/sql/taskq--$default.sql"; do
    [[ ! -e $src/$f ]] || bad "the bundle holds $f"
done
for f in META.json Makefile taskq.control src/sql/taskq.sql src/sql/taskq--0.1.sql README.md; do
    [[ -f $src/$f ]] || bad "the bundle lacks $f"
done
# Executable bits survive (make test runs only executable test/static/*.sh).
[[ -x $src/test/static/meta.sh ]] || bad "test/static/meta.sh lost its executable bit"

# --- the bundle's own build ---------------------------------------------------
jobs=$(nproc 2>/dev/null || echo 2)
if ! make -C "$src" -s -j"$jobs" PG_CONFIG="$PG_CONFIG" >"$tmp/build.log" 2>&1; then
    tail -n 40 "$tmp/build.log" >&2
    echo "dist: make in the unpacked bundle failed" >&2
    exit 1
fi
built=$src/src/sql/taskq--$default.sql
if [[ ! -f $built ]]; then
    bad "the build did not make src/sql/taskq--$default.sql"
elif ! cmp -s "$built" "$src/src/sql/taskq.sql"; then
    bad "src/sql/taskq--$default.sql is not a copy of src/sql/taskq.sql"
fi
if ! make -C "$src" -s install PG_CONFIG="$PG_CONFIG" DESTDIR="$tmp/inst" >>"$tmp/build.log" 2>&1; then
    tail -n 40 "$tmp/build.log" >&2
    echo "dist: make install DESTDIR=... in the unpacked bundle failed" >&2
    exit 1
fi

# --- what was installed --------------------------------------------------------
lib=$tmp/inst$("$PG_CONFIG" --pkglibdir)
ext=$tmp/inst$("$PG_CONFIG" --sharedir)/extension
bin=$tmp/inst$("$PG_CONFIG" --bindir)
want=("$lib/taskq.so" "$ext/taskq.control" "$ext/taskq--$default.sql" "$ext/taskq--0.1.sql"
    "$bin/taskq-worker")
updates=0
for f in "$src"/src/sql/taskq--*--*.sql; do
    [[ -f $f ]] || continue
    want+=("$ext/$(basename "$f")")
    updates=$((updates + 1))
done
((updates > 0)) || bad "the bundle holds no update script"
for f in "${want[@]}"; do
    [[ -f $f ]] || bad "not installed: ${f#"$tmp/inst"}"
done
cmp -s "$ext/taskq--$default.sql" "$src/src/sql/taskq.sql" ||
    bad "the installed taskq--$default.sql is not src/sql/taskq.sql"

if [[ $fail == 0 ]]; then
    echo "dist: taskq-$version builds with $("$PG_CONFIG" --version) and installs taskq.so," \
        "taskq.control, taskq--$default.sql, taskq--0.1.sql, $updates update scripts and taskq-worker"
fi
exit $fail
