# Notifications: channel taskq, payload = the action, sent by the worker
# for new ready work (insert, last signal in, lease expired, delay passed),
# coalesced (a burst of 10,000 tasks gives a handful), and producers never
# wait for a listener stalled in an open transaction.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $node = taskq_node('notify');
my $interval = $node->safe_psql('postgres', "SELECT setting FROM pg_settings WHERE name = 'taskq.notify_interval'");
note "taskq.notify_interval = $interval ms";

my $l = listen_session($node);

# Set taskq.notify_interval and wait until the worker has it.
sub set_interval
{
	my ($value) = @_;
	$node->append_conf('postgresql.conf', "taskq.notify_interval = '$value'\n");
	$node->reload;
	$node->poll_query_until('postgres', "SELECT current_setting('taskq.notify_interval') = '$value'");
	usleep(300_000);    # the worker reloads at its next wake-up
}

# --- new ready work -----------------------------------------------------------
$node->safe_psql('postgres', json_insert_sql({ id => 'n1', action => 'alpha' }));
my ($found, $took, @seen) = wait_for_notification($l, 'alpha', 30);
ok($found, sprintf('a listener is told about a new ready task (%.2f s)', $took));
is(count_payload('alpha', @seen), 1, 'once, with the action as payload');
is(join(',', grep { $_ ne 'alpha' } @seen), '', 'and nothing else');

# Blocked work is not announced; when its last signal arrives it is.
$node->safe_psql('postgres', json_insert_sql(
		{ id => 'pred', action => 'pred', to_signal_after => ['succ'] },
		{ id => 'succ', action => 'succ' }));
($found, $took, @seen) = wait_for_notification($l, 'pred', 30);
ok($found, 'the ready predecessor is announced');
usleep(300_000);
@seen = (@seen, drain_notifications($l));
is(count_payload('succ', @seen), 0, 'its blocked successor is not');
$node->safe_psql('postgres',
	"SELECT taskq.return_task(id, token, 'ok', 'completed') FROM taskq.own_tasks('w', 1, '{pred}')");
($found, $took) = wait_for_notification($l, 'succ', 30);
ok($found, sprintf('the successor is announced when its last signal arrives (%.2f s)', $took));

# A lease the worker expires is announced (no client action besides the back-dating).
$node->safe_psql('postgres', json_insert_sql({ id => 'lease', action => 'leased' }));
wait_for_notification($l, 'leased', 30);
$node->safe_psql('postgres', "SELECT count(*) FROM taskq.own_tasks('w', 1, '{leased}', '1 hour')");
usleep(200_000);
drain_notifications($l);
$node->safe_psql('postgres',
	"UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'lease'");
($found, $took) = wait_for_notification($l, 'leased', 30);
ok($found, sprintf('a lease expired by the worker is announced (%.2f s)', $took));
is($node->safe_psql('postgres', "SELECT status_code FROM taskq.tasks WHERE id = 'lease'"),
	'pending', 'by the worker, which requeued it');

# A delayed task is announced when its time comes, by the worker alone.
my $t0 = time;
$node->safe_psql('postgres',
	"SELECT taskq.insert_tasks(jsonb_build_array(jsonb_build_object('id', 'later', 'action', 'later',"
	  . " 'not_before', clock_timestamp() + interval '1.5 s')))");
usleep(500_000);
my @early = drain_notifications($l);
is(count_payload('later', @early), 0, 'a delayed task is not announced before its time');
($found, $took) = wait_for_notification($l, 'later', 30);
my $after = time - $t0;
ok($found, sprintf('it is announced when its time comes (%.2f s after the insert)', $after));
cmp_ok($after, '>=', 1.4, 'not before not_before');
cmp_ok($after, '<', 4, 'and within moments of it');

# --- bursts are coalesced ----------------------------------------------------------
drain_notifications($l);
my $batches = join(";\n", map {
		my $b = $_;
		"SELECT taskq.insert_tasks((SELECT jsonb_agg(jsonb_build_object('id', 'b$b-' || i, 'action', 'burst')) FROM generate_series(1, 1000) i))"
	} 1 .. 10);
$t0 = time;
$node->safe_psql('postgres', $batches);
my $burst_s = time - $t0;
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.tasks WHERE action = 'burst'"),
	'10000', sprintf('10 batches of 1,000 inserted in %.2f s, one transaction each', $burst_s));
usleep(500_000 + 2000 * $interval);
my @burst = drain_notifications($l);
my $nb = count_payload('burst', @burst);
cmp_ok($nb, '>=', 1, "the burst is announced ($nb notifications for 10,000 tasks)");
cmp_ok($nb, '<=', 12, 'at most about one per batch (coalesced, not one per task)');

# Singles are coalesced per interval: measured at 5 ms (the default, 1 ms,
# trades some coalescing for latency; at 5 ms the bound below is far under
# one per insert on any machine whose commits take less than 20 ms).
set_interval('5ms');
my $singles = join('', map { "SELECT taskq.insert_tasks('[{\"id\":\"s$_\",\"action\":\"single\"}]');\n" } 1 .. 1000);
$t0 = time;
$node->safe_psql('postgres', $singles);
my $single_s = time - $t0;
usleep(500_000 + 2000 * $interval);
my $ns = count_payload('single', drain_notifications($l));
note sprintf('1,000 single-row inserts took %.2f s and gave %d notifications', $single_s, $ns);
cmp_ok($ns, '>=', 1, "1,000 single-row inserts are announced ($ns notifications)");
# At most one per notify_interval (plus the leading one and a margin for
# the worker's own cycle), and clearly fewer than one per insert.
cmp_ok($ns, '<=', 3 + int(1000 * $single_s / 5),
	'no more than one per taskq.notify_interval');
cmp_ok($ns, '<', 1000 / 4, 'far fewer than one per insert');

# With a longer interval, a burst of singles gives a handful.
set_interval('500ms');
$node->safe_psql('postgres', json_insert_sql({ id => 'wake', action => 'wake' }));
wait_for_notification($l, 'wake', 30);
$singles = join('', map { "SELECT taskq.insert_tasks('[{\"id\":\"h$_\",\"action\":\"handful\"}]');\n" } 1 .. 1000);
$t0 = time;
$node->safe_psql('postgres', $singles);
$single_s = time - $t0;
usleep(1_200_000);
my $nh = count_payload('handful', drain_notifications($l));
cmp_ok($nh, '>=', 1, "with taskq.notify_interval = 500ms, 1,000 single inserts give $nh notifications");
cmp_ok($nh, '<=', 3 + int($single_s / 0.5), sprintf('a handful (%.2f s of inserts)', $single_s));

# --- a listener stalled in an open transaction -------------------------------------
set_interval('5ms');    # coalescing as measured above
my $stalled = listen_session($node);
$stalled->query_safe('BEGIN');
$stalled->query_safe('SELECT 1');
my $stalled_pid = $stalled->query_safe('SELECT pg_backend_pid()');
is( $node->safe_psql('postgres', "SELECT state FROM pg_stat_activity WHERE pid = $stalled_pid"),
	'idle in transaction', 'a listener sits in an open transaction');

$singles = join('', map { "SELECT taskq.insert_tasks('[{\"id\":\"q$_\",\"action\":\"stall\"}]');\n" } 1 .. 5000);
$t0 = time;
my ($ret, $out, $err) = $node->psql('postgres', $singles, timeout => 120);
my $stall_s = time - $t0;
is($ret, 0, sprintf('5,000 single inserts commit while the listener is stalled (%.1f s)', $stall_s));
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.tasks WHERE action = 'stall'"),
	'5000', 'all 5,000 are there');
my $usage = $node->safe_psql('postgres', 'SELECT pg_notification_queue_usage()');
cmp_ok($usage, '<', 0.01, "the notification queue stays below 1% ($usage)");
# Still inside its transaction: ends it and reads what was queued for it.
my @q = drain_notifications($stalled, 'COMMIT');
usleep(200_000);
push @q, drain_notifications($stalled);
my $nq = count_payload('stall', @q);
cmp_ok($nq, '<=', 3 + int(1000 * $stall_s / 5), "the stalled listener then gets $nq notifications, at most one per interval");
cmp_ok($nq, '<', 5000 / 4, 'far fewer than one per insert');
$stalled->quit;

# The other listener was told too, and the queue is empty again.
my $ny = count_payload('stall', drain_notifications($l));
cmp_ok($ny, '>=', 1, 'the other listener was told as well');
$l->quit;

$node->stop;
done_testing();
