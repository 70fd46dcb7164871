# The taskq worker itself is killed in the middle of an expiry: SIGKILL
# (the postmaster then reinitialises) and SIGTERM (the worker is started
# again within about 5 s).  It comes back, there is one worker per
# database, and no expiry is applied twice: requeued tasks keep their tries
# and token and are requeued once, a lease on its last try is aborted once
# and signals its successors once.
#
# To kill the worker inside its expiry transaction, not just near it, a
# session holds row locks on the successors of leases on their last try:
# the worker requeues a first batch, then waits for those locks in the
# abort cascade, still inside the transaction.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $node = taskq_node('restart');

# 3000 tasks owned with a long lease, 200 of them on their last try, each
# of those with a successor that has one more, unfinished, predecessor.
my @t;
push @t, { id => "r$_", action => 'work' } for 1 .. 2800;
push @t, { id => "x$_", action => 'work', max_tries => 1, to_signal_after => ["s$_"] } for 1 .. 200;
push @t, { id => "s$_", action => 'succ' } for 1 .. 200;
push @t, { id => "p$_", action => 'never', to_signal_after => ["s$_"] } for 1 .. 200;
$node->safe_psql('postgres', json_insert_sql(@t));
my $w0 = wait_for_worker($node, 'postgres', 30);
ok(defined $w0, 'the database has a worker');

is( $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.own_tasks('owner', 3000, '{work}', '1 hour')"),
	'3000', 'an owner holds 3000 leases');
$node->safe_psql('postgres',
	"CREATE TABLE owned AS SELECT id, performance_token FROM taskq.tasks WHERE status_code = 'in_progress'");

# Block the worker inside its expiry transaction; returns the session
# holding the locks, or undef if the worker was not seen blocked.
sub block_worker_in_expiry
{
	my ($pattern, $worker) = @_;
	my $holder = $node->background_psql('postgres');
	$holder->query_safe('BEGIN');
	$holder->query_safe("SELECT count(*) FROM (SELECT 1 FROM taskq.tasks WHERE id LIKE '$pattern' FOR UPDATE) AS l");
	$node->safe_psql('postgres',
		"UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE status_code = 'in_progress'");
	my $blocked = $node->poll_query_until('postgres',
		"SELECT wait_event_type = 'Lock' AND query = 'taskq: expiring leases' FROM pg_stat_activity WHERE pid = $worker");
	return ($holder, $blocked);
}

# --- SIGKILL inside the expiry transaction ---------------------------------
my ($holder, $blocked) = block_worker_in_expiry('s%', $w0);
ok($blocked, 'the worker is inside its expiry transaction, waiting in an abort cascade');
is( $node->safe_psql('postgres', "SELECT count(*) FROM taskq.tasks WHERE status_code = 'in_progress'"),
	'3000', 'nothing of that expiry is visible yet');
my $log_offset = -s $node->logfile;
kill 'KILL', $w0;
ok($node->poll_query_until('postgres', 'SELECT true'), 'the server is back after the SIGKILL of the worker');
ok($node->log_contains(qr/\(PID $w0\) was terminated by signal 9/, $log_offset),
	'the postmaster saw the worker die of SIGKILL and reinitialised');
eval { $holder->quit; };    # its backend was ended by the reinitialisation
my $w1 = wait_for_worker($node, 'postgres', 30);
ok(defined $w1 && $w1 != $w0, 'a new worker runs after the reinitialisation');

ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE status_code = 'in_progress'"),
	'the new worker does the expiry');
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.tasks t JOIN owned o USING (id)
 WHERE t.id LIKE 'r%' AND t.status_code = 'pending'
   AND t.performance_token = o.performance_token AND t.num_tries = 1 AND t.actor_id = 'owner'}),
	'2800', 'all 2800 requeued: pending, token kept, num_tries unchanged by expiry');
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.tasks
 WHERE id LIKE 'x%' AND status_code = 'aborted' AND num_tries = 1
   AND status = 'aborted: lease expired on the last of 1 tries'}),
	'200', 'all 200 leases on their last try aborted');
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.tasks
 WHERE id LIKE 's%' AND status_code = 'aborted' AND num_signals = 1 AND total_dependencies = 2}),
	'200', 'their successors aborted by the cascade, signalled exactly once');

# Nothing is applied again: later iterations of the worker leave the rows
# as they are (same row versions).
my $versions = "SELECT md5(string_agg(id || ctid::text || xmin::text, ',' ORDER BY id)) FROM taskq.tasks";
my $snap = $node->safe_psql('postgres', $versions);
usleep(3_000_000);    # three worker iterations at taskq.worker_naptime = 1s
is($node->safe_psql('postgres', $versions), $snap,
	'later worker iterations leave the requeued and aborted rows untouched');
check_invariants($node, 'after SIGKILL of the worker');

# --- SIGTERM inside the expiry transaction: back within ~5 s ------------------
$node->safe_psql('postgres', json_insert_sql(
		(map { { id => "y$_", action => 'last', max_tries => 1, to_signal_after => ["u$_"] } } 1 .. 20),
		(map { { id => "u$_", action => 'succ2' } } 1 .. 20),
		(map { { id => "q$_", action => 'never', to_signal_after => ["u$_"] } } 1 .. 20)));
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.own_tasks('owner2', 100, '{work}', '1 hour')"
		  . " UNION ALL SELECT count(*) FROM taskq.own_tasks('owner2', 20, '{last}', '1 hour')"),
	"100\n20", 'a second owner takes 100 requeued tasks and 20 on their last try');
$node->safe_psql('postgres',
	"CREATE TABLE owned2 AS SELECT id, performance_token FROM taskq.tasks WHERE status_code = 'in_progress'");
my $w2 = wait_for_worker($node, 'postgres', 30);
($holder, $blocked) = block_worker_in_expiry('u%', $w2);
ok($blocked, 'the worker is inside its expiry transaction again');
$log_offset = -s $node->logfile;
kill 'TERM', $w2;
my $t0 = time;
my $w3;
while (time - $t0 < 20)
{
	my @p = worker_pids($node, 'postgres');
	if (@p && $p[0] != $w2)
	{
		$w3 = $p[0];
		last;
	}
	usleep(50_000);
}
my $gap = time - $t0;
ok(defined $w3, sprintf('the worker is started again after SIGTERM (%.1f s)', $gap));
cmp_ok($gap, '<', 8, 'within the 5 s restart interval (and a margin)');
ok(!$node->log_contains(qr/\(PID $w2\) was terminated by signal/, $log_offset),
	'SIGTERM of the worker does not make the postmaster reinitialise');
is( $node->safe_psql('postgres', "SELECT count(*) FROM taskq.tasks WHERE status_code = 'in_progress'"),
	'120', 'the killed transaction left nothing behind');

# Let the new worker through.
$holder->query_safe('COMMIT');
$holder->quit;
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE status_code = 'in_progress'"),
	'the restarted worker does the expiry');
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.tasks t JOIN owned2 o USING (id)
 WHERE t.id LIKE 'r%' AND t.status_code = 'pending' AND t.num_tries = 2
   AND t.actor_id = 'owner2' AND t.performance_token = o.performance_token}),
	'100', 'each requeued once, token kept, num_tries unchanged by expiry');
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.tasks WHERE id LIKE 'y%' AND status_code = 'aborted' AND num_tries = 1}),
	'20', 'the leases on their last try aborted');
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.tasks
 WHERE id LIKE 'u%' AND status_code = 'aborted' AND num_signals = 1 AND total_dependencies = 2}),
	'20', 'their successors aborted, signalled exactly once');

# The postmaster's own restart of the killed worker comes 5 s after its
# exit: look after that moment too, so that a second worker would be seen.
my $wait = $t0 + 7 - time;
usleep(int($wait * 1_000_000)) if $wait > 0;
is(join(',', worker_pids($node, 'postgres')), $w3,
	'still exactly one worker for the database, the restarted one');
is(scalar(launcher_pids($node)), 1, 'and one launcher');
check_invariants($node, 'after SIGTERM of the worker');

$node->stop;
done_testing();
