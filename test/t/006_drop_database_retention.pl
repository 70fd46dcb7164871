# Databases and the worker: a database that creates taskq later gets a
# worker once it has work; DROP DATABASE of a database with a running
# worker succeeds (the utility hook stops the worker first) and the
# launcher does not start a worker for it again; a DROP DATABASE that
# fails gives the database its worker back.  Retention: finished tasks
# older than taskq.retention are deleted by the worker, except one that an
# unfinished predecessor still names (which does not make the worker spin);
# unfinished tasks never are.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $node = taskq_node('dropdb', conf => "taskq.retention = '1h'\n");
is($node->safe_psql('postgres', "SELECT current_setting('taskq.retention')"), '1h',
	'taskq.retention is 1h');
$node->safe_psql('postgres', json_insert_sql({ id => 'n1', action => 'n' }));
ok(defined wait_for_worker($node, 'postgres', 30), 'database postgres has a worker');

# --- a database that creates the extension later ---------------------------
$node->safe_psql('postgres', 'CREATE DATABASE d1');
$node->safe_psql('d1', 'CREATE EXTENSION taskq');
my $t0 = time;
$node->safe_psql('d1', json_insert_sql({ id => 'x', action => 'd1work' }));
my $w1 = wait_for_worker($node, 'd1', 30);
my $took = time - $t0;
ok(defined $w1, sprintf('d1 gets a worker once it inserts a task (%.1f s)', $took));
cmp_ok($took, '<', 5, 'within moments, not at the launcher\'s next scan');
my $d1_oid = $node->safe_psql('postgres', "SELECT oid FROM pg_database WHERE datname = 'd1'");

# The worker works there: a back-dated lease is requeued.
$node->safe_psql('d1', "SELECT count(*) FROM taskq.own_tasks('w', 1, NULL, '1 hour')");
$node->safe_psql('d1', "UPDATE taskq.tasks SET action_deadline = now() - interval '1 s'");
ok($node->poll_query_until('d1', "SELECT status_code = 'pending' FROM taskq.tasks WHERE id = 'x'"),
	'the worker of d1 expires its leases');

# --- DROP DATABASE with the worker running ------------------------------------
my $log_offset = -s $node->logfile;
$t0 = time;
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE d1');
my $drop_s = time - $t0;
is($ret, 0, sprintf('DROP DATABASE of a database with a running worker succeeds (%.1f s)', $drop_s));
is($err, '', 'without error') or diag $err;
cmp_ok($drop_s, '<', 5, 'without waiting for the 5 s other-sessions timeout');
ok(!kill(0, $w1), 'its worker is gone');

# Make the launcher scan: a new database with taskq asks for a worker.
$node->safe_psql('postgres', 'CREATE DATABASE d2');
$node->safe_psql('d2', 'CREATE EXTENSION taskq');
$node->safe_psql('d2', json_insert_sql({ id => 'y', action => 'd2work' }));
ok(defined wait_for_worker($node, 'd2', 30), 'd2 gets a worker (the launcher scanned)');
# A worker left registered for d1 would fail to connect and be restarted
# every 5 s: look past that.
usleep(6_000_000);
is( $node->safe_psql('postgres',
		"SELECT string_agg(coalesce(datname, '?'), ',' ORDER BY datname) FROM pg_stat_activity WHERE backend_type = 'taskq worker'"),
	'd2,postgres', 'workers run for d2 and postgres only');
ok(!$node->log_contains(qr/database $d1_oid does not exist|database "d1" does not exist/, $log_offset),
	'no worker tried to connect to the dropped database');

# --- a DROP DATABASE that fails gives the worker back -------------------------
my $w2 = wait_for_worker($node, 'd2', 30);
my $blocker = $node->background_psql('d2');
$ret = $node->psql('postgres', 'DROP DATABASE d2', on_error_stop => 1);
isnt($ret, 0, 'DROP DATABASE of a database with a user session fails');
$blocker->quit;
my $w3 = wait_for_worker($node, 'd2', 30);
ok(defined $w3, 'the database has a worker again after the failed DROP');
$node->safe_psql('d2', "SELECT count(*) FROM taskq.own_tasks('w', 1, NULL, '1 hour')");
$node->safe_psql('d2', "UPDATE taskq.tasks SET action_deadline = now() - interval '1 s'");
ok($node->poll_query_until('d2', "SELECT status_code = 'pending' FROM taskq.tasks WHERE id = 'y'"),
	'and it works');
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE d2');
is($ret, 0, 'then DROP DATABASE d2 succeeds') or diag $err;

# CREATE DATABASE ... TEMPLATE and ALTER DATABASE ... RENAME need the
# database to themselves too: the worker steps aside, then comes back.
$node->safe_psql('postgres', 'CREATE DATABASE d4');
$node->safe_psql('d4', 'CREATE EXTENSION taskq');
$node->safe_psql('d4', json_insert_sql({ id => 't', action => 'd4work' }));
ok(defined wait_for_worker($node, 'd4', 30), 'd4 has a worker');
($ret, $out, $err) = $node->psql('postgres', 'CREATE DATABASE d5 TEMPLATE d4');
is($ret, 0, 'CREATE DATABASE ... TEMPLATE of a database with a running worker succeeds') or diag $err;
# (New work asks the launcher for the worker at once; without it, the
# launcher's next scan brings it back, as after the failed DROP above.)
$node->safe_psql('d4', json_insert_sql({ id => 't-poke', action => 'd4work' }));
ok(defined wait_for_worker($node, 'd4', 30), 'the template database gets its worker back');
($ret, $out, $err) = $node->psql('postgres', 'ALTER DATABASE d4 RENAME TO d4b');
is($ret, 0, 'ALTER DATABASE ... RENAME of a database with a running worker succeeds') or diag $err;
$node->safe_psql('d4b', json_insert_sql({ id => 't-poke2', action => 'd4work' }));
ok(defined wait_for_worker($node, 'd4b', 30), 'the renamed database gets its worker back');
is($node->safe_psql('d5', "SELECT string_agg(id, ',') FROM taskq.tasks"), 't',
	'the copy has the tasks of its template');
$node->safe_psql('d5', json_insert_sql({ id => 't2', action => 'd5work' }));
ok(defined wait_for_worker($node, 'd5', 30), 'and gets a worker once it has new work');
$node->safe_psql('postgres', 'DROP DATABASE d5');
$node->safe_psql('postgres', 'DROP DATABASE d4b');

# A launcher that restarted has no handle of the running workers: it does
# not start second ones, and DROP DATABASE still gets the worker out.
$node->safe_psql('postgres', 'CREATE DATABASE d6');
$node->safe_psql('d6', 'CREATE EXTENSION taskq');
$node->safe_psql('d6', json_insert_sql({ id => 'v', action => 'd6work' }));
my $w6 = wait_for_worker($node, 'd6', 30);
ok(defined $w6, 'd6 has a worker');
my ($l0) = launcher_pids($node);
kill 'TERM', $l0;
my $l1;
$t0 = time;
while (time - $t0 < 20)
{
	($l1) = launcher_pids($node);
	last if defined $l1 && $l1 != $l0;
	usleep(100_000);
}
ok(defined $l1 && $l1 != $l0, sprintf('the launcher is restarted after SIGTERM (%.1f s)', time - $t0));
$node->safe_psql('d6', json_insert_sql({ id => 'v2', action => 'd6work' }));    # wakes the launcher
usleep(500_000);
is(join(',', worker_pids($node, 'd6')), $w6, 'the new launcher leaves the running worker alone');
$log_offset = -s $node->logfile;
$t0 = time;
($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE d6');
$drop_s = time - $t0;
is($ret, 0, sprintf('DROP DATABASE succeeds though the launcher has no handle of its worker (%.1f s)', $drop_s))
  or diag $err;
my $d6_oid_re = qr/database \d+ does not exist|database "d6" does not exist/;
usleep(7_000_000);    # past the postmaster's 5 s restart of the stopped worker
ok(!$node->log_contains($d6_oid_re, $log_offset), 'no worker tried to connect to the dropped database');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'taskq worker' AND datname IS NULL"),
	'0', 'no worker without a database');

# DROP EXTENSION: the worker steps aside and the launcher leaves it be.
$node->safe_psql('postgres', 'CREATE DATABASE d3');
$node->safe_psql('d3', 'CREATE EXTENSION taskq');
$node->safe_psql('d3', json_insert_sql({ id => 'z', action => 'd3work' }));
my $w4 = wait_for_worker($node, 'd3', 30);
ok(defined $w4, 'd3 has a worker');
($ret, $out, $err) = $node->psql('d3', 'DROP EXTENSION taskq');
is($ret, 0, 'DROP EXTENSION taskq succeeds with the worker running') or diag $err;
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'taskq worker' AND datname = 'd3'"),
	'the worker of a database without taskq leaves');

# --- retention -------------------------------------------------------------------
# done-old: completed long ago -> deleted
# done-new: completed just now -> kept
# ab-old: aborted long ago (no successor waits) -> deleted
# kept-by-pred: aborted by the cascade of cut (its other predecessor, live,
#   is unfinished), finished long ago -> kept while live is unfinished
# pend / prog: unfinished, finished_at forced into the past -> never deleted
$node->safe_psql('postgres', json_insert_sql(
		{ id => 'done-old', action => 'r' },
		{ id => 'done-new', action => 'r' },
		{ id => 'ab-old', action => 'r' },
		{ id => 'cut', action => 'cut', to_signal_after => ['kept-by-pred'] },
		{ id => 'live', action => 'live', to_signal_after => ['kept-by-pred'] },
		{ id => 'kept-by-pred', action => 'kb' },
		{ id => 'pend', action => 'idle' },
		{ id => 'prog', action => 'prog' }));
$node->safe_psql('postgres', q{
SELECT taskq.return_task(id, token, 'x',
         CASE WHEN id = 'ab-old' THEN 'aborted' ELSE 'completed' END::taskq.status)
  FROM taskq.own_tasks('w', 3, '{r}');
SELECT taskq.return_task(id, token, 'x', 'aborted') FROM taskq.own_tasks('w', 1, '{cut}');
SELECT count(*) FROM taskq.own_tasks('w', 1, '{prog}', '1 hour');
});
is( $node->safe_psql('postgres',
		"SELECT status_code || ' ' || num_signals FROM taskq.tasks WHERE id = 'kept-by-pred'"),
	'aborted 1', 'kept-by-pred is finished (aborted by the cascade) and still named by live');
$node->safe_psql('postgres', q{
UPDATE taskq.tasks SET finished_at = now() - interval '2 hours'
 WHERE id IN ('done-old', 'ab-old', 'cut', 'kept-by-pred', 'pend', 'prog');
UPDATE taskq.tasks SET created_at = now() - interval '2 days', not_before = now() - interval '2 days'
 WHERE id IN ('pend', 'prog', 'live');
});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE id IN ('done-old', 'ab-old', 'cut')"),
	'the worker deletes finished tasks past retention');
is( $node->safe_psql('postgres',
		"SELECT string_agg(id, ',' ORDER BY id) FROM taskq.tasks WHERE id IN ('done-new','kept-by-pred','live','pend','prog','n1')"),
	'done-new,kept-by-pred,live,n1,pend,prog',
	'it keeps recent finished tasks, a finished task an unfinished predecessor names, and unfinished tasks');
# kept-by-pred is past retention but may not go yet: the worker looks again
# within about a second, not at once (it used to, every millisecond, two
# transactions each time).  Its commits are counted in pg_stat_database,
# which it flushes at most once a second.
my $commits = sub {
	$node->safe_psql('postgres',
		"SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'");
};
my $c0 = $commits->();
usleep(3_000_000);
my $spent = $commits->() - $c0;
cmp_ok($spent, '<', 100,
	'a finished task past retention that must stay does not make the worker spin');
# Finish live: kept-by-pred is no longer named by an unfinished task.
$node->safe_psql('postgres',
	"SELECT taskq.return_task(id, token, 'x', 'completed') FROM taskq.own_tasks('w', 1, '{live}')");
$node->safe_psql('postgres',
	"UPDATE taskq.tasks SET finished_at = now() - interval '2 hours' WHERE id = 'live'");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE id IN ('kept-by-pred', 'live')"),
	'once its last predecessor finished, it is deleted too');
is( $node->safe_psql('postgres',
		"SELECT string_agg(id || ':' || status_code, ',' ORDER BY id) FROM taskq.tasks"),
	'done-new:completed,n1:pending,pend:pending,prog:in_progress',
	'the unfinished tasks and the recent one remain');
$node->safe_psql('postgres', "UPDATE taskq.tasks SET finished_at = NULL WHERE id IN ('pend', 'prog')");
check_invariants($node, 'after retention');

$node->stop;
done_testing();
