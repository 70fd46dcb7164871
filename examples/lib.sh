# examples/lib.sh — sourced by every examples/*/run.sh: checks what an
# example needs (psql, python3 with psycopg2, a connection, the extension)
# and sets PYTHON and PSQL.  The caller sets EXAMPLE (its name) first.

die() { echo "$EXAMPLE: $*" >&2; exit 1; }

command -v psql >/dev/null || die "psql not found (Debian package postgresql-client-15)"
PYTHON=""
for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null || continue
    if "$py" -c 'import psycopg2' 2>/dev/null; then PYTHON=$py; break; fi
done
if [[ -z $PYTHON ]]; then
    command -v python3 >/dev/null || die "python3 not found (Debian package python3)"
    die "python module psycopg2 not found (Debian package python3-psycopg2)"
fi

PSQL=(psql -X -q -v ON_ERROR_STOP=1)
"${PSQL[@]}" -c 'SELECT 1' >/dev/null || die "cannot connect (PGHOST=${PGHOST:-} PGPORT=${PGPORT:-} PGDATABASE=${PGDATABASE:-})"
[[ $("${PSQL[@]}" -At -c "SELECT count(*) FROM pg_extension WHERE extname = 'taskq'") == 1 ]] ||
    die "extension taskq is not installed in database ${PGDATABASE:-?}: CREATE EXTENSION taskq"
