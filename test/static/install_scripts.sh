#!/usr/bin/env bash
# test/static/install_scripts.sh — PostgreSQL's rules for extension scripts
# (CVE-2022-2625, CVE-2023-39417), checked on src/sql/taskq.sql (the source
# of the default version's install script) and every src/sql/taskq--*.sql
# kept in the tree (the 0.1 install script, the update scripts):
#   - no CREATE OR REPLACE and no IF NOT EXISTS: the script must never adopt
#     an object someone else created;
#   - no @extschema@ inside a quoted literal;
#   - the \echo ... \quit guard against running the script by hand;
#   - every object is created in schema taskq, by name (the control file
#     names pg_catalog; anything unqualified would land there), and the
#     install script creates schema taskq itself;
#   - in views, column defaults, CHECK constraints and index definitions
#     (expressions stored at creation and resolved with the installing
#     session's search_path): every operator written OPERATOR(pg_catalog.x),
#     every function and cast type schema-qualified;
#   - every SECURITY DEFINER function pins search_path = pg_catalog, pg_temp;
#   - nothing is left to PUBLIC: the script revokes PUBLIC's default EXECUTE
#     on functions and grants nothing TO PUBLIC;
#   - every function, view, table and type has a COMMENT.
# The checker first proves on bad snippets that it catches each kind of
# violation, then runs on the real scripts.  The install script the build
# makes, taskq--<default_version>.sql, must be a copy of taskq.sql.
# Exit 0 when all hold; otherwise print each violation and exit 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# check FILE: print one line per violation.
check() {
    perl -e '
use strict;
use warnings;

my $file = shift;
# The extension the script installs, and the schemas it may create objects
# in: taskq, or taskq_proxy (proxy/), which creates taskq and taskq_proxy.
my $ext = $file =~ /taskq_proxy/ ? "taskq_proxy" : "taskq";
my $schemas = $ext eq "taskq" ? qr/taskq/i : qr/taskq|taskq_proxy/i;
open(my $fh, "<", $file) or die "$file: $!";
my $raw = do { local $/; <$fh> };
close $fh;
my @v;
sub v { push @v, "$file: $_[0]"; }

# Comments out, so that prose may mention the forbidden words.  Dollar-quoted
# bodies and literals stay (they are checked as text where it matters).
(my $body = $raw) =~ s{/\*.*?\*/}{}gs;
$body =~ s/--[^\n]*//g;
$body =~ s/^\\[^\n]*//mg;                                # psql meta-commands

v("CREATE OR REPLACE") if $body =~ /create\s+or\s+replace/i;
v("IF NOT EXISTS") if $body =~ /if\s+not\s+exists/i;
v("\@extschema\@ inside a quoted literal") if $body =~ /\x27[^\x27]*\@extschema\@[^\x27]*\x27/;
v("missing the \\echo ... \\quit guard")
  unless $raw =~ /^\\echo Use "CREATE EXTENSION $ext" to load this file\. \\quit$/m
  || ($file =~ /--[^-]+--[^-]+\.sql$/
      && $raw =~ /^\\echo Use "ALTER EXTENSION taskq UPDATE TO \x27[^\x27]+\x27" to load this file\. \\quit$/m);

# Split into statements at top-level semicolons (outside literals,
# quoted identifiers and dollar quotes).
my @stmts;
{
	my ($cur, $i, $n) = ("", 0, length $body);
	while ($i < $n)
	{
		my $c = substr($body, $i, 1);
		if ($c eq "\x27" || $c eq "\"")
		{
			my $j = index($body, $c, $i + 1);
			$j = $n - 1 if $j < 0;
			$cur .= substr($body, $i, $j - $i + 1);
			$i = $j + 1;
			next;
		}
		if ($c eq "\$" && substr($body, $i) =~ /^(\$[A-Za-z_]*\$)/)
		{
			my $tag = $1;
			my $j = index($body, $tag, $i + length $tag);
			$j = $n - length $tag if $j < 0;
			$cur .= substr($body, $i, $j + length($tag) - $i);
			$i = $j + length $tag;
			next;
		}
		if ($c eq ";") { push @stmts, $cur; $cur = ""; $i++; next; }
		$cur .= $c;
		$i++;
	}
	push @stmts, $cur if $cur =~ /\S/;
}

my %keyword = map { $_ => 1 } qw(
  filter over in any all some exists coalesce nullif greatest least case cast
  values as and or not where on using select from join array row operator check
  key by when then else end is null between like distinct with lateral default
  primary unique constraint references group order partition rows range);

# An expression the server stores at creation: operators, functions and
# cast types must not depend on search_path.
sub check_expr
{
	my ($what, $e) = @_;
	$e =~ s/\x27(?:[^\x27]|\x27\x27)*\x27/\x27\x27/g;     # literals
	$e =~ s/"[^"]*"/ q /g;                                    # quoted identifiers
	$e =~ s/OPERATOR\s*\(\s*pg_catalog\.[^)\s]+\s*\)/ op /gi;
	while ($e =~ /::\s*([A-Za-z_][\w.]*)/g)
	{
		my $t = $1;
		v("$what: cast to unqualified type $t") unless $t =~ /^(pg_catalog|$schemas)\./i;
	}
	$e =~ s/::\s*[A-Za-z_][\w.]*(\[\])?/ /g;
	$e =~ s/\(\s*\*\s*\)/()/g;                                # count(*)
	$e =~ s/\.\*/ /g;
	if ($e =~ /([-+*\/<>=~!@#%^&|`?]+)/)
	{
		v("$what: operator $1 not written OPERATOR(pg_catalog.$1)");
	}
	while ($e =~ /(?<![\w.])([A-Za-z_]\w*)\s*\(/g)
	{
		my $f = $1;
		v("$what: function $f() not schema-qualified") unless $keyword{ lc $f };
	}
}

# The contents of the parenthesised group starting at or after $pos.
sub paren_group
{
	my ($s, $pos) = @_;
	my $start = index($s, "(", $pos);
	return (undef, -1) if $start < 0;
	my $depth = 0;
	for my $i ($start .. length($s) - 1)
	{
		my $c = substr($s, $i, 1);
		$depth++ if $c eq "(";
		$depth-- if $c eq ")";
		return (substr($s, $start + 1, $i - $start - 1), $i + 1) if $depth == 0;
	}
	return (undef, -1);
}

# Split at top-level commas.
sub split_top
{
	my ($s) = @_;
	my @parts;
	my ($cur, $depth) = ("", 0);
	for my $c (split //, $s)
	{
		$depth++ if $c eq "(";
		$depth-- if $c eq ")";
		if ($c eq "," && $depth == 0) { push @parts, $cur; $cur = ""; next; }
		$cur .= $c;
	}
	push @parts, $cur;
	return @parts;
}

my $creates_schema = 0;
for my $st (@stmts)
{
	(my $s = $st) =~ s/^\s+//;
	next unless $s =~ /^(CREATE|GRANT|REVOKE|ALTER)\b/i;

	if ($s =~ /^CREATE\s+SCHEMA\s+(\S+)/i)
	{
		$creates_schema = 1 if lc $1 eq "taskq";
		v("creates schema $1, not taskq") unless $1 =~ /^($schemas)$/;
		next;
	}
	if ($s =~ /^CREATE\s+(?:UNIQUE\s+)?INDEX\b/i)
	{
		v("index not on a table of schema taskq: " . substr($s, 0, 60))
		  unless $s =~ /\bON\s+taskq\./i;
		if ($s =~ /\bON\s+[\w."]+\s*/gi)
		{
			my ($cols) = paren_group($s, pos($s));
			check_expr("index", $cols) if defined $cols;
		}
		check_expr("index predicate", $1) if $s =~ /\bWHERE\b(.*)\z/is;
		next;
	}
	if ($s =~ /^CREATE\s+TRIGGER\b/i)
	{
		v("trigger not on a table of schema taskq") unless $s =~ /\bON\s+taskq\./i;
		v("trigger function not in schema taskq") unless $s =~ /\bEXECUTE\s+(FUNCTION|PROCEDURE)\s+taskq\./i;
		next;
	}
	if ($s =~ /^CREATE\s+(TABLE|VIEW|FUNCTION|TYPE|SEQUENCE|PROCEDURE|AGGREGATE|OPERATOR|DOMAIN)\s+("?[\w.]+"?(?:\."?\w+"?)?)/i)
	{
		my ($kind, $name) = (uc $1, $2);
		v("$kind $name is not created in schema taskq") unless $name =~ /^($schemas)\./i;
	}
	if ($s =~ /^CREATE\s+VIEW\s+\S+\s+AS\b(.*)\z/is)
	{
		check_expr("view", $1);
	}
	if ($s =~ /^CREATE\s+TABLE\s+(\S+)/i)
	{
		my $table = $1;
		my ($cols) = paren_group($s, 0);
		for my $item (split_top($cols // ""))
		{
			if ($item =~ /\bDEFAULT\b(.*?)(?=\bNOT\s+NULL\b|\bNULL\b|\bCHECK\b|\bCONSTRAINT\b|\bREFERENCES\b|\bPRIMARY\b|\bUNIQUE\b|\bGENERATED\b|\z)/is)
			{
				check_expr("$table default", $1);
			}
			while ($item =~ /\bCHECK\b/gi)
			{
				my ($e) = paren_group($item, pos($item));
				check_expr("$table check", $e) if defined $e;
			}
		}
	}
	if ($s =~ /^CREATE\s+FUNCTION\s+([\w."]+)/i)
	{
		my $name = $1;
		if ($s =~ /SECURITY\s+DEFINER/i
			&& $s !~ /SET\s+search_path\s*(=|TO)\s*pg_catalog\s*,\s*pg_temp\b/i)
		{
			v("SECURITY DEFINER function $name does not pin search_path = pg_catalog, pg_temp");
		}
	}
	v("grants to PUBLIC: " . substr($s, 0, 60)) if $s =~ /^GRANT\b.*\bTO\b.*\bPUBLIC\b/is;
}
# Install scripts (not upgrade scripts taskq--A--B.sql) set up the schema
# and its privileges.
if ($file !~ m{taskq--[^/]*--[^/]*\.sql$})
{
	v("does not create schema taskq itself (CREATE SCHEMA taskq)") unless $creates_schema;
	v("does not revoke EXECUTE on its functions from PUBLIC")
	  unless $body =~ /REVOKE\s+ALL\s+ON\s+ALL\s+FUNCTIONS\s+IN\s+SCHEMA\s+taskq\b[^;]*\s+FROM\s+PUBLIC/i;
}

# Every created object is commented.
for my $kind (qw(FUNCTION VIEW TABLE TYPE SEQUENCE SCHEMA))
{
	while ($body =~ /^CREATE $kind ([a-z_."]+)/gim)
	{
		my $name = $1;
		v("$kind $name has no COMMENT") unless $body =~ /COMMENT ON $kind \Q$name\E[ (]/i;
	}
}
print "$_\n" for @v;
' "$1"
}

fail=0
report() { echo "install_scripts: $1" >&2; fail=1; }

# --- self-test: each kind of violation is caught ----------------------------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
good_head='\echo Use "CREATE EXTENSION taskq" to load this file. \quit
CREATE SCHEMA taskq;
COMMENT ON SCHEMA taskq IS '"'x'"';
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA taskq FROM PUBLIC;'
selftest() {   # selftest "expected message part" "sql"
    printf '%s\n%s\n' "$good_head" "$2" >"$tmp/case.sql"
    if ! check "$tmp/case.sql" | grep -qF -- "$1"; then
        report "self-test: the checker misses \"$1\" in: $2"
    fi
}
selftest "operator = not written" "CREATE VIEW taskq.v AS SELECT 1 FROM taskq.t WHERE a = 1;"
selftest "function now() not schema-qualified" "CREATE VIEW taskq.v AS SELECT now();"
selftest "function count() not schema-qualified" "CREATE VIEW taskq.v AS SELECT count(*) FROM taskq.t;"
selftest "cast to unqualified type jsonb" "CREATE VIEW taskq.v AS SELECT '{}'::jsonb;"
selftest "taskq.t default: function now()" "CREATE TABLE taskq.t (a timestamptz DEFAULT now());"
selftest "taskq.t default: operator +" "CREATE TABLE taskq.t (a int DEFAULT 1 + 1);"
selftest "taskq.t check: operator >" "CREATE TABLE taskq.t (a int CHECK (a > 0));"
selftest "index predicate: operator =" "CREATE INDEX i ON taskq.t (a) WHERE a = 1;"
selftest "TABLE t is not created in schema taskq" "CREATE TABLE t (a int);"
selftest "does not pin search_path" "CREATE FUNCTION taskq.f() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT 1';"
selftest "CREATE OR REPLACE" "CREATE OR REPLACE FUNCTION taskq.f() RETURNS int LANGUAGE sql AS 'SELECT 1';"
selftest "IF NOT EXISTS" "CREATE TABLE IF NOT EXISTS taskq.t (a int);"
selftest "@extschema@ inside a quoted literal" "SELECT '@extschema@.f';"
selftest "grants to PUBLIC" "GRANT EXECUTE ON FUNCTION taskq.f() TO PUBLIC;"
selftest "has no COMMENT" "CREATE TABLE taskq.t (a int);"
printf '%s\n' '\echo Use "CREATE EXTENSION taskq" to load this file. \quit' >"$tmp/bare.sql"
check "$tmp/bare.sql" | grep -qF "does not create schema taskq itself" ||
    report "self-test: the checker misses a script that does not create schema taskq"
check "$tmp/bare.sql" | grep -qF "does not revoke EXECUTE" ||
    report "self-test: the checker misses a script that leaves EXECUTE to PUBLIC"
# and a clean snippet passes
printf '%s\n%s\n' "$good_head" "CREATE VIEW taskq.v AS SELECT pg_catalog.count(*) FILTER (WHERE t.a OPERATOR(pg_catalog.=) 'x'::pg_catalog.text) FROM taskq.t AS t;
COMMENT ON VIEW taskq.v IS 'x';" >"$tmp/clean.sql"
out=$(check "$tmp/clean.sql")
[[ -z $out ]] || report "self-test: a clean snippet is flagged: $out"

# --- the real scripts --------------------------------------------------------
[[ -f src/sql/taskq.sql ]] || { report "src/sql/taskq.sql not found"; exit 1; }
version=$(sed -n "s/^default_version = '\(.*\)'\$/\1/p" taskq.control)
[[ -n $version ]] || { report "no default_version in taskq.control"; exit 1; }
built=src/sql/taskq--$version.sql
# The built copy: the same text as its source (checked once, as the source).
if [[ -e $built ]] && ! cmp -s src/sql/taskq.sql "$built"; then
    report "$built differs from src/sql/taskq.sql (run make to rebuild it)"
fi
scripts=(src/sql/taskq.sql proxy/taskq_proxy.sql)
for f in src/sql/taskq--*.sql; do
    [[ -e $f && $f != "$built" ]] && scripts+=("$f")
done
for f in "${scripts[@]}"; do
    while IFS= read -r line; do
        [[ -n $line ]] && report "$line"
    done < <(check "$f")
done

exit $fail
