#!/usr/bin/env bash
# test/bin/deb.sh — `make deb`.
# Owns: building the Debian packages of the tree (debian/) and checking them
# with lintian; the .deb files land in $DEB_OUT (default dist/deb/).
#
#   test/bin/deb.sh        build here, for the PostgreSQL majors whose
#                          postgresql-server-dev-N is installed (15 on
#                          Debian 12): postgresql-15-taskq, taskq-worker,
#                          taskq-console, python3-taskq
#   test/bin/deb.sh 17|18  the same in the Debian chroot that packages that
#                          major (test/bin/pg_chroot.sh --run), the .deb
#                          files copied out to $DEB_OUT
#
# As root: installs the build dependencies with apt (quietly: the log is
# printed only when apt fails), copies the tree (tracked and untracked,
# not ignored files, as make test does) to a temp dir outside the
# repository, regenerates debian/control there for the majors installed,
# and runs dpkg-buildpackage -us -uc -b, whose build runs the regress and
# isolation suites against the packaged extension (debian/rules).  Uses only
# package names that Debian 12, 13 and 14 all have.
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

root=$TQ_ROOT
out=${DEB_OUT:-$root/dist/deb}
[[ $out == /* ]] || out=$PWD/$out
t0=$(tq_now)

if [[ $(id -u) -ne 0 ]]; then
    echo "deb: run as root (apt-get, and the build's test cluster runs as user postgres)" >&2
    exit 1
fi

# The packages' own file names, for clearing out an earlier build's.
clear_out() {
    mkdir -p "$out"
    rm -f "$out"/postgresql-*-taskq_*.deb "$out"/postgresql-*-taskq-dbgsym_*.deb \
        "$out"/taskq-worker_*.deb "$out"/taskq-worker-dbgsym_*.deb "$out"/taskq-console_*.deb \
        "$out"/python3-taskq_*.deb
}

# ------------------------------------------------- another major: a chroot
# (15 is this machine's own: make deb PG=15 is make deb.)
if [[ $# -gt 0 && $1 != 15 ]]; then
    pg=$1
    case $pg in
        17) suite=trixie ;;
        18) suite=forky ;;
        *) echo "usage: $0 [15|17|18]" >&2; exit 2 ;;
    esac
    # pg_chroot.sh copies the tree to <chroot>/build/taskq and runs this
    # script there (no argument: a build for the chroot's own major).
    bash "$root/test/bin/pg_chroot.sh" --run "$pg" -- \
        env DEB_OUT=/build/taskq/dist/deb bash test/bin/deb.sh
    built=${TASKQ_CHROOTS:-/var/lib/taskq-chroots}/$suite/build/taskq/dist/deb
    clear_out
    cp "$built"/*.deb "$out"/
    echo "deb: PostgreSQL $pg packages in $out"
    exit 0
fi

# ------------------------------------------------------ build dependencies
work=$(mktemp -d /tmp/taskq-deb.XXXXXX)
# The build's test cluster runs as user postgres and loads taskq.so from
# the package directory below $work.
chmod 755 "$work"
# Kept when the build fails, for its logs.
cleanup() {
    if [[ $? -eq 0 ]]; then rm -rf "$work"; else echo "deb: logs kept in $work" >&2; fi
}
trap cleanup EXIT
log=$work/apt.log
export DEBIAN_FRONTEND=noninteractive
apt_get() { apt-get -q -o Dpkg::Use-Pty=0 -o APT::Color=0 "$@" >>"$log" 2>&1; }
# The log of apt and pg_buildext, printed only when a step fails.
show_log_fail() { cat "$log" >&2; echo "deb: $1 failed" >&2; exit 1; }

# What the build needs before its own Build-Depends can be read:
# pg_buildext (to write debian/control), dpkg-buildpackage, and lintian.
BOOTSTRAP=(postgresql-server-dev-all dpkg-dev lintian)
installed=" $(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${BOOTSTRAP[@]}" 2>/dev/null |
    awk '$2 == "ii" { printf "%s ", $1 }' || true)"
missing=()
for p in "${BOOTSTRAP[@]}"; do
    [[ $installed == *" $p "* ]] || missing+=("$p")
done
if [[ ${#missing[@]} -gt 0 ]]; then
    echo "deb: installing ${missing[*]} (log: $log)"
    apt_get install -y --no-install-recommends "${missing[@]}" ||
        { apt_get update && apt_get install -y --no-install-recommends "${missing[@]}"; } ||
        show_log_fail "apt-get install ${missing[*]}"
fi

# --------------------------------------------------------- the tree's copy
src=$work/taskq
mkdir -p "$src"
tq_copy_tree "$root" "$src"
cd "$src"
# The majors to build for: those whose server-dev package is installed, so
# that a machine with extra majors from elsewhere (apt.postgresql.org's
# list, say) does not ask for a pg_config it lacks.  The committed
# debian/control is Debian 12's (15); pg_buildext's check in the build
# would stop on any other list, so it is written afresh here.
# (Newer pg_buildext also lists the build dependencies not installed yet.)
export PG_SUPPORTED_VERSIONS=installed
pg_buildext updatecontrol >>"$log" 2>&1 || show_log_fail "pg_buildext updatecontrol"

# The Build-Depends of debian/control, read by apt itself.
apt_get build-dep -y --no-install-recommends "$src" ||
    { apt_get update && apt_get build-dep -y --no-install-recommends "$src"; } ||
    show_log_fail "apt-get build-dep"
majors=$(pg_buildext supported-versions | xargs)   # build-dep may add one
pg_buildext updatecontrol >>"$log" 2>&1 || show_log_fail "pg_buildext updatecontrol"
echo "deb: building for PostgreSQL $majors in $src"

# ------------------------------------------------------------------ build
blog=$work/build.log
# A plain environment: the caller's PATH may lead to another python3 (a
# pyenv's, say) or pg_config than the system's the packages are for.
mkdir -p "$work/home"
if ! env -i PATH="$TQ_SYS_PATH" HOME="$work/home" LC_ALL=C.UTF-8 \
    PG_SUPPORTED_VERSIONS="$PG_SUPPORTED_VERSIONS" ${DEB_BUILD_OPTIONS:+DEB_BUILD_OPTIONS="$DEB_BUILD_OPTIONS"} \
    dpkg-buildpackage -us -uc -b >"$blog" 2>&1; then
    tail -n 150 "$blog"
    echo "deb: dpkg-buildpackage failed (the last 150 lines of its log above)" >&2
    exit 1
fi
# The build-time suites' summaries (pg_regress prints one per suite).
grep -E '^(# | )?(All [0-9]+ tests passed|[0-9]+ of [0-9]+ tests (passed|failed))|^### (PostgreSQL|End) .*installcheck' "$blog" |
    sed -e 's/^\(# \| \)//' -e 's/^/deb:   /' || true

changes=$(ls "$work"/taskq_*.changes)
llog=$work/lintian.log
lrc=0
# lintian as an unprivileged user, as it asks; it only reads the packages.
runuser -u nobody -- env -i PATH="$TQ_SYS_PATH" HOME=/tmp LC_ALL=C.UTF-8 \
    lintian --fail-on error,warning --display-info "$changes" >"$llog" 2>&1 || lrc=$?
if [[ -s $llog ]]; then sed 's/^/deb: lintian: /' "$llog"; fi
if [[ $lrc -ne 0 ]]; then
    echo "deb: lintian found errors or warnings (above)" >&2
    exit 1
fi
echo "deb: lintian: no errors or warnings"

clear_out
cp "$work"/*.deb "$out"/
for f in "$out"/*.deb; do
    printf 'deb:   %-50s %6s kB\n' "$(basename "$f")" "$(($(stat -c %s "$f") / 1024))"
done
echo "deb: packages in $out ($(($(tq_now) - t0))s)"
