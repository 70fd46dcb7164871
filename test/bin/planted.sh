# shellcheck shell=bash
# test/bin/planted.sh — sourced by the static checks that prove themselves
# on planted trees (test/static/layers.sh, test/static/compat.sh): a bad
# tree must give the violation it plants, before the check runs on src/.
# The sourcing script defines check DIR (one line per violation).

planted_tmp=$(mktemp -d)
trap 'rm -rf "$planted_tmp"' EXIT

# plant NAME: a tree in $planted_tmp/NAME from the here-doc lines "path|content"
plant() {
    local name=$1 line path
    mkdir -p "$planted_tmp/$name"
    while IFS= read -r line; do
        path=${line%%|*}
        mkdir -p "$planted_tmp/$name/$(dirname "$path")"
        printf '%b\n' "${line#*|}" >>"$planted_tmp/$name/$path"
    done
}

# bad NAME PATTERN: the tree NAME gives a violation matching PATTERN
bad() {
    local name=$1 pattern=$2 out
    plant "$name"
    out=$(check "$planted_tmp/$name")
    if ! grep -qE -- "$pattern" <<<"$out"; then
        echo "${0##*/} self-test: the violation in tree '$name' was not caught" >&2
        [[ -z $out ]] || echo "$out" >&2
        exit 1
    fi
}

# good_then_src SUMMARY: the planted tree "good" gives no violation, then
# src/ none; prints SUMMARY when both hold, else the violations (exit 1).
good_then_src() {
    local out
    out=$(check "$planted_tmp/good")
    if [[ -n $out ]]; then
        echo "${0##*/} self-test: the good tree gave violations:" >&2
        echo "$out" >&2
        exit 1
    fi
    out=$(check src)
    if [[ -n $out ]]; then
        echo "$out"
        exit 1
    fi
    echo "$1"
}
