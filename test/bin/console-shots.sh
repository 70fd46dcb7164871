#!/usr/bin/env bash
# test/bin/console-shots.sh — `make console-shots`.
# Owns: the screenshots of docs/console.md.  Runs the browser suite alone
# (test/bin/test.sh with TASKQ_SUITES=console and KEEP=1, so that its log
# folder stays), and when it passed, puts the PNGs it wrote to
# $TQ_WORK/log/console-shots into docs/console/ (the same names replaced,
# others left), each reduced to 256 colours (pngquant) and recompressed
# losslessly (optipng): a page of the console has few colours, and the
# files get four to five times smaller.  Then removes the kept temp dir.
# As root, installs pngquant and optipng with apt when they are missing;
# without them the PNGs are copied as they are.
# TASKQ_PRIVATE_INSTALL (default 1 here): taskq in a private copy of
# PostgreSQL, not the system's (test/bin/lib.sh).
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dest=$TQ_ROOT/docs/console
log=$(mktemp /tmp/taskq-console-shots.XXXXXX)
kept=""
cleanup() {
    [[ -n $kept && $kept =~ ^/tmp/taskq-run\.[A-Za-z0-9]+$ ]] && rm -rf "$kept"
    rm -f "$log"
}
trap cleanup EXIT

rc=0
TASKQ_PRIVATE_INSTALL=${TASKQ_PRIVATE_INSTALL:-1} TASKQ_SUITES=console KEEP=1 \
    bash "$TQ_ROOT/test/bin/test.sh" 2>&1 | tee "$log" || rc=$?
kept=$(sed -n 's/^kept: \(\/tmp\/taskq-run\.[A-Za-z0-9]*\) .*/\1/p' "$log" | tail -n 1)
if [[ $rc -ne 0 ]] || ! tail -n 1 "$log" | grep -q ' 0 failed$'; then
    echo "console-shots: the console suite failed: no screenshots taken over" >&2
    exit 1
fi
shots=$kept/log/console-shots
if [[ -z $kept || ! -d $shots ]] || ! compgen -G "$shots/*.png" >/dev/null; then
    echo "console-shots: the suite wrote no screenshots (${shots:-no kept temp dir})" >&2
    exit 1
fi

if tq_is_root && ! { command -v pngquant && command -v optipng; } >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends pngquant optipng \
        >/dev/null 2>&1 || tq_warn "console-shots: could not install pngquant and optipng: PNGs as they are"
fi
mkdir -p "$dest"
for f in "$shots"/*.png; do
    name=$(basename "$f")
    before=$(stat -c %s "$f")
    if command -v pngquant >/dev/null; then
        pngquant --force --skip-if-larger --strip --quality 70-95 --output "$dest/$name" -- "$f" ||
            cp "$f" "$dest/$name"
    else
        cp "$f" "$dest/$name"
    fi
    command -v optipng >/dev/null && optipng -quiet -o2 -strip all "$dest/$name"
    chmod 644 "$dest/$name"
    printf 'console-shots: docs/console/%-28s %5s kB (taken %5s kB)\n' "$name" \
        "$(($(stat -c %s "$dest/$name") / 1024))" "$((before / 1024))"
done
