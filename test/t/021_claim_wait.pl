# own_tasks with a wait, through the paths that need the background worker
# or the server itself: a lease the worker expires, a delayed task whose
# time comes and a retry delay that passes wake a waiting claim (no commit
# does: the worker wakes them); a waiter across a server restart gets a
# clear error at once, no hang; without shared_preload_libraries a wait is a
# clear error and a claim without one still works.
#
# Each waiter is a psql started in the background; the test polls
# pg_stat_activity until it is asleep on its condition variable before it
# makes work ready, and requires the claim within moments of that, well
# before the 10 s recheck of a waiting claim, which would hide a missing
# wakeup.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $node = taskq_node('claim_wait');

# A waiter: psql running own_tasks with a wait for $action, in the background.
sub start_waiter
{
	my ($action, $wait) = @_;
	my %w = (out => '', err => '', t0 => time);
	my $sql = "SET application_name = 'waiter'; SELECT id FROM taskq.own_tasks("
	  . "'w', 1, ARRAY['$action'], interval '1 hour', interval '$wait')";
	$w{h} = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', $sql ],
		'>', \$w{out}, '2>', \$w{err});
	return \%w;
}

sub wait_asleep
{
	return $node->poll_query_until('postgres',
		    "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE application_name = 'waiter'"
		  . " AND state = 'active' AND wait_event_type = 'Extension')");
}

# Wait for the waiter's psql to end (at most $limit s); returns seconds since $from.
sub finish_waiter
{
	my ($w, $from, $limit) = @_;
	my $until = time + $limit;
	while ($w->{h}->pumpable && time < $until)
	{
		$w->{h}->pump_nb;
		usleep(10_000);
	}
	my $took = time - $from;
	if ($w->{h}->pumpable)
	{
		$w->{h}->kill_kill;
		return undef;
	}
	$w->{h}->finish;
	chomp $w->{out};
	return $took;
}

# --- a lease the worker expires ---------------------------------------------
$node->safe_psql('postgres', json_insert_sql({ id => 'l1', action => 'leased' }));
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.own_tasks('old', 1, '{leased}', '1 hour')"),
	'1', 'a task is held');
my $w = start_waiter('leased', '30 s');
ok(wait_asleep(), 'a waiter for its action sleeps');
my $t0 = time;
$node->safe_psql('postgres',
	"UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id = 'l1'");
my $took = finish_waiter($w, $t0, 30);
ok(defined $took && $took < 5, sprintf('the worker expires the lease and wakes it (%.2f s)', $took // -1));
is($w->{out}, 'l1', 'which claims the task');

# The remaining paths through time with a worker that naps 60 s: only the
# producer's note of its delayed task can wake it in time.
$node->safe_psql('postgres', "ALTER SYSTEM SET taskq.worker_naptime = '60s'");
$node->reload;
usleep(1_500_000);    # the worker reloads at its next wake-up (within 1 s)

# --- a delayed task whose time comes ----------------------------------------
$w = start_waiter('later', '30 s');
ok(wait_asleep(), 'a waiter for a delayed action sleeps');
$t0 = time;
$node->safe_psql('postgres',
	"SELECT taskq.insert_tasks(jsonb_build_array(jsonb_build_object('id', 'd1', 'action', 'later',"
	  . " 'not_before', clock_timestamp() + interval '1.5 s')))");
$took = finish_waiter($w, $t0, 30);
ok(defined $took && $took >= 1.4 && $took < 5,
	sprintf('it gets the task when its time comes (%.2f s after the insert)', $took // -1));
is($w->{out}, 'd1', 'the delayed task');

# --- a retry delay that passes ----------------------------------------------
$node->safe_psql('postgres', json_insert_sql({ id => 'r1', action => 'retried' }));
my $tok = $node->safe_psql('postgres', "SELECT token FROM taskq.own_tasks('old', 1, '{retried}', '1 hour')");
$w = start_waiter('retried', '30 s');
ok(wait_asleep(), 'a waiter for a failing action sleeps');
$t0 = time;
$node->safe_psql('postgres',
	"SELECT taskq.return_task('r1', '$tok', 'again', 'pending', interval '1.5 s')");
$took = finish_waiter($w, $t0, 30);
ok(defined $took && $took >= 1.4 && $took < 5,
	sprintf('it gets the task when the retry delay passed (%.2f s after the return)', $took // -1));
is($w->{out}, 'r1', 'the retried task');

# --- a waiter across a restart ----------------------------------------------
$w = start_waiter('never', '1 hour');
ok(wait_asleep(), 'a waiter sleeps before the restart');
$t0 = time;
$node->restart;    # fast: backends are told to terminate
$took = finish_waiter($w, $t0, 30);
ok(defined $took, sprintf('the restart does not hang on the waiter (%.2f s)', $took // -1));
like($w->{err}, qr/terminating connection due to administrator command|server closed the connection/,
	'the waiter gets a clear error');
is($w->{out}, '', 'and no task');

$w = start_waiter('after', '30 s');
ok(wait_asleep(), 'after the restart a waiter sleeps');
$t0 = time;
$node->safe_psql('postgres', json_insert_sql({ id => 'a1', action => 'after' }));
$took = finish_waiter($w, $t0, 30);
ok(defined $took && $took < 5, sprintf('and is woken by an insert (%.2f s)', $took // -1));
is($w->{out}, 'a1', 'with the task');
$node->stop;

# --- without shared_preload_libraries ---------------------------------------
my $plain = PostgreSQL::Test::Cluster->new('claim_wait_plain');
$plain->init;
$plain->start;
$plain->safe_psql('postgres', 'CREATE EXTENSION taskq');
$plain->safe_psql('postgres', json_insert_sql({ id => 'p1', action => 'plain' }));
my ($state) = sqlstate_of($plain, "SELECT * FROM taskq.own_tasks('w', 1, '{plain}', NULL, '1 s')");
is($state, '55000', 'without shared_preload_libraries a wait is an error (55000)');
is($plain->safe_psql('postgres', "SELECT id FROM taskq.own_tasks('w', 1, '{plain}', NULL, '0 s')"),
	'p1', 'a claim without a wait works');
$plain->stop;

done_testing();
