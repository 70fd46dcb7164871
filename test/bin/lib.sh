# shellcheck shell=bash disable=SC2034
# test/bin/lib.sh — shared by test.sh and demo.sh (sourced, not run).
# Owns: the test user, the private copy of the tree, build + install as root,
# and the throwaway PostgreSQL cluster (start, psql, stop, cleanup).
# Everything lives in one temp dir ($TQ_WORK) that tq_cleanup removes.

# The PostgreSQL major version: 15, Debian 12's, unless TASKQ_PG names
# another (make test PG=17 runs these scripts in a chroot of the Debian
# release that packages it: test/bin/pg_chroot.sh).
TQ_PG=${TASKQ_PG:-15}
TQ_PG_CONFIG=/usr/lib/postgresql/$TQ_PG/bin/pg_config
TQ_BINDIR=/usr/lib/postgresql/$TQ_PG/bin
TQ_PGXS_DIR=/usr/lib/postgresql/$TQ_PG/lib/pgxs
TQ_USER=taskq
# The cluster's superuser role.  Not the OS user's name: a role named like
# the extension's schema would put schema taskq on "$user"'s search_path.
TQ_DBUSER=postgres
TQ_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TQ_SYS_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# Where Node.js finds the module pg (deps.sh): Debian's node-pg is in
# /usr/share/nodejs; where it cannot be installed, npm's pg in TQ_NODE_DIR.
TQ_NODE_DIR=/usr/local/lib/taskq-node
TQ_NODE_PATH=$TQ_NODE_DIR/node_modules:/usr/share/nodejs

TQ_WORK=""      # temp dir: src/ (tree copy), data/ (cluster), log/, tmp/
TQ_PGDATA=""
TQ_SOCK=""      # unix socket directory
TQ_PORT=""
TQ_PGLOG=""
TQ_KEEP=0       # 1: tq_cleanup leaves cluster and temp dir alone

export LC_ALL=C  # deterministic globs and sort in these scripts

tq_warn() { printf '%s\n' "$*" >&2; }
tq_now() { date +%s; }

tq_is_root() { [[ $(id -u) -eq 0 ]]; }

# The unprivileged user that owns the cluster and runs the suites.
tq_ensure_user() {
    tq_is_root || return 0
    if ! getent passwd "$TQ_USER" >/dev/null; then
        useradd --system --create-home --shell /bin/bash "$TQ_USER"
    fi
}

tq_user_name() { if tq_is_root; then echo "$TQ_USER"; else id -un; fi; }

# Locale for the test user's processes: C.UTF-8 when the system has it.
tq_lang() {
    if locale -a 2>/dev/null | grep -qiE '^c\.utf-?8$'; then echo C.UTF-8; else echo C; fi
}

# tq_as_user cmd args...: run as the test user with a clean, explicit
# environment (the caller's PATH may point into /root). Use `env VAR=value`
# as the command to add variables.
tq_as_user() {
    tq_user_prefix
    "${TQ_PREFIX[@]}" "$@"
}

# tq_run_as_user OUT cmd args...: the same, as a background job with stdout
# and stderr to file OUT ("-": the script's own), that the script waits for,
# so that Ctrl-C / TERM reach the script's trap at once and tq_cleanup can end
# the job (TERM to runuser is passed on to the command). Redirect only here:
# a trap would inherit a redirection of the caller's.
TQ_CHILD=""
tq_run_as_user() {
    local rc=0 out=$1
    shift
    tq_user_prefix
    if [[ $out == - ]]; then
        "${TQ_PREFIX[@]}" "$@" &
    else
        "${TQ_PREFIX[@]}" "$@" >"$out" 2>&1 &
    fi
    TQ_CHILD=$!
    wait "$TQ_CHILD" || rc=$?
    TQ_CHILD=""
    return "$rc"
}

tq_user_prefix() {
    TQ_PREFIX=()
    tq_is_root && TQ_PREFIX=(runuser -u "$TQ_USER" --)
    TQ_PREFIX+=(env -i
        "HOME=$(tq_user_home)" "USER=$(tq_user_name)" "LOGNAME=$(tq_user_name)"
        "PATH=$TQ_BINDIR:$TQ_SYS_PATH" "LANG=$(tq_lang)" "TMPDIR=$TQ_WORK/tmp"
        "PG_CONFIG=$TQ_PG_CONFIG" "PGUSER=$TQ_DBUSER")
    [[ -n ${TERM:-} ]] && TQ_PREFIX+=("TERM=$TERM")
    [[ -n ${CI:-} ]] && TQ_PREFIX+=("CI=$CI")
    return 0
}

tq_user_home() {
    local h
    h=$(getent passwd "$(tq_user_name)" | cut -d: -f6)
    if [[ -n $h && -d $h ]]; then echo "$h"; else echo "${TQ_WORK:-/tmp}/tmp"; fi
}

# Make the temp dir and copy the tree into $TQ_WORK/src: tracked plus
# untracked-but-not-ignored files (no .git, no build products or test output).
tq_make_work() {
    TQ_WORK=$(mktemp -d /tmp/taskq-run.XXXXXX)
    chmod 755 "$TQ_WORK"
    mkdir -p "$TQ_WORK/src" "$TQ_WORK/log" "$TQ_WORK/tmp"
    tq_copy_tree "$TQ_ROOT" "$TQ_WORK/src"
    if tq_is_root; then chown -R "$TQ_USER:" "$TQ_WORK"; fi
}

tq_skip_path() {
    case $1 in
        .git|.git/*|*/.git/*) return 0 ;;
        *.o|*.so|*.bc|*.dylib) return 0 ;;
        results/*|output_iso/*|tmp_check/*|log/*|test/results/*) return 0 ;;
        regression.diffs|regression.out) return 0 ;;
    esac
    return 1
}

tq_copy_tree() {
    local from=$1 to=$2 f
    if command -v git >/dev/null &&
        git -c safe.directory='*' -C "$from" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        git -c safe.directory='*' -C "$from" ls-files -z --cached --others --exclude-standard |
            while IFS= read -r -d '' f; do
                [[ -e $from/$f || -L $from/$f ]] || continue   # deleted, not yet committed
                tq_skip_path "$f" && continue
                printf '%s\0' "$f"
            done |
            tar -C "$from" --null --no-recursion -T - -cf - | tar -C "$to" -xf -
    else
        tar -C "$from" --exclude=.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
            --exclude=./results --exclude=./output_iso --exclude=./tmp_check \
            --exclude=./log --exclude=./test/results \
            --exclude=./regression.diffs --exclude=./regression.out -cf - . |
            tar -C "$to" -xf -
    fi
}

# Build (warnings visible) and install, as root: into the system PostgreSQL,
# or with TASKQ_PRIVATE_INSTALL=1 into a private copy of it (see
# tq_private_root).  Extra make variables in TQ_MAKE_FLAGS (an array), e.g.
# TASKQ_ASSERT=1.
TQ_MAKE_FLAGS=()
tq_build_install() {
    local dir=$TQ_WORK/src log=$TQ_WORK/log/build.log
    local -a dest=()
    [[ -f $dir/Makefile ]] || { tq_warn "no Makefile in $dir"; return 1; }
    if ! make -C "$dir" -s -j"$(nproc 2>/dev/null || echo 2)" PG_CONFIG="$TQ_PG_CONFIG" \
        ${TQ_MAKE_FLAGS[@]+"${TQ_MAKE_FLAGS[@]}"} 2>&1 | tee "$log"; then
        tq_warn "build failed (see messages above)"
        return 1
    fi
    if [[ ${TASKQ_PRIVATE_INSTALL:-0} == 1 ]]; then
        tq_private_root || return 1
        dest=(DESTDIR="$TQ_WORK/pg")
    fi
    if ! make -C "$dir" -s install PG_CONFIG="$TQ_PG_CONFIG" ${dest[@]+"${dest[@]}"} \
        ${TQ_MAKE_FLAGS[@]+"${TQ_MAKE_FLAGS[@]}"} >>"$log" 2>&1; then
        tail -n 50 "$log" >&2
        tq_warn "make install failed"
        return 1
    fi
    if tq_is_root; then chown -R "$TQ_USER:" "$dir"; fi
}

# A private copy of the PostgreSQL installation in $TQ_WORK/pg, without
# the system's taskq: PostgreSQL finds its lib and share directories
# relative to its binaries, so a server started from the copy loads the
# copy's taskq.so and scripts.  Several trees can then be tested at once
# without overwriting each other's installed files.  Sets TQ_BINDIR.
tq_private_root() {
    local root=$TQ_WORK/pg
    if [[ ! -d $root/usr/lib/postgresql/$TQ_PG ]]; then
        mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql" || return 1
        cp -a "/usr/lib/postgresql/$TQ_PG" "$root/usr/lib/postgresql/" || return 1
        cp -a "/usr/share/postgresql/$TQ_PG" "$root/usr/share/postgresql/" || return 1
        rm -f "$root/usr/lib/postgresql/$TQ_PG/lib/taskq.so" \
            "$root/usr/share/postgresql/$TQ_PG"/extension/taskq[.-]*
        rm -rf "$root/usr/lib/postgresql/$TQ_PG/lib/bitcode/taskq"*
        chmod -R a+rX "$root"
    fi
    TQ_BINDIR=$root/usr/lib/postgresql/$TQ_PG/bin
}

# TASKQ_SANITIZE=1 (make check-asan), after tq_build_install into the
# private copy: taskq.so is built with AddressSanitizer and UBSan but the
# server is not, so every server process must preload the ASan runtime.
# The copy's postgres becomes a script that sets that up and runs the real
# binary (pg_ctl, initdb and the TAP tests' clusters all start it) under the
# script's name, so that the postmaster records the script as its program
# in postmaster.opts and pg_ctl restart goes through it again.  ASan
# writes its reports to $TQ_WORK/log/sanitizer.* and aborts the process;
# UBSan reports go to the server log ("runtime error:") and abort too.
tq_sanitizer_wrap() {
    local bin=$TQ_BINDIR asan shim=$TQ_WORK/pg/asan_shim.so
    asan=$(readlink -f "$(gcc -print-file-name=libasan.so)")
    [[ -f $asan ]] || { tq_warn "libasan not found (gcc's libasan8)"; return 1; }
    gcc -shared -fPIC -O2 -o "$shim" "$TQ_WORK/src/test/bin/asan_shim.c" || return 1
    [[ -f $bin/postgres.real ]] || mv "$bin/postgres" "$bin/postgres.real"
    cat >"$bin/postgres" <<EOF
#!/bin/bash
# postgres with the ASan runtime preloaded (test/bin/lib.sh, make check-asan)
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0:log_path=$TQ_WORK/log/sanitizer.asan
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$TQ_WORK/log/sanitizer.ubsan
LD_PRELOAD=$asan:$shim\${LD_PRELOAD:+:\$LD_PRELOAD}
export ASAN_OPTIONS UBSAN_OPTIONS LD_PRELOAD
exec -a "$bin/postgres" "$bin/postgres.real" "\$@"
EOF
    chmod 755 "$bin/postgres" "$shim"
    "$bin/postgres" -V >/dev/null || { tq_warn "the wrapped postgres does not start"; return 1; }
}

# tq_chroot_run DIR CMD...: CMD as root in the Debian chroot DIR, with a
# plain environment (PATH, LC_ALL, HOME, DEBIAN_FRONTEND; put VAR=value
# words first in CMD for more), in mount and PID namespaces of its own:
# /proc mounted (packages' scripts and the tests' process checks need it)
# and a tmpfs on /dev/shm (the server's dynamic shared memory).  The mounts
# and every process CMD started end with it; nothing stays on this machine.
# (test/bin/pg_chroot.sh, test/bin/deb_install_test.sh)
tq_chroot_run() {
    local d=$1
    shift
    # shellcheck disable=SC2016  # the inner shell expands them
    unshare --mount --propagation private --pid --fork /bin/sh -c \
        'd=$1; shift; mkdir -p "$d/dev/shm" &&
         mount -t proc proc "$d/proc" &&
         mount -t tmpfs -o mode=1777 tmpfs "$d/dev/shm" &&
         exec chroot "$d" "$@"' \
        sh "$d" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        LC_ALL=C HOME=/root DEBIAN_FRONTEND=noninteractive "$@"
}

# The mirror of Debian apt uses here: the first URI of an enabled source
# that serves the archive (not the security one), else deb.debian.org;
# TASKQ_DEBIAN_MIRROR overrides it.  For debootstrap (pg_chroot.sh,
# deb_install_test.sh).
tq_debian_mirror() {
    local f uri
    if [[ -n ${TASKQ_DEBIAN_MIRROR:-} ]]; then echo "$TASKQ_DEBIAN_MIRROR"; return; fi
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [[ -f $f ]] || continue
        uri=$(sed -n -e 's|^URIs:[[:space:]]*\([^[:space:]]*/debian\)/*[[:space:]]*$|\1|p' \
            -e 's|^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\{0,1\}\([^[:space:]]*/debian\)/*[[:space:]].*|\2|p' \
            "$f" | head -n 1)
        if [[ -n $uri ]]; then echo "$uri"; return; fi
    done
    echo http://deb.debian.org/debian
}

# A value computed by the project's Makefile (with PGXS included), e.g. REGRESS.
tq_make_var() {
    local printer=$TQ_WORK/tmp/print-var.mk
    printf 'print-%%:\n\t@echo $($*)\n' >"$printer"
    make -C "$TQ_WORK/src" -s --no-print-directory -f Makefile -f "$printer" \
        PG_CONFIG="$TQ_PG_CONFIG" "print-$1"
}

# A TCP port nobody listens on (the cluster also listens on 127.0.0.1 so
# that clients without unix-socket support can connect).
tq_free_port() {
    local i p
    for ((i = 0; i < 200; i++)); do
        p=$((20000 + RANDOM % 30000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

# tq_cluster_start test|demo|bench|stock: initdb + start a throwaway cluster as
# the test user; stock adds nothing to postgresql.conf but what taskq and the
# scripts need (bench/neutral.sh).
tq_cluster_start() {
    local mode=${1:-test}
    TQ_PGDATA=$TQ_WORK/data
    TQ_SOCK=$TQ_WORK
    TQ_PGLOG=$TQ_WORK/log/postgres.log
    if ! tq_as_user initdb -D "$TQ_PGDATA" -U "$TQ_DBUSER" -A trust --no-locale -E UTF8 \
        --no-sync --no-instructions >"$TQ_WORK/log/initdb.log" 2>&1; then
        cat "$TQ_WORK/log/initdb.log" >&2
        tq_warn "initdb failed"
        return 1
    fi
    {
        echo "# --- added by test/bin/lib.sh ($mode) ---"
        echo "listen_addresses = '127.0.0.1'"
        echo "unix_socket_directories = '$TQ_SOCK'"
        echo "shared_preload_libraries = 'taskq'"
        echo "max_worker_processes = 32"
        echo "max_prepared_transactions = 10"
        echo "lc_messages = 'C'"
        echo "log_line_prefix = '%m [%p] %q%a '"
        if [[ $mode == test ]]; then
            echo "fsync = off"
            echo "full_page_writes = off"
            echo "synchronous_commit = off"
            # The regress, isolation and pgTAP suites back-date leases and
            # look at the state in between: the worker's own expiry sweep
            # would race with them.  The Perl TAP tests start their own
            # clusters, with the worker, and prove it.
            echo "taskq.background_worker = off"
        fi
        if [[ $mode == bench ]]; then
            # What the README recommends for a busy queue: autovacuum looks
            # at each database every 10 s, not every minute, so that the
            # dead index entries claims step over are removed soon.
            echo "autovacuum_naptime = '10s'"
            # A server's usual share of memory, not the 128 MB default: a
            # queue of 1,000,000 tasks (depth) is about 400 MB with indexes.
            echo "shared_buffers = '1GB'"
        fi
    } >>"$TQ_PGDATA/postgresql.conf"
    # Optional project hook: extra settings for the throwaway cluster.
    if [[ -f $TQ_WORK/src/test/postgresql.conf ]]; then
        cat "$TQ_WORK/src/test/postgresql.conf" >>"$TQ_PGDATA/postgresql.conf"
    fi
    [[ $mode == bench ]] && tq_huge_pages
    for _ in 1 2 3; do   # another process may take the port first
        TQ_PORT=$(tq_free_port) || { tq_warn "no free port found"; return 1; }
        echo "port = $TQ_PORT" >>"$TQ_PGDATA/postgresql.conf"   # last one wins
        if tq_as_user pg_ctl -D "$TQ_PGDATA" -l "$TQ_PGLOG" -w -t 120 -s start \
            >>"$TQ_WORK/log/pg_ctl.log" 2>&1; then
            return 0
        fi
        grep -q 'could not bind\|already in use' "$TQ_PGLOG" 2>/dev/null || break
    done
    tq_warn "could not start the cluster; server log:"
    tail -n 40 "$TQ_PGLOG" >&2 2>/dev/null || true
    TQ_PORT=""
    return 1
}

# tq_huge_pages: the bench cluster's shared memory in huge pages, as a
# production server's should be, unless TQ_HUGE_PAGES=off.  Without them
# every new backend takes a page fault for each 4 kB of shared memory it
# touches first, and 16 backends on 2 cores keep missing the TLB across
# 1 GB of shared buffers: a pool of long-lived workers pays the faults once,
# but the bench's short runs start fresh connections each time, and a
# 16-worker drain of 50 per claim took twice the CPU per task (see
# docs/storage.md).  As root the kernel is asked for the pages the server
# needs (postgres -C shared_memory_size_in_huge_pages) and given them back
# at tq_cleanup; if it cannot grant them, the cluster runs without.
# TQ_HUGE_STATE says which it was, for the results.
TQ_HUGE_STATE=off
TQ_HUGE_SAVED=""
tq_huge_pages() {
    local conf=$TQ_PGDATA/postgresql.conf need have free
    if [[ ${TQ_HUGE_PAGES:-on} == off ]]; then
        echo "huge_pages = off" >>"$conf"
        TQ_HUGE_STATE="off (TQ_HUGE_PAGES=off)"
        return 0
    fi
    need=$(tq_as_user postgres -D "$TQ_PGDATA" -C shared_memory_size_in_huge_pages 2>/dev/null) || need=-1
    free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo 2>/dev/null)
    if [[ $need =~ ^[0-9]+$ && $need -gt 0 && -n $free ]]; then
        if ((free < need)) && [[ -w /proc/sys/vm/nr_hugepages ]]; then
            have=$(cat /proc/sys/vm/nr_hugepages)
            TQ_HUGE_SAVED=$have
            echo $((have + need - free)) >/proc/sys/vm/nr_hugepages 2>/dev/null || true
            free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
        fi
        if ((free >= need)); then
            echo "huge_pages = on" >>"$conf"
            TQ_HUGE_STATE="on ($need pages of $(awk '/^Hugepagesize:/ {print $2 " " $3}' /proc/meminfo))"
            return 0
        fi
    fi
    echo "huge_pages = off" >>"$conf"
    TQ_HUGE_STATE="off (the kernel did not grant $need huge pages)"
    tq_warn "bench: no huge pages; the cluster runs without them ($TQ_HUGE_STATE)"
}

tq_cluster_running() {
    [[ -n $TQ_PGDATA && -f $TQ_PGDATA/postmaster.pid ]]
}

tq_cluster_stop() {
    tq_cluster_running || return 0
    tq_as_user pg_ctl -D "$TQ_PGDATA" -m fast -w -t 60 -s stop >/dev/null 2>&1 && return 0
    tq_as_user pg_ctl -D "$TQ_PGDATA" -m immediate -w -t 30 -s stop >/dev/null 2>&1 || true
}

# tq_psql DB [psql args...]: run psql on the throwaway cluster as the test user.
tq_psql() {
    local db=$1
    shift
    tq_as_user psql -X -q -v ON_ERROR_STOP=1 -h "$TQ_SOCK" -p "$TQ_PORT" -d "$db" "$@"
}

# End the job of an interrupted tq_run_as_user (TERM, then KILL after 20 s;
# TAP tests use the time to tear their nodes down).
tq_kill_child() {
    local i
    if [[ -n $TQ_CHILD ]] && kill -0 "$TQ_CHILD" 2>/dev/null; then
        kill -TERM "$TQ_CHILD" 2>/dev/null || true
        for ((i = 0; i < 40; i++)); do
            kill -0 "$TQ_CHILD" 2>/dev/null || break
            sleep 0.5
        done
        kill -KILL "$TQ_CHILD" 2>/dev/null || true
    fi
    TQ_CHILD=""
}

# Immediate shutdown of any postmaster still running from a data directory
# below $TQ_WORK (a TAP test's node that was not torn down), by its pid.
tq_kill_postmasters() {
    local i pidfile pid
    [[ -n $TQ_WORK && -d $TQ_WORK ]] || return 0
    while IFS= read -r pidfile; do
        pid=$(head -n 1 "$pidfile" 2>/dev/null || true)
        [[ $pid =~ ^[0-9]+$ ]] || continue
        grep -q postgres "/proc/$pid/cmdline" 2>/dev/null || continue
        kill -QUIT "$pid" 2>/dev/null || true
        for ((i = 0; i < 20; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -KILL "$pid" 2>/dev/null || true
    done < <(find "$TQ_WORK" -name postmaster.pid 2>/dev/null)
}

# Stop everything and remove the temp dir; silent, safe to call twice.
tq_cleanup() {
    [[ $TQ_KEEP == 1 ]] && return 0
    {
        tq_kill_child
        tq_cluster_stop
        tq_kill_postmasters
    } >/dev/null 2>&1 || true
    if [[ -n $TQ_HUGE_SAVED ]]; then
        echo "$TQ_HUGE_SAVED" >/proc/sys/vm/nr_hugepages 2>/dev/null || true
        TQ_HUGE_SAVED=""
    fi
    if [[ -n $TQ_WORK && -d $TQ_WORK ]]; then
        rm -rf "$TQ_WORK" 2>/dev/null || true
    fi
    TQ_WORK=""
    TQ_PGDATA=""
}
