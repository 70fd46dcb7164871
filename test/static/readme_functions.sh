#!/usr/bin/env bash
# test/static/readme_functions.sh — every function the current schema
# (src/sql/taskq.sql) creates has its row in the README's function table
# ("| `name(" or "| [`name(" at the start of a row), and the table names no
# function the schema lacks.  Proves first on a bad README that it catches
# both.  Exit 0 when both hold; otherwise print each and exit 1.
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

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'CREATE FUNCTION taskq.a(x int)\nCREATE FUNCTION taskq."b"(y int)\n' >"$tmp/s.sql"
printf '| `a(x int)` | void |\n| `c(z int)` | void |\n' >"$tmp/r.md"
if [[ $(check "$tmp/s.sql" "$tmp/r.md" | wc -l) -ne 2 ]]; then
    echo "readme_functions.sh self-test: a missing and an extra function were not both caught" >&2
    exit 1
fi

out=$(check src/sql/taskq.sql README.md)
if [[ -n $out ]]; then
    echo "$out"
    exit 1
fi
echo "readme_functions: the README's table lists every function of the schema"
