#!/usr/bin/env bash
# test/static/readme_functions.sh — every function the current schema
# (src/sql/taskq.sql) creates has its row in the README's function table
# ("| `name(" or "| [`name(" at the start of a row), and the table names no
# function the schema lacks.  Each row's signature is the schema's argument
# list (whitespace aside), and its roles column the roles the schema grants
# EXECUTE to (P taskq_producer, W taskq_worker, M taskq_monitor, A taskq_admin; "none" when it
# grants none; words in parentheses after them are notes).  Proves first on
# a bad README that it catches each.  Exit 0 when all hold; otherwise print
# each and exit 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# check SCHEMA README: one line per function missing from, or extra in, the table.
check() {
    local schema=$1 readme=$2
    comm -3 \
        <(sed -n 's/^CREATE FUNCTION taskq\.\("\{0,1\}[a-z_]*"\{0,1\}\)(.*/\1/p' "$schema" | tr -d '"' | sort -u) \
        <(sed -n 's/^| \[\{0,1\}`"\{0,1\}\([a-z_]*\)"\{0,1\}(.*/\1/p' "$readme" | sort -u) |
        sed 's/^\t\(.*\)/in the README, not in the schema: \1/; s/^\([^i].*\)/missing from the README: \1/'
}

# check_rows SCHEMA README: one line per row whose signature or roles differ
# from the schema's.
check_rows() {
    python3 - "$1" "$2" <<'PY'
import re, sys

schema_file, readme_file = sys.argv[1], sys.argv[2]
schema = open(schema_file, encoding="utf-8").read()
norm = lambda s: re.sub(r"\s+", " ", s).replace("( ", "(").replace(" )", ")").strip()

def args_at(text, i):
    """The text from the "(" at i to its matching ")", both included."""
    depth = 0
    for j in range(i, len(text)):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            return text[i:j + 1]
    return text[i:]

sigs, roles = {}, {}
for m in re.finditer(r'^CREATE FUNCTION taskq\.("?[a-z_]+"?)\(', schema, re.M):
    name = m.group(1).strip('"')
    sigs[name] = norm(m.group(1) + args_at(schema, m.end() - 1))
    roles.setdefault(name, set())
letter = {"taskq_producer": "P", "taskq_worker": "W", "taskq_monitor": "M", "taskq_admin": "A"}
for m in re.finditer(r'^GRANT EXECUTE ON FUNCTION\s+taskq\.("?[a-z_]+"?)\(.*?\)\s+TO\s+([^;]*);',
                     schema, re.M | re.S):
    name = m.group(1).strip('"')
    for r in m.group(2).split(","):
        roles.setdefault(name, set()).add(letter.get(r.strip(), r.strip()))

row = re.compile(r'^\| \[?`("?([a-z_]+)"?\(.*?)`(?:\]\([^)]*\))? \|[^|]*\| ([^|]*) \|')
for line in open(readme_file, encoding="utf-8"):
    m = row.match(line)
    if not m or m.group(2) not in sigs:
        continue
    name, sig, cell = m.group(2), norm(m.group(1)), m.group(3)
    if sig != sigs[name]:
        print(f"{name}: the README's signature {sig} is not the schema's {sigs[name]}")
    given = cell.split("(")[0].strip()
    want = ", ".join(sorted(roles[name], key="PWMA".index)) if roles[name] else "none"
    if given != want:
        print(f"{name}: the README's roles {given!r} are not the schema's {want!r}")
PY
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'CREATE FUNCTION taskq.a(x int)\nCREATE FUNCTION taskq."b"(y int)\n' >"$tmp/s.sql"
# shellcheck disable=SC2016  # backquotes are the README's, not the shell's
printf '| `a(x int)` | void |\n| `c(z int)` | void |\n' >"$tmp/r.md"
if [[ $(check "$tmp/s.sql" "$tmp/r.md" | wc -l) -ne 2 ]]; then
    echo "readme_functions.sh self-test: a missing and an extra function were not both caught" >&2
    exit 1
fi
printf 'CREATE FUNCTION taskq.a(x int,\n    y text DEFAULT NULL)\nGRANT EXECUTE ON FUNCTION taskq.a(int, text)\n    TO taskq_worker, taskq_admin;\nCREATE FUNCTION taskq.b(y int)\n' >"$tmp/s.sql"
# shellcheck disable=SC2016
printf '| [`a(x int, y text)`](#a) | void | W, A | 0.1 |\n| `b(y int)` | void | P | 0.1 |\n' >"$tmp/r.md"
if [[ $(check_rows "$tmp/s.sql" "$tmp/r.md" | wc -l) -ne 2 ]]; then
    echo "readme_functions.sh self-test: a wrong signature and wrong roles were not both caught" >&2
    exit 1
fi

out=$(check src/sql/taskq.sql README.md; check_rows src/sql/taskq.sql README.md)
if [[ -n $out ]]; then
    echo "$out"
    exit 1
fi
echo "readme_functions: the README's table lists every function of the schema, with its signature and roles"
