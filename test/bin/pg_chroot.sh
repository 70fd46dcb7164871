#!/usr/bin/env bash
# test/bin/pg_chroot.sh — taskq against a PostgreSQL major version that
# Debian 12 does not package, in a chroot of the Debian release that does,
# made with Debian's own debootstrap: its build, every suite of make test,
# or any command of the tree there.
#
#   test/bin/pg_chroot.sh 17              build against 17 (Debian 13, trixie)
#   test/bin/pg_chroot.sh 18              build against 18 (Debian 14, forky)
#   test/bin/pg_chroot.sh --test 17       make test there: test/bin/test.sh,
#                                         every suite, "N passed, N failed"
#   test/bin/pg_chroot.sh --run 17 -- CMD ARGS...
#                                         CMD as root in the chroot, in a
#                                         fresh copy of the tree (/build/taskq)
#   (make check-build PG=17, make test PG=17)
#
# As root.  Each chroot is made once (about 4 minutes; 2.3 GB on disk with the suites' packages) and
# kept for later runs in $TASKQ_CHROOTS/<suite> (default
# /var/lib/taskq-chroots), outside the repository; the tree is copied into
# <chroot>/build/taskq afresh each run (as test.sh copies it: tracked and
# untracked files, no build products).  The build is that of make test
# (TASKQ_ASSERT=1), and a compiler warning fails it, as -Werror would, but
# after listing every one (make -k: every file's errors, not the first's).
# The mirror is the one apt uses on this machine (/etc/apt/sources.list and
# sources.list.d), else deb.debian.org; TASKQ_DEBIAN_MIRROR overrides it.
#
# --test runs test.sh in the chroot with TASKQ_PG set: it installs what the
# suites need with that release's apt (deps.sh: the same package names,
# the server's major version aside) and makes its throwaway cluster there,
# on a unix socket and the chroot's loopback ports, as on the host.  The
# variables test.sh and its suites read (TASKQ_*, KEEP, CI, PROVE_TESTS, PROVE_FLAGS,
# PG_TEST_*) pass through; KEEP=1 keeps the run's directory in the
# chroot's /tmp.
set -euo pipefail
export LC_ALL=C

usage() {
    echo "usage: $0 [--test] 17|18" >&2
    echo "       $0 --run 17|18 -- CMD [ARGS...]" >&2
    exit 2
}

mode=build
case ${1:-} in
    --test) mode="test"; shift ;;
    --run) mode=run; shift ;;
esac
[[ $# -ge 1 ]] || usage
pg=$1
shift
if [[ $mode == run ]]; then
    [[ ${1:-} == -- && $# -ge 2 ]] || usage
    shift
else
    [[ $# -eq 0 ]] || usage
fi
case $pg in
    17) suite=trixie; script=trixie ;;
    18) suite=forky; script=sid ;;    # debootstrap of Debian 12 predates forky: sid's script fits it
    *) usage ;;
esac
[[ $(id -u) -eq 0 ]] || { echo "$0: run as root (debootstrap and chroot)" >&2; exit 1; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
chroots=${TASKQ_CHROOTS:-/var/lib/taskq-chroots}
dir=$chroots/$suite
pg_config=/usr/lib/postgresql/$pg/bin/pg_config

# shellcheck source=test/bin/lib.sh disable=SC1091
source "$root/test/bin/lib.sh"

# in_chroot [VAR=value...] CMD...: CMD as root inside the chroot
# (lib.sh tq_chroot_run: plain environment, /proc and /dev/shm mounted).
in_chroot() { tq_chroot_run "$dir" "$@"; }

# Make the chroot (or finish one an earlier run left without PostgreSQL).
make_chroot() {
    local m
    m=$(tq_debian_mirror)
    if [[ ! -x $dir/usr/bin/apt-get ]]; then
        command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
        [[ -f /usr/share/debootstrap/scripts/$script ]] ||
            { echo "$0: debootstrap has no script $script" >&2; exit 1; }
        echo "pg_chroot: debootstrap $suite from $m into $dir (once)"
        rm -rf "$dir.partial"
        mkdir -p "$chroots"
        if ! debootstrap --variant=minbase "$suite" "$dir.partial" "$m" \
            "/usr/share/debootstrap/scripts/$script" >"$chroots/$suite.debootstrap.log" 2>&1; then
            tail -n 20 "$chroots/$suite.debootstrap.log" >&2
            echo "$0: debootstrap of $suite from $m failed (is the suite on the mirror?)" >&2
            exit 1
        fi
        mv "$dir.partial" "$dir"
    fi
    # No service starts in the chroot, and installing the server makes no cluster.
    printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
    chmod 755 "$dir/usr/sbin/policy-rc.d"
    mkdir -p "$dir/etc/postgresql-common"
    echo "create_main_cluster = false" >"$dir/etc/postgresql-common/createcluster.conf"
    cp -L /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
    # A mirror that is a dated copy of the archive serves testing's Release
    # files past their Valid-Until (stable's have none): apt would refuse them.
    echo 'Acquire::Check-Valid-Until "false";' >"$dir/etc/apt/apt.conf.d/99taskq-valid-until"
    echo "pg_chroot: installing PostgreSQL $pg and a compiler in $dir"
    if ! { in_chroot apt-get update -q &&
        in_chroot apt-get install -y -q --no-install-recommends "postgresql-$pg" \
            "postgresql-server-dev-$pg" make gcc libc6-dev; } >"$chroots/$suite.apt.log" 2>&1; then
        tail -n 20 "$chroots/$suite.apt.log" >&2
        echo "$0: PostgreSQL $pg could not be installed in $suite" >&2
        exit 1
    fi
}

[[ -x $dir$pg_config ]] || make_chroot
echo "pg_chroot: $suite, $("$dir$pg_config" --version 2>/dev/null || in_chroot "$pg_config" --version)"

# A fresh copy of the tree, with the copy test.sh makes.
rm -rf "$dir/build"
mkdir -p "$dir/build/taskq"
tq_copy_tree "$root" "$dir/build/taskq"

# The variables test.sh and the suites read, passed into the chroot.
passed_env() {
    local v
    for v in $(compgen -e); do
        case $v in
            TASKQ_CHROOTS | TASKQ_DEBIAN_MIRROR) ;;
            TASKQ_* | KEEP | CI | PROVE_TESTS | PROVE_FLAGS | PG_TEST_* | TERM) printf '%s=%s\0' "$v" "${!v}" ;;
        esac
    done
}
mapfile -d '' -t env_vars < <(passed_env)

case $mode in
    run)
        in_chroot ${env_vars[@]+"${env_vars[@]}"} TASKQ_PG="$pg" \
            sh -c 'cd /build/taskq && exec "$@"' sh "$@"
        exit
        ;;
    test)
        # test.sh installs and builds as make test does (its own copy of
        # this copy), and prints the suites and the closing line.
        in_chroot ${env_vars[@]+"${env_vars[@]}"} TASKQ_PG="$pg" \
            bash /build/taskq/test/bin/test.sh
        exit
        ;;
esac

# The build: make test's flags; every warning listed, and any fails it.
log=$dir/build/build.log
rc=0
in_chroot make -C /build/taskq -k -s -j"$(nproc 2>/dev/null || echo 2)" PG_CONFIG="$pg_config" \
    TASKQ_ASSERT=1 >"$log" 2>&1 || rc=$?
warnings=$(grep -c 'warning:' "$log" || true)
cat "$log"
if [[ $rc -ne 0 || $warnings -ne 0 ]]; then
    echo "pg_chroot: build against PostgreSQL $pg FAILED (exit $rc, $warnings warnings; $log)"
    exit 1
fi
echo "pg_chroot: build against PostgreSQL $pg ok, no warnings"
