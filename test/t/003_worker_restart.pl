# The taskq worker itself is killed.  SIGKILL (the postmaster then
# reinitialises) while it expires a large batch of leases, and SIGTERM
# (restarted by the postmaster within about 5 s): it comes back, only one
# worker per database, and no expiry is applied twice: a requeued task keeps
# its tries and token and its row is not rewritten again, a task aborted on
# its last try signals its successors once.
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
$node->safe_psql('postgres', 'CREATE TABLE owned AS SELECT id, performance_token, num_tries FROM taskq.tasks WHERE status_code = \'in_progress\'');

# --- SIGKILL while it expires them ------------------------------------
# Make the worker busy with a big batch, and kill it while it works on it.
my $log_offset = -s $node->logfile;
$node->safe_psql('postgres',
	"UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE status_code = 'in_progress'");
my $busy = 0;
my $t0 = time;
while (time - $t0 < 5)
{
	my $a = $node->safe_psql('postgres',
		"SELECT query FROM pg_stat_activity WHERE pid = $w0 AND state = 'active'");
	if ($a =~ /expiring leases/)
	{
		$busy = 1;
		last;
	}
	last if $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.tasks WHERE status_code = 'in_progress'") eq '0';
}
kill 'KILL', $w0;
note $busy ? 'killed the worker while it was expiring leases' : 'killed the worker (not caught mid-expiry)';
ok($node->poll_query_until('postgres', 'SELECT true'), 'the server is back after the SIGKILL of the worker');
ok($node->log_contains(qr/\(PID $w0\) was terminated by signal 9/, $log_offset),
	'the postmaster saw the worker die of SIGKILL and reinitialised');
my $w1 = wait_for_worker($node, 'postgres', 30);
ok(defined $w1 && $w1 != $w0, 'a new worker runs after the reinitialisation');

ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE status_code = 'in_progress'"),
	'the new worker finishes the expiry');
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.tasks t JOIN owned o USING (id)
 WHERE t.id LIKE 'r%' AND t.status_code = 'pending'
   AND t.performance_token = o.performance_token AND t.num_tries = 1 AND t.actor_id = 'owner'}),
	'2800', 'all 2800 requeued once: pending, token kept, num_tries unchanged by expiry');
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.tasks
 WHERE id LIKE 'x%' AND status_code = 'aborted' AND num_tries = 1
   AND status = 'aborted: lease expired on the last of 1 tries'}),
	'200', 'all 200 leases on their last try aborted');
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.tasks
 WHERE id LIKE 's%' AND status_code = 'aborted' AND num_signals = 1 AND total_dependencies = 2}),
	'200', 'their successors aborted by the cascade, signalled exactly once');

# Nothing is applied again: the requeued rows are not rewritten by later
# iterations of the worker.
my $snap = $node->safe_psql('postgres',
	"SELECT md5(string_agg(id || ctid::text || xmin::text, ',' ORDER BY id)) FROM taskq.tasks");
my $naps = $node->safe_psql('postgres', "SELECT setting FROM pg_settings WHERE name = 'taskq.worker_naptime'");
usleep(3 * $naps * 1000);    # three worker iterations
is( $node->safe_psql('postgres',
		"SELECT md5(string_agg(id || ctid::text || xmin::text, ',' ORDER BY id)) FROM taskq.tasks"),
	$snap, 'later worker iterations leave the requeued and aborted rows untouched');
check_invariants($node, 'after SIGKILL of the worker');

# --- SIGTERM: restarted by the postmaster within ~5 s ---------------------
# Re-own the requeued tasks so the restarted worker has leases to expire.
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.own_tasks('owner2', 100, '{work}', '1 hour')"),
	'100', 'a second owner takes 100 tasks');
my $w2 = wait_for_worker($node, 'postgres', 30);
$log_offset = -s $node->logfile;
kill 'TERM', $w2;
$t0 = time;
# While it is down, committed work pokes the launcher: it must not start a
# second worker next to the one the postmaster restarts.
usleep(300_000);
$node->safe_psql('postgres', json_insert_sql({ id => 'poke', action => 'poke' }));
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
ok(defined $w3, sprintf('the worker is restarted after SIGTERM (%.1f s)', $gap));
cmp_ok($gap, '<', 8, 'within the 5 s restart interval (and a margin)');
ok(!$node->log_contains(qr/\(PID $w2\) was terminated by signal/, $log_offset),
	'SIGTERM of the worker does not make the postmaster reinitialise');

$node->safe_psql('postgres',
	"UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE status_code = 'in_progress'");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE status_code = 'in_progress'"),
	'the restarted worker expires leases');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.tasks WHERE actor_id = 'owner2' AND num_tries = 2 AND status_code = 'pending'"),
	'100', 'each of those requeued once, num_tries unchanged by expiry');
# The postmaster restarts a failed worker after 5 s: look after that moment
# too, so that a second registration would be seen.
my $wait = $t0 + 7 - time;
usleep(int($wait * 1_000_000)) if $wait > 0;
is(join(',', worker_pids($node, 'postgres')), $w3,
	'still exactly one worker for the database, the restarted one');
is(scalar(launcher_pids($node)), 1, 'and one launcher');
check_invariants($node, 'after SIGTERM of the worker');

$node->stop;
done_testing();
