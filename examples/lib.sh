# examples/lib.sh — sourced by every examples/*/run.sh: checks what an
# example needs (psql, python3 with psycopg2 for the producers and monitors
# and psycopg 3 for the workers' taskq client, a connection, the extension)
# and sets PYTHON and PSQL; then the process, clock and end-check helpers
# every run.sh shares.  The caller sets EXAMPLE (its name) first.
#
# VERBOSE=1 (make demo VERBOSE=1): the examples' full monitors (tables,
# progress bars, status lines) and every worker's log line.  Without it: a
# summary line a second (progress.py) and the events worth seeing.

die() { echo "$EXAMPLE: $*" >&2; exit 1; }

command -v psql >/dev/null || die "psql not found (Debian package postgresql-client-15)"
PYTHON=""
for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null || continue
    if "$py" -c 'import psycopg2, psycopg' 2>/dev/null; then PYTHON=$py; break; fi
done
if [[ -z $PYTHON ]]; then
    command -v python3 >/dev/null || die "python3 not found (Debian package python3)"
    die "python modules psycopg2 and psycopg (3) not found (Debian packages python3-psycopg2," \
        "python3-psycopg)"
fi

PSQL=(psql -X -q -v ON_ERROR_STOP=1)
"${PSQL[@]}" -c 'SELECT 1' >/dev/null || die "cannot connect (PGHOST=${PGHOST:-} PGPORT=${PGPORT:-} PGDATABASE=${PGDATABASE:-})"
[[ $("${PSQL[@]}" -At -c "SELECT count(*) FROM pg_extension WHERE extname = 'taskq'") == 1 ]] ||
    die "extension taskq is not installed in database ${PGDATABASE:-?}: CREATE EXTENSION taskq"

VERBOSE=${VERBOSE:-0}
export VERBOSE
verbose() { [[ $VERBOSE != 0 ]]; }

# once() in demo.py: an event explained the first time any process
# of this run meets it (a file per event in this directory).
DEMO_ONCE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/$EXAMPLE-once.XXXXXX") || die "mktemp failed"
export DEMO_ONCE_DIR

# ---- processes: background pids an example adds to PIDS get SIGTERM when
# it stops them (stop_pids) or exits; EXIT_HOOK, if set, runs then too (to
# stop what the example started otherwise), before the last wait.
PIDS=()
EXIT_HOOK=""
stop_pids() {
    local p
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
}
on_exit() {
    stop_progress
    stop_pids
    [[ -z $EXIT_HOOK ]] || $EXIT_HOOK
    wait 2>/dev/null || true
    [[ -z $DEMO_ONCE_DIR ]] || rm -rf "$DEMO_ONCE_DIR"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

# Seconds since the example started, to a tenth.
T0=${EPOCHREALTIME/./}
elapsed() { local d=$(((${EPOCHREALTIME/./} - T0) / 100000)); echo "$((d / 10)).$((d % 10))"; }

# start_progress ACTIONS [NOTE_SQL]: the summary line a second (progress.py)
# about the tasks of ACTIONS (comma-separated), in the background; stop it
# with stop_progress, which waits for its last line.
PROGRESS_PID=""
start_progress() {
    local -a note=()
    [[ -z ${2:-} ]] || note=(--note "$2")
    "$PYTHON" -u ../progress.py --name "$EXAMPLE" --t0 "$T0" --actions "$1" "${note[@]}" &
    PROGRESS_PID=$!
}
stop_progress() {
    [[ -n $PROGRESS_PID ]] || return 0
    kill -TERM "$PROGRESS_PID" 2>/dev/null || true
    wait "$PROGRESS_PID" 2>/dev/null || true
    PROGRESS_PID=""
}

# fail_on_violations VIEW: the example's end-state check; print the rows of
# VIEW (column violation) and exit 1 if there are any.
fail_on_violations() {
    local v
    v=$("${PSQL[@]}" -At -c "SELECT violation FROM $1")
    [[ -n $v ]] || return 0
    echo "$EXAMPLE: FAILED, $(wc -l <<<"$v") violation(s):"
    head -n 50 <<<"$v"
    exit 1
}
