#!/usr/bin/env bash
# test/static/sizes.sh — what keeps the house easy to read and carry on:
#   - no C file of src/ is over 900 lines (a file that grows past it holds
#     more than one idea: split it by idea, as src/README.md maps them);
#   - every function is declared in one header only (extern in a .h of
#     src/; a second declaration drifts from the first);
#   - README.md is a reference of at most 600 lines, docs/performance.md a
#     summary of at most 300 (guides go to docs/, dated measurements to
#     bench/journal.md).
# The checker first proves on a planted tree that it catches each kind of
# violation, then runs on the repository.
# Exit 0 when all hold; otherwise print each violation and exit 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

MAX_C=900
MAX_README=600
MAX_PERFORMANCE=300

# check ROOT: print one line per violation under ROOT (a repository's shape).
check() {
    local root=$1 f n
    while IFS= read -r -d '' f; do
        n=$(wc -l <"$f")
        ((n <= MAX_C)) || echo "${f#"$root"/}: $n lines (at most $MAX_C: split it by idea)"
    done < <(find "$root/src" -name '*.[ch]' -print0 | sort -z)
    n=$(wc -l <"$root/README.md")
    ((n <= MAX_README)) || echo "README.md: $n lines (at most $MAX_README: guides go to docs/)"
    n=$(wc -l <"$root/docs/performance.md")
    ((n <= MAX_PERFORMANCE)) ||
        echo "docs/performance.md: $n lines (at most $MAX_PERFORMANCE: dated runs go to bench/journal.md)"
    # function names declared extern in more than one header, or twice in one
    # shellcheck disable=SC2016  # perl and awk code, not shell
    find "$root/src" -name '*.h' -print0 | sort -z | xargs -0 perl -0777 -ne '
        s{/\*.*?\*/}{}gs;
        while (/^extern\b([^;]*?)\b(\w+)\s*\(/mg) { print "$2 $ARGV\n"; }
    ' | sort | awk -v root="$root/" '
        { sub(root, "", $2); if ($1 == last) { print "function " $1 " declared twice: " where " and " $2 } last = $1; where = $2 }'
}

# Self-test on a planted tree: each violation must be caught.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/queue" "$tmp/docs"
seq 1 $((MAX_C + 1)) | sed 's|^|/* line */|' >"$tmp/src/queue/big.c"
printf 'extern void taskq_twice(int a);\n' >"$tmp/src/queue/a.h"
printf '/* extern void taskq_commented(void); */\nextern int\ttaskq_twice(int a);\n' >"$tmp/src/queue/b.h"
seq 1 $((MAX_README + 1)) >"$tmp/README.md"
seq 1 $((MAX_PERFORMANCE + 1)) >"$tmp/docs/performance.md"
out=$(check "$tmp")
for want in "queue/big.c: $((MAX_C + 1)) lines" "README.md: $((MAX_README + 1)) lines" \
    "docs/performance.md: $((MAX_PERFORMANCE + 1)) lines" "function taskq_twice declared twice"; do
    if ! grep -qF -- "$want" <<<"$out"; then
        echo "sizes.sh self-test: not caught: $want" >&2
        [[ -z $out ]] || echo "$out" >&2
        exit 1
    fi
done
if grep -q taskq_commented <<<"$out"; then
    echo "sizes.sh self-test: a declaration in a comment was counted" >&2
    exit 1
fi

out=$(check .)
if [[ -n $out ]]; then
    echo "$out"
    exit 1
fi
echo "sizes: no C file over $MAX_C lines, one declaration per function, README.md <= $MAX_README lines, docs/performance.md <= $MAX_PERFORMANCE"
