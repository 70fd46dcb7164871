# The workers registry with its processes: the background worker deletes
# the rows of workers not seen for taskq.worker_retention (a back-dated
# row goes, a fresh one stays; -1 keeps them); taskq-worker heartbeats its
# row of taskq.workers at start ("<host>:<pid>", its actor, actions,
# concurrency and version; in_progress counts the task its child runs) and
# deletes it at a clean stop (SIGTERM); against a taskq without
# worker_heartbeat (before 0.6: 42883) it says so once and works on.
# Rows are back-dated, never waited out.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Sys::Hostname;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $node = taskq_node('registry',
	conf => "taskq.worker_naptime = '50ms'\ntaskq.worker_retention = '1h'\n");
is($node->safe_psql('postgres', "SELECT current_setting('taskq.worker_retention')"), '1h',
	'taskq.worker_retention is 1h');

# --- the background worker's retention ------------------------------------
$node->safe_psql('postgres', json_insert_sql({ id => 'wake', action => 'nobody' }));
ok(defined wait_for_worker($node, 'postgres', 30), 'database postgres has a worker');
$node->safe_psql('postgres', q{
	SELECT taskq.worker_heartbeat('gone', '{"actor": "a"}');
	SELECT taskq.worker_heartbeat('fresh', '{"actor": "a"}');
	SELECT taskq.worker_heartbeat('recent', '{"actor": "a"}');
	UPDATE taskq.worker_registry SET last_seen = now() - interval '61 min' WHERE worker_id = 'gone';
	UPDATE taskq.worker_registry SET last_seen = now() - interval '59 min' WHERE worker_id = 'recent';
});
ok( $node->poll_query_until('postgres',
		"SELECT NOT EXISTS (SELECT FROM taskq.worker_registry WHERE worker_id = 'gone')"),
	'the worker deletes a row not seen for longer than taskq.worker_retention');
is($node->safe_psql('postgres',
		"SELECT string_agg(worker_id || ':' || stale, ',' ORDER BY worker_id) FROM taskq.workers"),
	'fresh:false,recent:true', 'and keeps the others (a stale one too)');

# -1 keeps every row.
$node->safe_psql('postgres', "ALTER SYSTEM SET taskq.worker_retention = -1");
$node->reload;
usleep(300_000);    # the worker reads the reloaded file at its next wakeup (50 ms)
$node->safe_psql('postgres',
	"UPDATE taskq.worker_registry SET last_seen = now() - interval '10 days'");
usleep(2_500_000);    # over two of its rounds of the registry (one a second)
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.worker_registry"), '2',
	'with taskq.worker_retention = -1 no row is deleted');
$node->safe_psql('postgres', "ALTER SYSTEM RESET taskq.worker_retention");
$node->reload;
ok( $node->poll_query_until('postgres',
		"SELECT NOT EXISTS (SELECT FROM taskq.worker_registry)"),
	'back to 1h, the rows last seen 10 days ago go');

# --- taskq-worker -----------------------------------------------------------
my $bin = taskq_worker_bin();
my $db = $node->connstr('postgres');
my $dir = PostgreSQL::Test::Utils::tempdir();
open(my $sf, '>', "$dir/child.sh") or die;
print $sf <<"EOF";
#!/bin/sh
cat >/dev/null
if [ "\$TASKQ_ACTION" = hold ]; then
	while [ ! -f '$dir/release' ]; do sleep 0.05; done
fi
exit 0
EOF
close $sf;
chmod 0755, "$dir/child.sh";

sub start_worker
{
	my ($log, @args) = @_;
	return spawn_logged($log, $bin, '-d', $db, @args);
}

# SIGTERM; its exit status, or undef when it did not exit within 20 s.
sub stop_worker { return (stop_process($_[0], 20))[0]; }

my $host = substr(hostname(), 0, 180);
my $log = "$dir/worker.log";
my $wpid = start_worker($log, '--actor', 'reg-actor', '--concurrency', '2', '--grace', '5s',
	'--run', "hold=$dir/child.sh", '--run', "quick=$dir/child.sh");
my $wid = "$host:$wpid";
ok( $node->poll_query_until('postgres',
		"SELECT EXISTS (SELECT FROM taskq.workers WHERE worker_id = '$wid')"),
	"taskq-worker lists itself in taskq.workers as $wid at start");
is( $node->safe_psql('postgres',
		"SELECT concat_ws('|', actor, host, pid, actions, concurrency, version LIKE 'taskq-worker %', stale, in_progress)"
		  . " FROM taskq.workers WHERE worker_id = '$wid'"),
	"reg-actor|$host|$wpid|{hold,quick}|2|t|f|0",
	'with its actor, host, pid, actions, concurrency and version');
is($node->safe_psql('postgres',
		"SELECT heartbeat_interval FROM taskq.worker_registry WHERE worker_id = '$wid'"),
	'00:00:10', 'and its heartbeat interval, 10 s');

$node->safe_psql('postgres', json_insert_sql({ id => 'h1', action => 'hold' }));
ok( $node->poll_query_until('postgres',
		"SELECT in_progress = 1 FROM taskq.workers WHERE worker_id = '$wid'"),
	'in_progress counts the task its child runs');

# A heartbeat comes every 10 s: back-dated, the row is stale until the next.
$node->safe_psql('postgres',
	"UPDATE taskq.worker_registry SET last_seen = now() - interval '31 s' WHERE worker_id = '$wid'");
is($node->safe_psql('postgres', "SELECT stale FROM taskq.workers WHERE worker_id = '$wid'"),
	't', 'a row back-dated past three intervals is stale');
ok( $node->poll_query_until('postgres',
		"SELECT NOT stale FROM taskq.workers WHERE worker_id = '$wid'"),
	'and fresh again at the next heartbeat');

open(my $rf, '>', "$dir/release") or die;
close $rf;
ok( $node->poll_query_until('postgres',
		"SELECT status_code = 'completed' FROM taskq.tasks WHERE id = 'h1'"),
	'the task is done');
is(stop_worker($wpid), 0, 'SIGTERM: taskq-worker exits 0');
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.workers WHERE worker_id = '$wid'"),
	'0', 'and its row is gone');
unlike(slurp($log), qr/worker_heartbeat|worker_stopped|no heartbeats/,
	'no registry call failed');

# --- a taskq without the registry (before 0.6) --------------------------------
$node->safe_psql('postgres', q{
	ALTER EXTENSION taskq DROP FUNCTION taskq.worker_heartbeat(text, jsonb);
	DROP FUNCTION taskq.worker_heartbeat(text, jsonb);
});
my $log2 = "$dir/worker2.log";
$wpid = start_worker($log2, '--actor', 'old', '--poll', '100ms', '--run', "quick=$dir/child.sh");
$node->safe_psql('postgres',
	json_insert_sql(map { { id => "q$_", action => 'quick' } } 1 .. 3));
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 3 FROM taskq.tasks WHERE id LIKE 'q%' AND status_code = 'completed'"),
	'without worker_heartbeat taskq-worker still runs tasks');
is(stop_worker($wpid), 0, 'and stops cleanly');
my @said = slurp($log2) =~ /no heartbeats into taskq\.workers: 42883/g;
is(scalar @said, 1, 'having said once that there are no heartbeats (42883)');
unlike(slurp($log2), qr/worker_stopped failed/, 'nor called worker_stopped');

done_testing();
