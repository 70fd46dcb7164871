# The background worker expires the leases of a backend killed with
# SIGKILL, with no client action: requeued (pending, token kept), the late
# owner's token refused once another worker re-owned (TQ001); a lease on its
# last try ends aborted with the cascade; a late owner not yet replaced may
# still return.  Lease ends are back-dated, never waited out.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $node = taskq_node('expiry');

# The launcher runs; inserting work gets the database a worker.
ok(scalar(launcher_pids($node)) == 1, 'one taskq launcher runs');
$node->safe_psql('postgres',
	json_insert_sql(map { { id => "t$_", action => 'work' } } 1 .. 4));
my $wpid = wait_for_worker($node, 'postgres', 30);
ok(defined $wpid, 'database postgres has a taskq worker once it has work');

# A successor of t5 (on its last try) to see the cascade.
$node->safe_psql('postgres', json_insert_sql(
		{ id => 'last', action => 'once', max_tries => 1, to_signal_after => ['after-last'] },
		{ id => 'after-last', action => 'later' },
		{ id => 'other-pred', action => 'never', to_signal_after => ['after-last'] }));

# A backend owns t1..t3 with a long lease and is then SIGKILLed.  The
# claims are made in transaction blocks: a claim alone in its transaction
# may commit asynchronously (taskq.async_claims) and then not survive the
# crash, which is allowed but not what this test is about.
my $victim = $node->background_psql('postgres');
my $owned = $victim->query_safe(
	"BEGIN; SELECT string_agg(id || '=' || token, ' ' ORDER BY id) FROM taskq.own_tasks('victim', 3, '{work}', '1 hour'); COMMIT");
my %tok = map { split /=/ } split / /, $owned;
is(join(',', sort keys %tok), 't1,t2,t3', 'the victim owns t1, t2 and t3');
my $late = $victim->query_safe(
	"BEGIN; SELECT id || '=' || token FROM taskq.own_tasks('late', 1, '{work}', '1 hour'); COMMIT");
my ($late_id, $late_tok) = split /=/, $late;
is($late_id, 't4', 'the late owner owns t4');
my $last = $victim->query_safe(
	"BEGIN; SELECT id || '=' || num_tries FROM taskq.own_tasks('victim', 1, '{once}', '1 hour'); COMMIT");
is($last, 'last=1', 'the victim owns "last" on its only try');
my $victim_pid = $victim->query_safe('SELECT pg_backend_pid()');

my $log_offset = -s $node->logfile;
kill 'KILL', $victim_pid;
eval { $victim->quit; };
# SIGKILL of a backend makes the postmaster reinitialise.
ok($node->poll_query_until('postgres', 'SELECT true'), 'the server accepts connections after the crash');
ok($node->log_contains(qr/terminated by signal 9/, $log_offset),
	'the postmaster saw the backend die of SIGKILL');

is( $node->safe_psql('postgres',
		"SELECT string_agg(id || ':' || status_code || ':' || num_tries, ',' ORDER BY id) FROM taskq.tasks WHERE id IN ('t1','t2','t3','t4','last')"),
	'last:in_progress:1,t1:in_progress:1,t2:in_progress:1,t3:in_progress:1,t4:in_progress:1',
	'the leases survive the crash while their deadline is ahead');

# The worker comes back after the reinitialisation.
ok(defined wait_for_worker($node, 'postgres', 30), 'the worker is back after the crash');

# End the leases now, without waiting them out.  Nobody calls own_tasks.
$node->safe_psql('postgres',
	"UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE status_code = 'in_progress'");
my $t0 = time;
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 4 FROM taskq.tasks WHERE id IN ('t1','t2','t3','t4') AND status_code = 'pending'"),
	'the worker requeues the expired leases without any client action');
my $took = time - $t0;
cmp_ok($took, '<', 10, sprintf('requeued within %.1f s', $took));

is( $node->safe_psql('postgres',
		"SELECT string_agg(id || ':' || num_tries || ':' || (performance_token::text = CASE id "
		  . join(' ', map { "WHEN '$_' THEN '$tok{$_}'" } sort keys %tok)
		  . " WHEN '$late_id' THEN '$late_tok' END) || ':' || actor_id, ',' ORDER BY id)"
		  . " FROM taskq.tasks WHERE id IN ('t1','t2','t3','t4')"),
	't1:1:true:victim,t2:1:true:victim,t3:1:true:victim,t4:1:true:late',
	'requeued tasks keep token, actor and tries (expiry does not count a try)');

ok( $node->poll_query_until('postgres',
		"SELECT status_code = 'aborted' FROM taskq.tasks WHERE id = 'last'"),
	'a lease expired on its last try is aborted by the worker');
is( $node->safe_psql('postgres',
		"SELECT status || '|' || num_tries FROM taskq.tasks WHERE id = 'last'"),
	'aborted: lease expired on the last of 1 tries|1',
	'its status says why');
is( $node->safe_psql('postgres',
		"SELECT status_code || '|' || status || '|' || num_signals FROM taskq.tasks WHERE id = 'after-last'"),
	'aborted|aborted: predecessor "last" aborted|1',
	'its successor is aborted by the cascade, still counting its unfinished predecessor');

# The late owner of t4, not replaced yet, may still return it.
my ($st) = sqlstate_of($node,
	"SELECT taskq.return_task('t4', '$late_tok', 'late but fine', 'completed')");
is($st, '', 'a late owner nobody replaced may still return its task');

# Another worker re-owns t1..t3: the old tokens are refused.
my $re = $node->safe_psql('postgres',
	"SELECT string_agg(id || ':' || num_tries, ',' ORDER BY id) FROM taskq.own_tasks('rescuer', 10, '{work}', '1 hour')");
is($re, 't1:2,t2:2,t3:2', 'another worker re-owns the requeued tasks (second try)');
for my $id (sort keys %tok)
{
	my ($s) = sqlstate_of($node,
		"SELECT taskq.return_task('$id', '$tok{$id}', 'too late', 'completed')");
	is($s, 'TQ001', "the killed backend's token of $id is refused with TQ001");
}
my ($sx, $ox) = sqlstate_of($node,
	"SELECT owned FROM taskq.extend_ownership('victim', ARRAY['t1'], ARRAY['$tok{t1}']::uuid[], '1 hour')");
is($sx . $ox, 'f', 'nor can the old token extend the lease');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.tasks WHERE actor_id = 'rescuer' AND status_code = 'in_progress'"),
	'3', 'the rescuer still holds all three');

check_invariants($node, 'after expiry');

# Control: without the background worker nobody requeues an expired lease
# until a client calls own_tasks, which sweeps it.
$node->append_conf('postgresql.conf', "taskq.background_worker = off\n");
$node->restart;
is(scalar(launcher_pids($node)) + scalar(worker_pids($node)), 0,
	'with taskq.background_worker = off there is no launcher and no worker');
$node->safe_psql('postgres',
	"UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 't1'");
usleep(2_500_000);
is($node->safe_psql('postgres', "SELECT status_code FROM taskq.tasks WHERE id = 't1'"),
	'in_progress', 'then an expired lease stays in progress while no client acts');
is( $node->safe_psql('postgres',
		"SELECT string_agg(id || ':' || num_tries, ',') FROM taskq.own_tasks('poller', 1, '{work}', '1 hour')"),
	't1:3', 'and own_tasks sweeps and re-owns it itself');

$node->stop;
done_testing();

