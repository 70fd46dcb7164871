#!/usr/bin/env bash
# test/static/console_install.sh — taskq-console as it is installed and
# documented:
#   - make install-taskq-console (the target make install and the Debian
#     package use) installs every file of tools/taskq-console/taskq_console
#     (a file in a new subdirectory would otherwise be left out), and the
#     installed command, a link in the bin directory, runs (--version);
#   - every option of its command line (cli.py's add_argument) is in the
#     option table of docs/console.md, and the table names no other.
# The checker first proves on a planted tree that it catches a file left
# out and an option undocumented or unknown, then runs on the repository.
# Exit 0 when all hold; otherwise print each violation and exit 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# install_console TQC DEST: make install-taskq-console of TQC into DEST (its
# package in DEST/share/taskq-console, the command in DEST/bin).
install_console() {
    make -s --no-print-directory install-taskq-console PG_CONFIG="$PG_CONFIG" TQC="$1" \
        DESTDIR="$2" TASKQ_CONSOLE_DIR=/share/taskq-console TASKQ_CONSOLE_BINDIR=/bin \
        >"$tmp/make.log" 2>&1 ||
        echo "make install-taskq-console failed: $(tail -n 3 "$tmp/make.log" | tr '\n' ' ')"
}

# check_install TQC DEST: one line per file of TQC/taskq_console not
# installed under DEST, and one if the installed command does not run.
check_install() {
    local tqc=$1 dest=$2 f share=$2/share/taskq-console
    while IFS= read -r f; do
        [[ -f $share/$f ]] || echo "not installed: $f"
    done < <(cd "$tqc" && find taskq_console -type f ! -name '*.pyc' ! -path '*/__pycache__/*' | sort)
    [[ -L $dest/bin/taskq-console ]] || echo "not a link: bin/taskq-console"
    "$dest/bin/taskq-console" --version >/dev/null 2>&1 ||
        echo "the installed taskq-console does not run: $("$dest/bin/taskq-console" --version 2>&1 | tail -n 1)"
}

# check_options CLI DOC: one line per option of CLI missing from DOC's
# table, and per option of the table CLI does not have.
check_options() {
    python3 - "$1" "$2" <<'PY'
import re, sys
cli = open(sys.argv[1], encoding="utf-8").read()
doc = open(sys.argv[2], encoding="utf-8").read()
have = set(re.findall(r'add_argument\(\s*"(--[a-z-]+)"', cli)) | {"--help"}
# the option table: rows whose first cell is `--option ...`
table = set(re.findall(r'^\| `(--[a-z-]+)', doc, re.M))
for o in sorted(have - table - {"--help"}):
    print(f"option {o} of cli.py is not in docs/console.md's table")
for o in sorted(table - have):
    print(f"docs/console.md's table has {o}, which cli.py does not")
PY
}

# Self-test on a planted tree.
mkdir -p "$tmp/tqc"
cp -r tools/taskq-console/. "$tmp/tqc/"
find "$tmp/tqc" -name __pycache__ -prune -exec rm -rf {} +
mkdir -p "$tmp/tqc/taskq_console/static/img"
echo planted >"$tmp/tqc/taskq_console/static/img/planted.svg"
sed -i 's|p.add_argument("--threads"|p.add_argument("--planted-option", help="x")\n    p.add_argument("--threads"|' \
    "$tmp/tqc/taskq_console/cli.py"
sed 's/^| `--log-file FILE`/| `--log-files FILE`/' docs/console.md >"$tmp/console.md"
# a file in a new subdirectory is installed; a file removed after the
# install is reported
install_console "$tmp/tqc" "$tmp/dest"
[[ -f $tmp/dest/share/taskq-console/taskq_console/static/img/planted.svg ]] ||
    { echo "console_install.sh self-test: a file in a new subdirectory was not installed" >&2; exit 1; }
rm "$tmp/dest/share/taskq-console/taskq_console/static/console.css"
out=$(check_install "$tmp/tqc" "$tmp/dest"; check_options "$tmp/tqc/taskq_console/cli.py" "$tmp/console.md")
for want in "not installed: taskq_console/static/console.css" \
    "option --planted-option of cli.py is not in" "option --log-file of cli.py is not in" \
    "table has --log-files, which cli.py does not"; do
    if ! grep -qF -- "$want" <<<"$out"; then
        echo "console_install.sh self-test: not caught: $want" >&2
        [[ -z $out ]] || echo "$out" >&2
        exit 1
    fi
done

out=$(install_console "$PWD/tools/taskq-console" "$tmp/real"
    check_install "$PWD/tools/taskq-console" "$tmp/real"
    check_options tools/taskq-console/taskq_console/cli.py docs/console.md)
if [[ -n $out ]]; then
    echo "$out"
    exit 1
fi
echo "console_install: every file of taskq_console installed, the command runs, every option documented"
