#!/usr/bin/env bash
# test/bin/test.sh — `make test`.
# Owns: running every test suite on a throwaway cluster and the closing line.
#   deps -> build + install (root) -> copy of the tree owned by the test user
#   -> static checks, pg_regress, isolation, pgTAP, Perl TAP -> cleanup.
# Counting: one per pg_regress test, one per isolation spec, one per pgTAP
# assertion, one per Perl TAP assertion, one per test/static/*.sh, one per
# example, one per pytest test of clients/python/tests (suite python, from
# its junit xml), one per ```sql block of README.md and docs/*.md (suite docs,
# test/bin/doc_sql.py: a block after a failed one counts failed, not run) and
# one per complete worker they show (```LANG worker, test/bin/doc_workers.py);
# a suite or file that fails without a failed test of its own counts one
# failure.
# The last line printed is always "N passed, N failed"; exit 0 only if N failed is 0.
#
# Env knobs: TASKQ_SUITE_TIMEOUT (s, pg_regress/isolation, default 600),
#            TASKQ_FILE_TIMEOUT (s, each pgTAP/TAP/static file, default 300),
#            KEEP=1 (keep the temp dir with logs; the cluster is still stopped),
#            TASKQ_PRIVATE_INSTALL=1 (install into a private copy of
#              PostgreSQL, not the system's: lib.sh tq_private_root),
#            TASKQ_SANITIZE=1 (make check-asan: taskq.so with ASan and UBSan,
#              private install; any sanitizer report fails the run),
#            TASKQ_SUITES="regress isolation ..." (only these suites, for a
#              quick look while developing; of static regress isolation
#              pgtap examples python console docs tap).
# taskq is built with assertions (TASKQ_ASSERT=1) whatever the server is.
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SUITE_TIMEOUT=${TASKQ_SUITE_TIMEOUT:-600}
FILE_TIMEOUT=${TASKQ_FILE_TIMEOUT:-300}
PASSED=0
FAILED=0
SQL_FAILED=0   # failures in suites that use the shared cluster
DONE=0
T_START=$(tq_now)

on_exit() {
    local rc=$?
    set +e
    trap - EXIT INT TERM
    finish_work
    if [[ $DONE != 1 ]]; then
        # Aborted: deps or build failure, a suite that could not run, Ctrl-C, ...
        [[ $rc -eq 0 ]] && rc=1
        echo "$PASSED passed, $((FAILED + 1)) failed"
    fi
    exit "$rc"
}

# Stop the cluster; remove the temp dir, or keep it when KEEP=1. Idempotent.
finish_work() {
    if [[ ${KEEP:-0} == 1 && -n $TQ_WORK && $TQ_KEEP != 1 ]]; then
        { tq_kill_child; tq_cluster_stop; tq_kill_postmasters; } >/dev/null 2>&1
        echo "kept: $TQ_WORK (logs in $TQ_WORK/log)"
        TQ_KEEP=1
    fi
    tq_cleanup
}
trap on_exit EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

line() { printf '== %-10s %s\n' "$1" "$2"; }
elapsed() { echo "$(($(tq_now) - $1))s"; }
count() { grep -cE "$1" "$2" || true; }   # grep -c prints 0 on no match

# Print at most N lines of a file, saying so when cut.
show() {
    local file=$1 n=${2:-200} total
    [[ -s $file ]] || return 0
    total=$(wc -l <"$file")
    head -n "$n" "$file"
    if ((total > n)); then echo "... ($((total - n)) more lines in $(basename "$file"))"; fi
}

add() { PASSED=$((PASSED + $1)); FAILED=$((FAILED + $2)); }

# ---------------------------------------------------------------- setup
SANITIZE=${TASKQ_SANITIZE:-0}
TQ_MAKE_FLAGS=(TASKQ_ASSERT=1)
if [[ $SANITIZE == 1 ]]; then
    TQ_MAKE_FLAGS+=(TASKQ_SANITIZE=1)
    export TASKQ_PRIVATE_INSTALL=1
fi

bash "$(dirname "${BASH_SOURCE[0]}")/deps.sh"
tq_ensure_user
tq_make_work
SRC=$TQ_WORK/src
cd "$SRC"

t0=$(tq_now)
tq_build_install
[[ $SANITIZE == 1 ]] && tq_sanitizer_wrap
line build "ok: ${TQ_MAKE_FLAGS[*]}, installed in $(dirname "$TQ_BINDIR") ($(elapsed "$t0"))"

# ---------------------------------------------------------------- suites

suite_static() {
    local f name out rc t0 ok=0 bad=0 any=0
    t0=$(tq_now)
    for f in test/static/*.sh; do
        [[ -f $f && -x $f ]] || continue
        any=1
        name=$(basename "$f" .sh)
        out=$TQ_WORK/log/static-$name.out
        rc=0
        tq_run_as_user "$out" env PGHOST="$TQ_SOCK" PGPORT="$TQ_PORT" \
            timeout -k 10 "$FILE_TIMEOUT" "./$f" || rc=$?
        if [[ $rc -eq 0 ]]; then
            ok=$((ok + 1))
        else
            bad=$((bad + 1))
            echo "--- $f failed (exit $rc):"
            show "$out" 100
        fi
    done
    if [[ $any == 0 ]]; then line static "skipped (no executable test/static/*.sh)"; return; fi
    add "$ok" "$bad"
    line static "$ok ok, $bad failed ($(elapsed "$t0"))"
}

# run_pg_regress NAME DRIVER OUTDIR OPTS TESTS: one pg_regress-style suite.
run_pg_regress() {
    local name=$1 driver=$2 outdir=$3 opts=$4 tests=$5 out rc=0 ok bad t0
    local -a optv testv
    read -ra optv <<<"$opts"
    read -ra testv <<<"$tests"
    out=$TQ_WORK/log/$name.out
    t0=$(tq_now)
    tq_run_as_user "$out" timeout -k 10 "$SUITE_TIMEOUT" "$driver" \
        --inputdir=. --outputdir="$outdir" --bindir="$TQ_BINDIR" \
        --host="$TQ_SOCK" --port="$TQ_PORT" "${optv[@]}" "${testv[@]}" || rc=$?
    # 15 writes "test x ... ok"; 16 and later TAP lines, "ok 1 - x" and
    # "not ok 2 - y" (make test PG=17, PG=18)
    ok=$(count ' \.\.\. (ok|failed \(ignored\))|^ok [0-9]+ ' "$out")
    bad=$(count ' \.\.\. FAILED|^not ok [0-9]+ ' "$out")
    if [[ $rc -ne 0 && $bad -eq 0 ]]; then bad=1; fi   # could not run
    add "$ok" "$bad"
    SQL_FAILED=$((SQL_FAILED + bad))
    grep -E ' \.\.\. |^(not )?ok [0-9]+ ' "$out" | sed 's/^/   /' || true
    line "$name" "$ok ok, $bad failed ($(elapsed "$t0"))"
    if [[ $bad -gt 0 ]]; then
        if [[ -s $outdir/regression.diffs ]]; then
            echo "--- $name: $outdir/regression.diffs"
            show "$outdir/regression.diffs" 200
        else
            echo "--- $name: output (exit $rc)"
            grep -vxE 'SET|(ALTER|CREATE|DROP) DATABASE' "$out" >"$out.short" || true
            show "$out.short" 60
        fi
    fi
}

suite_regress() {
    local tests
    tests=$(tq_make_var REGRESS)
    if [[ -z $tests ]]; then line regress "skipped (no sql/*.sql)"; return; fi
    run_pg_regress regress "$TQ_PGXS_DIR/src/test/regress/pg_regress" . \
        "$(tq_make_var REGRESS_OPTS)" "$tests"
}

suite_isolation() {
    local tests
    tests=$(tq_make_var ISOLATION)
    if [[ -z $tests ]]; then line isolation "skipped (no test/specs/*.spec)"; return; fi
    run_pg_regress isolation "$TQ_PGXS_DIR/src/test/isolation/pg_isolation_regress" output_iso \
        "$(tq_make_var ISOLATION_OPTS)" "$tests"
}

# count_tap OUT RC: passed/failed assertions in one TAP file's verbose output.
# Top-level "ok N" / "not ok N" lines only (subtests are indented); a TODO
# "not ok" is an expected failure and is not counted. Planned assertions that
# never ran count as failed, and a file that failed without any of those
# (died after the last assertion, timeout, ...) counts one failure.
count_tap() {
    local out=$1 rc=$2 todo plan ran
    TAP_OK=$(count '^ok [0-9]+' "$out")
    TAP_BAD=$(grep -E '^not ok [0-9]+' "$out" | grep -vcE '#[[:space:]]*TODO' || true)
    todo=$(grep -E '^not ok [0-9]+' "$out" | grep -cE '#[[:space:]]*TODO' || true)
    plan=$(sed -nE 's/^1\.\.([0-9]+).*/\1/p' "$out" | head -n 1)
    ran=$((TAP_OK + TAP_BAD + todo))
    if [[ -n $plan ]] && ((plan > ran)); then TAP_BAD=$((TAP_BAD + plan - ran)); fi
    if [[ $rc -ne 0 && $TAP_BAD -eq 0 ]]; then TAP_BAD=1; fi
}

suite_pgtap() {
    local f out rc t0 ok=0 bad=0 db=taskq_pgtap
    local -a files=()
    for f in test/pgtap/*.sql; do [[ -f $f ]] && files+=("$f"); done
    if [[ ${#files[@]} -eq 0 ]]; then line pgtap "skipped (no test/pgtap/*.sql)"; return; fi
    t0=$(tq_now)
    out=$TQ_WORK/log/pgtap-setup.out
    if ! { tq_psql postgres -c "CREATE DATABASE $db" &&
        tq_psql "$db" -c 'CREATE EXTENSION pgtap' -c 'CREATE EXTENSION taskq'; } >"$out" 2>&1; then
        add 0 1
        SQL_FAILED=$((SQL_FAILED + 1))
        line pgtap "0 ok, 1 failed (setup)"
        show "$out" 40
        return
    fi
    for f in "${files[@]}"; do
        out=$TQ_WORK/log/pgtap-$(basename "$f" .sql).out
        rc=0
        tq_run_as_user "$out" timeout -k 10 "$FILE_TIMEOUT" pg_prove --verbose --nocolor \
            -h "$TQ_SOCK" -p "$TQ_PORT" -d "$db" "$f" || rc=$?
        count_tap "$out" "$rc"
        ok=$((ok + TAP_OK))
        bad=$((bad + TAP_BAD))
        printf '   %-40s %s ok, %s failed\n' "$f" "$TAP_OK" "$TAP_BAD"
        if [[ $TAP_BAD -gt 0 ]]; then
            echo "--- $f (exit $rc):"
            show "$out" 150
        fi
    done
    add "$ok" "$bad"
    SQL_FAILED=$((SQL_FAILED + bad))
    line pgtap "$ok ok, $bad failed ($(elapsed "$t0"))"
}

# Mirrors PGXS prove_installcheck (Makefile.global), one prove per file.
suite_tap() {
    local f name out rc t0 ok=0 bad=0 tests
    local -a files prove_flags tap_env
    tests=$(tq_make_var PROVE_TESTS)
    mapfile -t files < <(tr -s ' ' '\n' <<<"$tests" | sed '/^$/d' | sort)
    if [[ ${#files[@]} -eq 0 ]]; then line tap "skipped (no test/t/*.pl)"; return; fi
    read -ra prove_flags <<<"${PROVE_FLAGS:-}"
    tap_env=(TESTDIR="$SRC" PATH="$TQ_BINDIR:$SRC:$TQ_SYS_PATH" PGPORT=65432
        PG_REGRESS="$TQ_PGXS_DIR/src/test/regress/pg_regress")
    [[ -n ${PG_TEST_EXTRA:-} ]] && tap_env+=(PG_TEST_EXTRA="$PG_TEST_EXTRA")
    [[ -n ${PG_TEST_TIMEOUT_DEFAULT:-} ]] && tap_env+=(PG_TEST_TIMEOUT_DEFAULT="$PG_TEST_TIMEOUT_DEFAULT")
    local v
    for v in TASKQ_SQLSMITH_SECONDS TASKQ_SQLSMITH_SEED TASKQ_FUZZ_SECONDS TASKQ_DAG_COUNT TASKQ_DAG_SEED \
        TASKQ_CRASH_ITERATIONS; do   # test/t/012_sqlsmith.pl, test/t/002_crash_loop.pl, test/t/030_dag_property.pl
        [[ -n ${!v:-} ]] && tap_env+=("$v=${!v}")
    done
    t0=$(tq_now)
    rm -rf "$SRC/tmp_check"
    tq_as_user mkdir -p "$SRC/tmp_check"
    for f in "${files[@]}"; do
        name=$(basename "$f" .pl)
        out=$TQ_WORK/log/tap-$name.out
        rc=0
        tq_run_as_user "$out" env "${tap_env[@]}" timeout -k 10 "$FILE_TIMEOUT" \
            prove --verbose --nocolor -I "$TQ_PGXS_DIR/src/test/perl/" -I . \
            ${prove_flags[@]+"${prove_flags[@]}"} "$f" || rc=$?
        count_tap "$out" "$rc"
        ok=$((ok + TAP_OK))
        bad=$((bad + TAP_BAD))
        printf '   %-40s %s ok, %s failed\n' "$f" "$TAP_OK" "$TAP_BAD"
        if [[ $TAP_BAD -gt 0 ]]; then
            echo "--- $f (exit $rc):"
            show "$out" 150
            if [[ -f $SRC/tmp_check/log/regress_log_$name ]]; then
                echo "--- tail of tmp_check/log/regress_log_$name:"
                tail -n 60 "$SRC/tmp_check/log/regress_log_$name"
            fi
        fi
    done
    add "$ok" "$bad"
    line tap "$ok ok, $bad failed ($(elapsed "$t0"))"
}

# Server-side trouble (crashes, assertion failures) explains many SQL failures.
check_server_log() {
    local pat='terminated by signal|PANIC|TRAP:|server process .* was terminated'
    [[ -f $TQ_PGLOG ]] || return 0
    if grep -qE "$pat" "$TQ_PGLOG"; then
        echo "--- the server log shows a crash:"
        grep -E -m 20 "$pat" "$TQ_PGLOG"
    fi
    if [[ $SQL_FAILED -gt 0 ]]; then
        echo "--- last 30 lines of the server log:"
        tail -n 30 "$TQ_PGLOG"
    fi
}

t0=$(tq_now)
tq_cluster_start test
line cluster "up on port $TQ_PORT ($(elapsed "$t0"))"

# check-asan: first prove that a planted heap overflow is reported (in a
# single-user server, so that no suite sees the crash), then, after the
# suites, that no report was written and no "runtime error:" logged.
sanitizer_selftest() {
    local so=$TQ_WORK/pg/asan_selftest.so sql=$TQ_WORK/tmp/selftest.sql
    local out=$TQ_WORK/log/sanitizer-selftest.out f found=0
    gcc -shared -fPIC -fsanitize=address -I"$("$TQ_PG_CONFIG" --includedir-server)" \
        -o "$so" test/bin/asan_selftest.c && chmod 755 "$so" || { add 0 1; return; }
    printf '%s\n' "CREATE FUNCTION pg_temp.selftest() RETURNS void AS '$so', 'taskq_asan_selftest' LANGUAGE C;" \
        "SELECT pg_temp.selftest();" >"$sql"
    chmod 644 "$sql"
    tq_run_as_user "$out" sh -c 'exec "$0" --single -D "$1" postgres <"$2"' \
        "$TQ_BINDIR/postgres" "$TQ_PGDATA" "$sql" || true
    for f in "$TQ_WORK"/log/sanitizer.asan.*; do
        [[ -f $f ]] || continue
        if grep -q 'heap-buffer-overflow' "$f" && grep -q 'taskq_asan_selftest' "$f"; then
            found=1
            mv "$f" "$TQ_WORK/log/selftest.asan"
        fi
    done
    if [[ $found == 1 ]]; then
        add 1 0
        line sanitizer "a planted heap overflow is reported"
    else
        add 0 1
        line sanitizer "FAILED: a planted heap overflow was not reported"
        show "$out" 40
    fi
}

sanitizer_reports() {
    local reports
    reports=$( { ls "$TQ_WORK"/log/sanitizer.* 2>/dev/null
                 grep -rlE 'runtime error:|ERROR: AddressSanitizer|ASan runtime does not come first' \
                     "$TQ_WORK/log" "$SRC/tmp_check" --include='*.log' 2>/dev/null; } | sort -u || true)
    if [[ -z $reports ]]; then
        add 1 0
        line sanitizer "no ASan or UBSan report"
    else
        add 0 1
        line sanitizer "FAILED: sanitizer reports in:"
        for f in $reports; do echo "--- $f"; show "$f" 60; done
    fi
}

# suite_db SUITE DB: a database of the cluster with the extension, for a
# suite that runs outside pg_regress; on failure the suite counts one
# failure, shows why, and returns 1.
suite_db() {
    local suite=$1 db=$2 out=$TQ_WORK/log/$1-setup.out
    if ! { tq_psql postgres -c "CREATE DATABASE $db" &&
        tq_psql "$db" -c 'CREATE EXTENSION taskq'; } >"$out" 2>&1; then
        add 0 1
        line "$suite" "0 ok, 1 failed (setup)"
        show "$out" 40
        return 1
    fi
}

# Every examples/*/run.sh against the cluster, as make demo runs them: one
# test each, passed when the example's own end-state check passes.
suite_examples() {
    local script dir name out rc t0 ok=0 bad=0 db=taskq_examples
    local -a scripts=()
    for script in examples/*/run.sh; do [[ -f $script ]] && scripts+=("$script"); done
    if [[ ${#scripts[@]} -eq 0 ]]; then line examples "skipped (no examples/*/run.sh)"; return; fi
    t0=$(tq_now)
    suite_db examples "$db" || return 0
    for script in "${scripts[@]}"; do
        dir=$(dirname "$script")
        name=$(basename "$dir")
        out=$TQ_WORK/log/example-$name.out
        rc=0
        (cd "$dir" && tq_run_as_user "$out" env \
            PGHOST="$TQ_SOCK" PGPORT="$TQ_PORT" PGDATABASE="$db" PGUSER="$TQ_DBUSER" \
            PGDATA="$TQ_PGDATA" TASKQ_PGLOG="$TQ_PGLOG" \
            timeout -k 10 "$FILE_TIMEOUT" bash ./run.sh) || rc=$?
        if [[ $rc -eq 0 ]]; then
            ok=$((ok + 1))
            printf '   %-40s ok\n' "examples/$name"
        else
            bad=$((bad + 1))
            printf '   %-40s FAILED (exit %s)\n' "examples/$name" "$rc"
            show_tail "$out" 60
        fi
    done
    add "$ok" "$bad"
    line examples "$ok ok, $bad failed ($(elapsed "$t0"))"
}

# A pytest suite against a database of the cluster, named to the tests by
# TASKQ_TEST_DSN: one test per pytest test, counted from pytest's junit xml
# (failures and errors fail; a run that fails without a failed test, e.g.
# nothing collected, counts one).  pytest_suite SUITE DB DIR [VAR=VALUE...]
pytest_suite() {
    local suite=$1 db=$2 dir=$3 out xml rc=0 ok=0 bad=0 skipped=0 t0
    shift 3
    if [[ ! -d $dir ]]; then line "$suite" "skipped (no $dir)"; return; fi
    t0=$(tq_now)
    suite_db "$suite" "$db" || return 0
    out=$TQ_WORK/log/$suite.out
    xml=$TQ_WORK/log/$suite-junit.xml
    tq_run_as_user "$out" env PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=clients/python \
        TASKQ_TEST_DSN="host=$TQ_SOCK port=$TQ_PORT dbname=$db user=$TQ_DBUSER" "$@" \
        timeout -k 10 "$FILE_TIMEOUT" python3 -m pytest -p no:cacheprovider -q -rfEs \
        --junitxml="$xml" "$dir" || rc=$?
    # Per file "   FILE  N ok, M failed", then "OK BAD SKIPPED".
    if [[ -s $xml ]]; then
        python3 -c '
import collections, sys, xml.etree.ElementTree as ET
per = collections.defaultdict(lambda: [0, 0, 0])
for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
    f = sys.argv[2] + "/" + case.get("classname", "?").rsplit(".", 1)[-1] + ".py"
    kind = 1 if case.find("failure") is not None or case.find("error") is not None \
        else 2 if case.find("skipped") is not None else 0
    per[f][kind] += 1
for f, (ok, bad, skip) in sorted(per.items()):
    print("   %-40s %d ok, %d failed%s" % (f, ok, bad, ", %d skipped" % skip if skip else ""))
print(*(sum(v[i] for v in per.values()) for i in range(3)))
' "$xml" "$dir" >"$out.counts" 2>&1 || true
        sed '$d' "$out.counts"
        read -r ok bad skipped < <(tail -n 1 "$out.counts") || true
        [[ $ok =~ ^[0-9]+$ && $bad =~ ^[0-9]+$ ]] || { ok=0; bad=0; skipped=0; }
    fi
    if [[ $rc -ne 0 && $bad -eq 0 ]]; then bad=1; fi   # could not run
    add "$ok" "$bad"
    SQL_FAILED=$((SQL_FAILED + bad))
    if [[ ${skipped:-0} -gt 0 ]]; then skipped=", $skipped skipped"; else skipped=""; fi
    line "$suite" "$ok ok, $bad failed$skipped ($(elapsed "$t0"))"
    if [[ $bad -gt 0 ]]; then
        echo "--- $suite: output (exit $rc)"
        show "$out" 200
    fi
}

# The Python client's pytest suite (clients/python/tests).
suite_python() { pytest_suite python taskq_python clients/python/tests; }

# The web console (tools/taskq-console) in a real browser: Debian's headless
# Chromium through chromedriver (test/console); screenshots of its pages go
# to the run's log folder (make console-shots copies them into docs/).
suite_console() {
    local home=$TQ_WORK/console-home
    mkdir -p "$home" && chown "$TQ_USER" "$home" 2>/dev/null || true
    pytest_suite console taskq_console test/console HOME="$home" TMPDIR="$home" \
        TASKQ_CONSOLE_SHOTS="$TQ_WORK/log/console-shots"
}

show_tail() {
    [[ -s $1 ]] || return 0
    echo "--- last ${2:-60} lines of $(basename "$1"):"
    tail -n "${2:-60}" "$1"
}

# Every ```sql block of README.md and docs/*.md runs, in order, one fresh
# database per file (test/bin/doc_sql.py); one test per block, and a block
# followed by an ```output block must print exactly that.  Then every
# complete worker they show (```LANG worker blocks: sh, bash, python, js)
# runs against tasks it must complete and stops on SIGTERM
# (test/bin/doc_workers.py); one test per worker.
suite_docs() {
    local out rc ok bad t0 oks=0 bads=0 script
    local -a files=(README.md)
    local f
    for f in docs/*.md; do [[ -f $f ]] && files+=("$f"); done
    t0=$(tq_now)
    for script in doc_sql doc_workers; do
        out=$TQ_WORK/log/$script.out
        rc=0
        tq_run_as_user "$out" env PGHOST="$TQ_SOCK" PGPORT="$TQ_PORT" \
            PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$SRC/clients/python" NODE_PATH="$TQ_NODE_PATH" \
            timeout -k 10 "$FILE_TIMEOUT" python3 "test/bin/$script.py" "${files[@]}" || rc=$?
        ok=$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\1/p' "$out" | tail -n 1)
        bad=$(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\2/p' "$out" | tail -n 1)
        ok=${ok:-0}
        bad=${bad:-0}
        if [[ $rc -ne 0 && $bad -eq 0 ]]; then bad=1; fi   # could not run
        oks=$((oks + ok))
        bads=$((bads + bad))
        if [[ $bad -gt 0 ]]; then
            echo "--- $script.py (exit $rc):"
            grep -v '^[0-9]* passed, ' "$out" >"$out.short" || true
            show "$out.short" 200
        elif [[ $script == doc_sql ]]; then
            grep -E '^   .* ok' "$out" | awk '{print $1}' | sed -E 's/:[0-9]+$//' | sort | uniq -c |
                awk '{printf "   %-40s %s ok\n", $2, $1}'
        else
            grep -E '^   .* ok' "$out" || true
        fi
    done
    add "$oks" "$bads"
    SQL_FAILED=$((SQL_FAILED + bads))
    line docs "$oks ok, $bads failed ($(elapsed "$t0"))"
}

# run SUITE: unless TASKQ_SUITES names others only
run() { if [[ -z ${TASKQ_SUITES:-} || " $TASKQ_SUITES " == *" $1 "* ]]; then "suite_$1"; fi; }
run static
run regress
run isolation
run pgtap
run examples
run python
run console
run docs
check_server_log
tq_cluster_stop
[[ $SANITIZE == 1 ]] && sanitizer_selftest
run tap
[[ $SANITIZE == 1 ]] && sanitizer_reports

# ---------------------------------------------------------------- summary
line total "$(elapsed "$T_START")"
finish_work
DONE=1
echo "$PASSED passed, $FAILED failed"
[[ $FAILED -eq 0 ]]
