# ALTER EXTENSION taskq UPDATE from every released version: for each
# version older than the default, a database that installed it and was
# updated must end up with the same objects, privileges and comments as a
# fresh install of the default version (compared as the catalog's text for
# schema taskq, plus the extension's members).  A fresh install runs
# src/sql/taskq.sql (built into taskq--<default>.sql); an older version is
# installed from taskq--0.1.sql and the update scripts, so this is where
# the current schema and the update chain must agree.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;

my $node = taskq_node('upgrade', no_extension => 1,
	conf => "taskq.background_worker = off\n");

my $default = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'taskq'");
my @older = split /\n/, $node->safe_psql('postgres',
	"SELECT version FROM pg_available_extension_versions WHERE name = 'taskq'"
	  . " AND version <> '$default' ORDER BY version");
note "default version $default; older versions: @older";

# Every released version stays installable and updatable: dropping an
# update script (or the 0.1 install script they start from) fails here.
my @released = qw(0.1 0.2 0.3 0.4 0.5);
for my $v (@released)
{
	ok((grep { $_ eq $v } @older) || $v eq $default,
		"released version $v is available");
}

# What a database has of taskq, as text: every object of schema taskq with
# its definition, privileges and comment, and the extension's members and
# configuration tables.  (pg_dump would show none of it: it dumps an
# extension as CREATE EXTENSION.)
sub taskq_schema
{
	my ($db) = @_;
	return $node->safe_psql($db, q{
WITH ns AS (SELECT 'taskq'::regnamespace AS oid)
SELECT string_agg(line, E'\n' ORDER BY line) FROM (
  SELECT 'schema acl ' || coalesce(n.nspacl::text, '-')
         || ' comment ' || coalesce(obj_description(n.oid, 'pg_namespace'), '-') AS line
    FROM pg_namespace AS n, ns WHERE n.oid = ns.oid
  UNION ALL
  SELECT 'function ' || p.oid::regprocedure || E'\n' || pg_get_functiondef(p.oid)
         || 'acl ' || coalesce(p.proacl::text, '-')
         || ' comment ' || coalesce(obj_description(p.oid, 'pg_proc'), '-')
    FROM pg_proc AS p, ns WHERE p.pronamespace = ns.oid
  UNION ALL
  SELECT 'relation ' || c.oid::regclass || ' ' || c.relkind::text
         || ' acl ' || coalesce(c.relacl::text, '-')
         || ' options ' || coalesce(c.reloptions::text, '-')
         || ' comment ' || coalesce(obj_description(c.oid, 'pg_class'), '-')
         || CASE WHEN c.relkind = 'v' THEN E'\n' || pg_get_viewdef(c.oid) ELSE '' END
         || CASE WHEN c.relkind = 'i' THEN E'\n' || pg_get_indexdef(c.oid) ELSE '' END
    FROM pg_class AS c, ns WHERE c.relnamespace = ns.oid
  UNION ALL
  SELECT 'column ' || a.attrelid::regclass || '.' || a.attname || ' '
         || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
         || coalesce(' collate ' || a.attcollation::regcollation, '')
         || ' comment ' || coalesce(col_description(a.attrelid, a.attnum), '-')
    FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid, ns
   WHERE c.relnamespace = ns.oid AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT 'default ' || d.adrelid::regclass || ' ' || d.adnum || ' ' || pg_get_expr(d.adbin, d.adrelid)
    FROM pg_attrdef AS d JOIN pg_class AS c ON c.oid = d.adrelid, ns WHERE c.relnamespace = ns.oid
  UNION ALL
  SELECT 'constraint ' || r.conrelid::regclass || ' ' || r.conname || ' ' || pg_get_constraintdef(r.oid)
    FROM pg_constraint AS r, ns WHERE r.connamespace = ns.oid
  UNION ALL
  SELECT 'trigger ' || pg_get_triggerdef(t.oid) || ' enabled ' || t.tgenabled::text
    FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid, ns WHERE c.relnamespace = ns.oid
  UNION ALL
  SELECT 'type ' || t.oid::regtype || ' ' || coalesce(
           (SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum AS e WHERE e.enumtypid = t.oid), '')
         || ' comment ' || coalesce(obj_description(t.oid, 'pg_type'), '-')
    FROM pg_type AS t, ns WHERE t.typnamespace = ns.oid
  UNION ALL
  SELECT 'member ' || pg_describe_object(d.classid, d.objid, d.objsubid)
    FROM pg_depend AS d
   WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
     AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'taskq')
  UNION ALL
  SELECT 'config ' || u.c::regclass || ' ' || u.cond
    FROM pg_extension AS e, unnest(e.extconfig, e.extcondition) AS u(c, cond)
   WHERE e.extname = 'taskq') AS x});
}

$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION taskq');
is($node->safe_psql('fresh', "SELECT extversion FROM pg_extension WHERE extname = 'taskq'"),
	$default, "a fresh install has version $default");
my $want = taskq_schema('fresh');
like($want, qr/^relation (?:taskq\.)?tasks r .* options \{autovacuum_vacuum_scale_factor=0.02,/m, 'the description of a fresh install has the task table');

is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_extension_update_paths('taskq') WHERE target = '$default' AND path IS NOT NULL AND source <> '$default'"),
	scalar(@older), 'every older version has an update path to the default version');

for my $v (@older)
{
	my $db = "from_" . ($v =~ s/\W/_/gr);
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION taskq VERSION '$v'");
	$node->safe_psql($db,
		"SELECT taskq.insert_tasks('[{\"id\": \"kept\", \"action\": \"a\"}]')");
	# the new library on the old schema (before the update): a completion
	# signals its successor, an abort cascades, as the old version did
	$node->safe_psql($db, q{SELECT taskq.insert_tasks('[{"id": "c1", "action": "c", "to_signal_after": ["c2"]},
		{"id": "c2", "action": "c2"}, {"id": "d1", "action": "d", "to_signal_after": ["d2"]},
		{"id": "d2", "action": "d2"}]')});
	$node->safe_psql($db, q{SELECT taskq.return_task(o.id, o.token, NULL, 'completed')
		FROM taskq.own_tasks('w', 1, '{c}') AS o});
	$node->safe_psql($db, q{SELECT taskq.return_task(o.id, o.token, NULL, 'aborted')
		FROM taskq.own_tasks('w', 1, '{d}') AS o});
	is($node->safe_psql($db, q{SELECT string_agg(id || ':' || status_code || '/' || num_signals, ' ' ORDER BY id)
		FROM taskq.tasks WHERE id IN ('c1', 'c2', 'd1', 'd2')}),
		'c1:completed/0 c2:pending/0 d1:aborted/0 d2:aborted/0',
		"$v, not updated yet: the new library signals and cascades on the old table");
	# the old own_tasks returns six columns (no concurrency_key): the new library fills those
	is($node->safe_psql($db, q{SELECT o.id || '/' || o.num_tries FROM taskq.own_tasks('w', 1, '{c2}') AS o}),
		'c2/1', "$v, not updated yet: own_tasks answers with its own columns");
	$node->safe_psql($db, 'ALTER EXTENSION taskq UPDATE');
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'taskq'"),
		$default, "$v updates to $default");
	is(taskq_schema($db), $want, "$v updated is the same as a fresh $default");
	is($node->safe_psql($db, "SELECT count(*) FROM taskq.tasks WHERE id = 'kept'"),
		'1', "$v: the tasks survive the update");
	# from 0.5 on the table counts outcomes, and the library counted c1's
	my $counted = $v >= 0.5 ? 1 : 0;
	is($node->safe_psql($db, q{SELECT string_agg(id || ':' || "trigger" || '/' || num_completed || '/' || num_failed, ' ' ORDER BY id)
		FROM taskq.tasks WHERE id IN ('c1', 'c2')}),
		"c1:all_success/0/0 c2:all_success/$counted/0", "$v: tasks of before the update are all_success");
	# a claim records its moment (claimed_at, 0.6) once the column is there
	is($node->safe_psql($db, q{BEGIN;
		SELECT count(*) FROM taskq.own_tasks('w', 1, '{a}');
		SELECT claimed_at = now() FROM taskq.tasks WHERE id = 'kept';
		COMMIT;}),
		"1\nt", "$v updated: a claim sets claimed_at");
	# and returns the task's concurrency_key (0.6)
	is($node->safe_psql($db, q{SELECT taskq.insert_tasks('[{"id": "key1", "action": "key", "concurrency_key": "K"}]');
		SELECT concurrency_key FROM taskq.own_tasks('w', 1, '{key}');}),
		"1\nK", "$v updated: own_tasks returns the concurrency_key");
}
pass(@older ? 'updated from ' . join(', ', @older)
	  : "no released version before $default yet: nothing to update from");

$node->stop;
done_testing();
