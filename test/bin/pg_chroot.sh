#!/usr/bin/env bash
# test/bin/pg_chroot.sh — taskq built against a PostgreSQL major version
# that Debian 12 does not package, in a chroot of the Debian release that
# does, made with Debian's own debootstrap; optionally its regress and
# isolation suites run there too, on a throwaway cluster.
#
#   test/bin/pg_chroot.sh 17              build against 17 (Debian 13, trixie)
#   test/bin/pg_chroot.sh 18              build against 18 (Debian 14, forky)
#   test/bin/pg_chroot.sh --regress 17    build, then the regress and
#                                         isolation suites in the chroot
#   (make check-build PG=17, make check-regress PG=17)
#
# As root.  Each chroot is made once (a few minutes, a few hundred MB) and
# kept for later runs in $TASKQ_CHROOTS/<suite> (default
# /var/lib/taskq-chroots), outside the repository; the tree is copied into
# <chroot>/build/taskq afresh each run (as test.sh copies it: tracked and
# untracked files, no build products).  The build is that of make test
# (TASKQ_ASSERT=1), and a compiler warning fails it, as -Werror would, but
# after listing every one (make -k: every file's errors, not the first's).  The mirror is the one apt uses on this machine
# (/etc/apt/sources.list and sources.list.d), else deb.debian.org;
# TASKQ_DEBIAN_MIRROR overrides it.
#
# The suites' cluster listens on a unix socket inside the chroot only (no
# TCP port to collide with a server of the machine), as the unprivileged
# user taskq of the chroot, with the settings test/bin/lib.sh gives make
# test's cluster.  The outputs stay in <chroot>/build/taskq (regression.diffs,
# output_iso/) for a reader; the summary ends "N passed, N failed".
set -euo pipefail
export LC_ALL=C

usage() {
    echo "usage: $0 [--regress] 17|18" >&2
    exit 2
}

regress=0
[[ ${1:-} == --regress ]] && { regress=1; shift; }
[[ $# -eq 1 ]] || usage
pg=$1
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
mirror() { tq_debian_mirror; }

# chrooted [chroot options] -- CMD...: CMD in the chroot with /proc mounted
# (packages' scripts need it), in a mount namespace of its own: the mount
# goes away with the command, and none is left on this machine.
chrooted() {
    local -a opts=()
    while [[ $1 != -- ]]; do opts+=("$1"); shift; done
    shift
    # shellcheck disable=SC2016  # the inner shell expands them
    unshare --mount --propagation private /bin/sh -c \
        'dir=$1; shift; mount -t proc proc "$dir/proc" && exec chroot "$@"' \
        sh "$dir" ${opts[@]+"${opts[@]}"} "$dir" "$@"
}

# in_chroot CMD...: CMD as root inside the chroot, with a plain environment.
in_chroot() {
    chrooted -- /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LC_ALL=C HOME=/root DEBIAN_FRONTEND=noninteractive "$@"
}

# as_user CMD...: CMD as the chroot's user taskq, a client of the cluster's
# superuser role postgres.
as_user() {
    chrooted --userspec=taskq:taskq -- /usr/bin/env -i PATH=/usr/bin:/bin LC_ALL=C \
        HOME=/build PGUSER=postgres "$@"
}

# Make the chroot (or finish one an earlier run left without PostgreSQL).
make_chroot() {
    local m
    m=$(mirror)
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
[[ $regress == 1 ]] || exit 0

# ------------------------------------------------------------ the suites
in_chroot make -C /build/taskq -s install PG_CONFIG="$pg_config" TASKQ_ASSERT=1 >>"$log" 2>&1 ||
    { tail -n 20 "$log"; echo "pg_chroot: make install failed"; exit 1; }
in_chroot sh -c 'id taskq >/dev/null 2>&1 || useradd -d /build -M -s /bin/sh taskq'
in_chroot chown -R taskq:taskq /build    # the chroot's taskq, not this machine's
bindir=/usr/lib/postgresql/$pg/bin
run=/build/run
stop() { as_user "$bindir/pg_ctl" -D "$run/data" -m immediate -w -s stop >/dev/null 2>&1 || true; }
trap stop EXIT
as_user mkdir -p "$run"
as_user "$bindir/initdb" -D "$run/data" -U postgres -A trust --no-locale -E UTF8 --no-sync \
    --no-instructions >"$dir$run/initdb.log" 2>&1 ||
    { cat "$dir$run/initdb.log"; echo "pg_chroot: initdb failed"; exit 1; }
cat >>"$dir$run/data/postgresql.conf" <<EOF
# --- added by test/bin/pg_chroot.sh (as test/bin/lib.sh's test cluster) ---
listen_addresses = ''
unix_socket_directories = '$run'
port = 5432
shared_preload_libraries = 'taskq'
max_worker_processes = 32
max_prepared_transactions = 10
lc_messages = 'C'
fsync = off
full_page_writes = off
synchronous_commit = off
taskq.background_worker = off
EOF
[[ -f $dir/build/taskq/test/postgresql.conf ]] &&
    cat "$dir/build/taskq/test/postgresql.conf" >>"$dir$run/data/postgresql.conf"
as_user "$bindir/pg_ctl" -D "$run/data" -l "$run/postgres.log" -w -t 120 -s start ||
    { tail -n 40 "$dir$run/postgres.log"; echo "pg_chroot: the cluster did not start"; exit 1; }

pass=0
fail=0
# suite NAME DRIVER OUTDIR INPUTDIR TESTS...: one pg_regress-style suite.
suite() {
    local name=$1 driver=$2 outdir=$3 inputdir=$4 out=$dir/build/$1.out ok bad rc=0
    shift 4
    as_user sh -c 'cd /build/taskq && exec "$@"' sh "$driver" --inputdir="$inputdir" \
        --outputdir="$outdir" --bindir="$bindir" --host="$run" --port=5432 \
        --load-extension=taskq "$@" >"$out" 2>&1 || rc=$?
    # 15 writes "test x ... ok", 16 and later TAP lines: "ok 1 - x", "not ok 2 - y"
    ok=$(grep -cE ' \.\.\. (ok|failed \(ignored\))|^ok [0-9]+ ' "$out" || true)
    bad=$(grep -cE ' \.\.\. FAILED|^not ok [0-9]+ ' "$out" || true)
    [[ $rc -ne 0 && $bad -eq 0 ]] && bad=1    # could not run
    grep -E ' \.\.\. |^(not )?ok [0-9]+ ' "$out" | sed 's/^/   /' || true
    echo "pg_chroot: $name on PostgreSQL $pg: $ok ok, $bad failed"
    [[ $bad -eq 0 ]] || echo "pg_chroot: $name: diffs in $dir/build/taskq/$outdir/regression.diffs"
    pass=$((pass + ok))
    fail=$((fail + bad))
}
names() { find "$dir/build/taskq/$1" -maxdepth 1 -name "*.$2" -printf '%f\n' | sed "s/\.$2\$//" | sort; }
pgxs=/usr/lib/postgresql/$pg/lib/pgxs/src/test
# shellcheck disable=SC2046  # one word per test name
suite regress "$pgxs/regress/pg_regress" . . $(names sql sql)
# shellcheck disable=SC2046
suite isolation "$pgxs/isolation/pg_isolation_regress" output_iso test $(names test/specs spec)
echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
