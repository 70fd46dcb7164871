#!/usr/bin/env bash
# test/bin/deb_install_test.sh — `make deb-test`; also the last step of make deb.
# Owns: the install test of the packages make deb built (the .deb files in
# $DEB_OUT, default dist/deb/): in a clean Debian 12 chroot, apt-get install
# them (apt fetches postgresql-15 from the mirror), make a cluster that
# preloads taskq, CREATE EXTENSION taskq, enqueue one task, run it to the end
# with the packaged /usr/bin/taskq-worker, import the python3-taskq module,
# and start the packaged /usr/bin/taskq-console as a member of taskq_admin:
# its /healthz and a page must answer.  The last line is "deb install test:
# ok" or "... FAILED".
#
# As root.  The base chroot, $TASKQ_CHROOTS/bookworm-pkg (default
# /var/lib/taskq-chroots), is made once with debootstrap --variant=minbase
# from the mirror apt uses here, with this machine's apt sources (the
# packages depend on the PostgreSQL of bookworm-security), and kept; it is
# never changed after that.  Each run works in a fresh copy of it, removed
# at the end, so no run sees what an earlier one installed.  The .deb files
# apt downloads are kept in bookworm-pkg.apt-cache/ for the next copy.
#
# Everything runs in a mount and PID namespace of its own (unshare): /proc
# is mounted for the chroot there, and the server and worker the test starts
# end with it; nothing stays mounted or running.  The cluster listens on a
# unix socket inside the chroot only, no TCP port.
#
# TASKQ_DEB_AUTOPKGTEST=1: then also the packages' autopkgtest
# (debian/tests/installcheck) in the same copy.
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

debs=${DEB_OUT:-$TQ_ROOT/dist/deb}
chroots=${TASKQ_CHROOTS:-/var/lib/taskq-chroots}
base=$chroots/bookworm-pkg
cache=$chroots/bookworm-pkg.apt-cache
run=""
t0=$(tq_now)

fail() {
    echo "deb install test: $*" >&2
    exit 1
}
# The last line says how it ended, whatever ended it.
cleanup() {
    local rc=$?
    if [[ -n $run && -d $run ]]; then rm -rf --one-file-system "$run"; fi
    if [[ $rc -eq 0 ]]; then echo "deb install test: ok"; else echo "deb install test: FAILED"; fi
}
trap cleanup EXIT

[[ $(id -u) -eq 0 ]] || fail "run as root (debootstrap and chroot)"

# The packages to install: the newest build of each in $debs.
pkgs=()
for p in 'postgresql-15-taskq_*.deb' 'taskq-worker_*.deb' 'taskq-console_*.deb' 'python3-taskq_*.deb'; do
    # shellcheck disable=SC2012,SC2086  # $p is a glob; names without spaces, newest first
    f=$(ls -t "$debs"/$p 2>/dev/null | head -n 1 || true)
    [[ -n $f ]] || fail "no $p in $debs (make deb builds them)"
    pkgs+=("$f")
done

# in_dir DIR CMD...: CMD as root inside chroot DIR (lib.sh tq_chroot_run:
# a plain environment in UTF-8, /proc mounted, every process it starts
# gone when it ends).
in_dir() {
    local d=$1
    shift
    tq_chroot_run "$d" LC_ALL=C.UTF-8 "$@"
}

# ------------------------------------------------------- the base, once
if [[ ! -x $base/usr/bin/apt-get ]]; then
    m=$(tq_debian_mirror)
    command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null
    echo "deb install test: debootstrap bookworm from $m into $base (once)"
    rm -rf --one-file-system "$base.partial"
    mkdir -p "$chroots"
    if ! debootstrap --variant=minbase bookworm "$base.partial" "$m" \
        >"$chroots/bookworm-pkg.debootstrap.log" 2>&1; then
        tail -n 20 "$chroots/bookworm-pkg.debootstrap.log" >&2
        fail "debootstrap of bookworm from $m failed"
    fi
    d=$base.partial
    # No service starts in the chroot, and installing the server makes no
    # cluster: the test makes its own.
    printf '#!/bin/sh\nexit 101\n' >"$d/usr/sbin/policy-rc.d"
    chmod 755 "$d/usr/sbin/policy-rc.d"
    mkdir -p "$d/etc/postgresql-common"
    echo "create_main_cluster = false" >"$d/etc/postgresql-common/createcluster.conf"
    # This machine's sources (bookworm, its updates and security) in place
    # of debootstrap's bookworm-only line; a mirror that is a dated copy of
    # the archive may serve Release files past their Valid-Until.
    rm -f "$d/etc/apt/sources.list"
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        mkdir -p "$d$(dirname "$f")"
        cp "$f" "$d$f"
    done
    echo 'Acquire::Check-Valid-Until "false";' >"$d/etc/apt/apt.conf.d/99taskq-valid-until"
    # Keep what apt downloads: the test copies it back to the cache.
    echo 'APT::Keep-Downloaded-Packages "true";' >"$d/etc/apt/apt.conf.d/99taskq-keep"
    mv "$d" "$base"
fi

# ------------------------------------------------ a fresh copy, the packages
run=$(mktemp -d "$chroots/bookworm-pkg.run.XXXXXX")
chmod 755 "$run"   # the chroot's /: its users (postgres) must get in
cp -a "$base/." "$run/"
cp -L /etc/resolv.conf "$run/etc/resolv.conf" 2>/dev/null || true
mkdir -p "$cache" "$run/tmp/debs"
cp -l "$cache"/*.deb "$run/var/cache/apt/archives/" 2>/dev/null || true
cp "${pkgs[@]}" "$run/tmp/debs/"
log=$run/tmp/apt.log
names=()
for f in "${pkgs[@]}"; do names+=("/tmp/debs/$(basename "$f")"); done
echo "deb install test: apt-get install ${names[*]##*/} in a copy of $base"
if ! { in_dir "$run" apt-get -q update &&
    in_dir "$run" apt-get -q -y --no-install-recommends -o Dpkg::Use-Pty=0 install "${names[@]}"; } \
    >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    fail "apt-get install of the packages failed"
fi
cp -l -n "$run"/var/cache/apt/archives/*.deb "$cache/" 2>/dev/null || true
# shellcheck disable=SC2016  # dpkg-query's fields, not the shell's
in_dir "$run" dpkg-query -W -f='deb install test:   ${Package} ${Version}\n' \
    postgresql-15 postgresql-15-taskq taskq-worker taskq-console python3-taskq python3-psycopg

# ------------------------------------------------------- the test, inside
# Written into the chroot and run there as root; the cluster and the worker
# run as the chroot's user postgres.
cat >"$run/tmp/install-test.sh" <<'EOF'
#!/bin/bash
set -euo pipefail
sock=/var/run/postgresql
as_pg() { runuser -u postgres -- env PGHOST="$sock" "$@"; }
sql() { as_pg psql -X -q -At -v ON_ERROR_STOP=1 -d postgres "$@"; }

# The cluster as Debian's tools make it; preloading taskq starts its
# shared memory and background worker.
pg_createcluster -p 5432 -o listen_addresses= -o "unix_socket_directories=$sock" \
    -o shared_preload_libraries=taskq 15 main >/dev/null
pg_ctlcluster 15 main start
sql -c 'CREATE EXTENSION taskq'
echo "taskq $(sql -c "SELECT extversion FROM pg_extension WHERE extname = 'taskq'")," \
    "preloaded: $(sql -c 'SHOW shared_preload_libraries')"

# One task, run by the packaged taskq-worker: the handler writes the body
# it read on standard input to a file; its last line of stderr becomes the
# task's status text.
sql -c "SELECT taskq.enqueue('deb-echo', '{\"msg\": \"hello from the package\"}', 'deb-test-1')" >/dev/null
command -v taskq-worker
taskq-worker --version
rm -f /tmp/handled.json
as_pg /usr/bin/taskq-worker -d 'dbname=postgres' --actor deb-install-test --poll 1s \
    --run 'deb-echo=cat >/tmp/handled.json && echo handled-by-deb-test >&2' \
    >/tmp/worker.log 2>&1 &
worker=$!
outcome=$(sql -F ' ' -c "SELECT status_code, status FROM taskq.wait_for_task('deb-test-1', interval '60 seconds')")
kill -TERM "$worker" 2>/dev/null || true
wait "$worker" || true
echo "task deb-test-1: $outcome; the handler read $(cat /tmp/handled.json 2>/dev/null || echo nothing)"
if [[ $outcome != 'completed handled-by-deb-test' ]]; then
    echo "--- taskq-worker's log:"; cat /tmp/worker.log
    exit 1
fi

# python3-taskq: the module of the package, with its dependency psycopg.
python3 -c 'import taskq, psycopg; print("python3-taskq", taskq.__version__, "from", taskq.__file__)'

# taskq-console: the packaged command on the cluster, as a login role in
# taskq_admin, on a free port of the loopback (the host's network: not
# 8080, which may be taken there); its /healthz and the Workers page must
# answer, the page naming the role as admin.
command -v taskq-console
readlink -f "$(command -v taskq-console)"
taskq-console --version
sql -c 'CREATE ROLE console LOGIN IN ROLE taskq_admin'
# Debian's pg_hba.conf lets a local role in only as the OS user of its name
# (peer): let the console's role in by the socket, as a site's line would.
sed -i '1i local all console trust' /etc/postgresql/15/main/pg_hba.conf
pg_ctlcluster 15 main reload
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
as_pg taskq-console --dsn "main=host=$sock dbname=postgres user=console" \
    --listen "127.0.0.1:$port" >/tmp/console.log 2>&1 &
console=$!
rc=0
python3 - "$port" <<'PY' || rc=$?
import sys, time, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
deadline = time.monotonic() + 30
while True:
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=5) as r:
            print("taskq-console /healthz:", r.status, r.read().decode().strip())
            break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("taskq-console did not answer /healthz in 30 s")
        time.sleep(0.2)
with urllib.request.urlopen(base + "/d/main/workers", timeout=10) as r:
    page = r.read().decode()
    print("taskq-console /d/main/workers:", r.status, len(page), "bytes")
if 'id="role">console · admin<' not in page:
    sys.exit("the Workers page does not name the role console as admin")
PY
kill -TERM "$console" 2>/dev/null || true
wait "$console" || true
if [[ $rc -ne 0 ]]; then
    echo "--- taskq-console's log:"; cat /tmp/console.log
    exit 1
fi
pg_ctlcluster 15 main stop
EOF
chmod 755 "$run/tmp/install-test.sh"
rc=0
in_dir "$run" /tmp/install-test.sh >"$run/tmp/test.log" 2>&1 || rc=$?
sed 's/^/deb install test:   /' "$run/tmp/test.log"
if [[ $rc -ne 0 ]]; then
    for f in "$run"/var/log/postgresql/*.log; do
        [[ -f $f ]] || continue
        echo "--- server log ($(basename "$f")), last 30 lines:"
        tail -n 30 "$f"
    done
    fail "the test in the chroot failed (exit $rc)"
fi

# TASKQ_DEB_AUTOPKGTEST=1: also debian/tests/installcheck, as autopkgtest
# runs it (as root, in a copy of the source tree, with the test's Depends
# installed): the regress and isolation suites against the installed
# extension.  Not by default: postgresql-server-dev-all brings a compiler
# and LLVM, a few hundred MB more per run.
if [[ ${TASKQ_DEB_AUTOPKGTEST:-0} == 1 ]]; then
    echo "deb install test: debian/tests/installcheck (autopkgtest's Depends: postgresql-server-dev-all make)"
    if ! in_dir "$run" apt-get -q -y --no-install-recommends -o Dpkg::Use-Pty=0 install \
        postgresql-server-dev-all make >>"$log" 2>&1; then
        tail -n 40 "$log" >&2
        fail "apt-get install of the autopkgtest's Depends failed"
    fi
    cp -l -n "$run"/var/cache/apt/archives/*.deb "$cache/" 2>/dev/null || true
    mkdir -p "$run/build/taskq"
    tq_copy_tree "$TQ_ROOT" "$run/build/taskq"
    rc=0
    in_dir "$run" /bin/sh -c 'cd /build/taskq && debian/tests/installcheck' \
        >"$run/tmp/autopkgtest.log" 2>&1 || rc=$?
    grep -E '^(# | )?(All [0-9]+ tests passed|[0-9]+ of [0-9]+ tests failed)|^### ' "$run/tmp/autopkgtest.log" |
        sed -e 's/^\(# \| \)//' -e 's/^/deb install test:   /' || true
    if [[ $rc -ne 0 ]]; then
        tail -n 80 "$run/tmp/autopkgtest.log"
        fail "debian/tests/installcheck failed (exit $rc)"
    fi
fi
echo "deb install test: $(($(tq_now) - t0))s"
