#!/usr/bin/env bash
# test/static/install_scripts.sh — PostgreSQL's rules for extension scripts
# (CVE-2022-2625, CVE-2023-39417), checked on every src/sql/taskq--*.sql:
#   - no CREATE OR REPLACE and no IF NOT EXISTS: the script must never adopt
#     an object someone else created;
#   - no @extschema@ inside a quoted literal;
#   - the \echo ... \quit guard against running the script by hand;
#   - every SECURITY DEFINER function pins search_path;
#   - every function, view, table and type has a COMMENT.
# Exit 0 when all hold; otherwise print each violation and exit 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

fail=0
report() { echo "install_scripts: $1" >&2; fail=1; }

scripts=(src/sql/taskq--*.sql)
[[ -e ${scripts[0]} ]] || { report "no install script found"; exit 1; }

for f in "${scripts[@]}"; do
    # Strip comments so that prose may mention the forbidden words.
    body=$(sed -e 's/--.*$//' "$f" | perl -0pe 's{/\*.*?\*/}{}gs')

    grep -niE 'create[[:space:]]+or[[:space:]]+replace' <<<"$body" &&
        report "$f: CREATE OR REPLACE"
    grep -niE 'if[[:space:]]+not[[:space:]]+exists' <<<"$body" &&
        report "$f: IF NOT EXISTS"
    grep -nE "'[^']*@extschema@[^']*'" <<<"$body" &&
        report "$f: @extschema@ inside a quoted literal"
    grep -q '^\\echo Use "CREATE EXTENSION taskq" to load this file\. \\quit$' "$f" ||
        report "$f: missing the \\echo ... \\quit guard"

    # SECURITY DEFINER functions must SET search_path.
    perl -0ne 'while (/(CREATE\s+FUNCTION\s+([\w."]+)\s*\(.*?)(?=CREATE\s|\z)/gis) {
                   my ($def, $name) = ($1, $2);
                   print "$name\n" if $def =~ /SECURITY\s+DEFINER/i && $def !~ /SET\s+search_path/i;
               }' <<<"$body" | while read -r fn; do
        report "$f: SECURITY DEFINER function $fn does not pin search_path"
    done

    # Every created object is commented.
    for kind in FUNCTION VIEW TABLE TYPE SEQUENCE; do
        while read -r name; do
            [[ -n $name ]] || continue
            grep -qiE "COMMENT ON $kind ${name//./\\.}[ (]" <<<"$body" ||
                report "$f: $kind $name has no COMMENT"
        done < <(grep -oiE "^CREATE $kind [a-z_.\"]+" <<<"$body" | awk '{print $3}')
    done
done

exit $fail
