# ALTER EXTENSION taskq UPDATE compared as pg_dump sees it: for every
# version older than the default (0.1, the oldest, first of all), a
# database that installed it and was updated must dump the same schema as
# a fresh install of the default version.  011_upgrade.pl compares the
# catalog through a query of ours, which sees only what that query asks
# for; pg_dump writes everything a restore (or pg_upgrade) would recreate,
# in the order it would, so a difference that query misses shows here.
#
# Plain pg_dump writes an extension as one CREATE EXTENSION line, so the
# dumps are made with --binary-upgrade, the mode pg_upgrade uses: it writes
# every member object and its ALTER EXTENSION ... ADD, the extension's
# configuration tables and its initial privileges.  Both dumps come from
# the same pg_dump against the same server, so nothing here depends on one
# major version's output; the text is normalised only where an upgraded
# database must differ from a fresh one (see normalise below), never
# compared with a stored file.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;

my $node = taskq_node('upgrade_dump', no_extension => 1,
	conf => "taskq.background_worker = off\n");

my $default = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'taskq'");
my @older = split /\n/, $node->safe_psql('postgres',
	"SELECT version FROM pg_available_extension_versions WHERE name = 'taskq'"
	  . " AND version <> '$default' ORDER BY string_to_array(version, '.')::int[]");
ok((grep { $_ eq '0.1' } @older), 'the oldest released version, 0.1, is available')
  or BAIL_OUT('no taskq 0.1 to update from');
# 0.1 first: the longest update chain.
@older = ('0.1', grep { $_ ne '0.1' } @older);

my $tmp = PostgreSQL::Test::Utils::tempdir();

# pg_dump of 18 can write planner statistics, which describe the data, not
# the schema: --schema-only leaves them out already, and so does the
# switch, said explicitly where this pg_dump has it.
my ($stdout, $stderr);
IPC::Run::run([ 'pg_dump', '--help' ], '>', \$stdout, '2>', \$stderr);
my @stats = $stdout =~ /--no-statistics/ ? ('--no-statistics') : ();

# Relation OIDs of $db by name (a TOAST table as "toast of <its table>":
# its own name carries its table's OID), to put names where the dump
# writes OIDs that must differ between two databases.
sub relation_names
{
	my ($db) = @_;
	my %name;
	for my $l (split /\n/, $node->safe_psql($db, q{
SELECT c.oid, coalesce('toast of ' || t.oid::regclass::text, c.oid::regclass::text)
  FROM pg_class AS c LEFT JOIN pg_class AS t ON t.reltoastrelid = c.oid}))
	{
		my ($oid, $n) = split /\|/, $l, 2;
		$name{$oid} = $n;
	}
	return \%name;
}

# extconfig and extcondition as pg_dump writes them (an OID list and a
# text[] literal), as the same two literals with names for OIDs, in the
# order of the names.
sub config_tables
{
	my ($oidname, $oids, $conds) = @_;
	my @o = map { $oidname->($_) } split /,/, $oids;
	my @c;
	push @c, $1 // $2 while $conds =~ /\G(?:^|,)(?:("(?:[^"\\]|\\.)*")|([^,]*))/g;
	@c = () if $conds eq '';
	return "'{(config tables and conditions do not pair up: $oids / $conds)}'" if @o != @c;
	my @i = sort { $o[$a] cmp $o[$b] } 0 .. $#o;
	return "'{" . join(',', @o[@i]) . "}', '{" . join(',', @c[@i]) . "}'";
}

# The dump of $db normalised; returns (text, { "table.column" => missing value }).
sub dump_of
{
	my ($db) = @_;
	my $file = "$tmp/$db.sql";
	$node->command_ok(
		[
			'pg_dump', '--schema-only', '--binary-upgrade', @stats,
			'--dbname' => $node->connstr($db), '--file' => $file
		],
		"pg_dump --schema-only --binary-upgrade of $db");
	my $names = relation_names($db);
	my $oidname = sub { my ($o) = @_; '<' . ($names->{$o} // "unknown oid $o") . '>' };
	my (@out, %missing);
	my @lines = split /\n/, slurp($file);
	for (my $i = 0; $i < @lines; $i++)
	{
		local $_ = $lines[$i];
		# pg_dump's \restrict guard carries a random key, new in every dump.
		next if /^\\(?:un)?restrict\s/;
		# OIDs, relfilenodes and the like that pg_upgrade carries over: they
		# are whatever the database's OID counter gave its objects, so two
		# databases never agree on them.  (What they are given to, the next
		# statement, is compared.)
		next if /^SELECT pg_catalog\.binary_upgrade_set_next_\w+\(/;
		# A column that an update script added with a default has that
		# default as its "missing value" (the value rows written before the
		# ADD COLUMN read), which a fresh table has no use for: a stored
		# detail of ALTER TABLE ADD COLUMN that no query can tell apart.
		# Each is collected here and checked below to be the column's default.
		if (/^SELECT pg_catalog\.binary_upgrade_set_missing_value\('(.*)'::pg_catalog\.regclass,\s*'(.*)',\s*'(.*)'\);$/)
		{
			$missing{"$1.$2"} = $3;
			pop @out if @out && $out[-1] eq '-- set missing value.';
			next;
		}
		# The oldest unfrozen transaction and multixact of each table, and
		# the OID naming it: the transaction that created the table.
		s/\bSET relfrozenxid = '\d+', relminmxid = '\d+'/SET relfrozenxid = 'X', relminmxid = 'X'/;
		s/\bWHERE oid = '(\d+)'/'WHERE oid = ' . $oidname->($1)/e;
		# The extension's configuration tables (pg_extension_config_dump), as
		# OIDs with their filter conditions alongside: by name instead, and
		# in the order of the names.  Their order is that in which the
		# scripts registered them (an update script registers a new one
		# after the older ones, a fresh install in the order of taskq.sql);
		# only pg_extension.extconfig shows it, and pg_dump dumps their data
		# in an order of its own.
		s/(binary_upgrade_create_empty_extension\(.*?)'\{([\d,]*)\}', '\{(.*?)\}'/
		  $1 . config_tables($oidname, $2, $3)/e;
		push @out, $_;
	}
	# Runs of blank lines as one: leaving a statement out above leaves the
	# blank lines that pg_dump wrote around it.
	my $text = join("\n", @out) . "\n";
	$text =~ s/\n{3,}/\n\n/g;
	return ($text, \%missing);
}

# The differences between two texts as a unified diff ('' when equal).
sub diff_of
{
	my ($want, $got, $label) = @_;
	return '' if $want eq $got;
	my ($wfile, $gfile) = ("$tmp/want.txt", "$tmp/$label.txt");
	for ([ $wfile, $want ], [ $gfile, $got ])
	{
		open(my $f, '>', $_->[0]) or die "$_->[0]: $!";
		print $f $_->[1];
		close $f;
	}
	my ($out, $err);
	IPC::Run::run([ 'diff', '-U', '3', $wfile, $gfile ], '>', \$out, '2>', \$err);
	return $out ne '' ? $out : "differ, but diff printed nothing: $err";
}

$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION taskq');
my ($want, $fresh_missing) = dump_of('fresh');
like($want, qr/^CREATE TABLE taskq\.tasks \(/m, 'the dump of a fresh install has the task table');
like($want, qr/^ALTER EXTENSION taskq ADD TABLE taskq\.tasks;$/m,
	'the dump shows the extension\'s members (binary-upgrade mode)');
is(join(' ', sort keys %$fresh_missing), '', 'a fresh install has no missing values');

for my $v (@older)
{
	my $db = 'from_' . ($v =~ s/\W/_/gr);
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION taskq VERSION '$v'");
	$node->safe_psql($db, 'ALTER EXTENSION taskq UPDATE');
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'taskq'"),
		$default, "$v updates to $default");
	my ($got, $missing) = dump_of($db);
	my $diff = diff_of($want, $got, $db);
	is($diff, '', "$v updated to $default dumps the same schema as a fresh $default");

	# The missing values left out above: each is the column's default in a
	# fresh install, evaluated there, so a row of before the update reads
	# what a row of a fresh install would.
	my @bad;
	for my $col (sort keys %$missing)
	{
		my ($rel, $att) = $col =~ /^(.*)\.([^.]+)$/;
		my $def = $node->safe_psql('fresh', qq{
SELECT pg_get_expr(d.adbin, d.adrelid)
  FROM pg_attribute AS a JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attrelid = '$rel'::regclass AND a.attname = '$att'});
		my $val = $def eq '' ? '(no default)'
		  : $node->safe_psql('fresh', "SELECT ARRAY[$def]::text");
		push @bad, "$col: missing value $missing->{$col}, fresh default $def = $val"
		  unless $val eq $missing->{$col};
	}
	diag($_) for @bad;
	is(scalar @bad, 0, "$v updated: the missing values ("
		  . (join(', ', sort keys %$missing) || 'none')
		  . ') are the columns\' defaults');
}

$node->stop;
done_testing();
