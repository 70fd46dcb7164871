# taskq.metrics() with the background worker and a restart: the worker
# refreshes the gauges every taskq.metrics_interval (ready, delayed,
# blocked, in progress, the oldest ready task's age, the workers that
# heartbeat); taskq.metrics_text() passes promtool check metrics; a restart
# resets the counters and the gauges come back; and, where Debian's
# prometheus-postgres-exporter is installed, the exporter run with
# contrib/prometheus/queries.yaml serves taskq's metrics on /metrics
# (0.11 on Debian 12, 0.17 and 0.19 in the chroots of 17 and 18).
# Ages are made by back-dating rows, never waited out.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use HTTP::Tiny;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $node = taskq_node('metrics',
	conf => "taskq.worker_naptime = '50ms'\ntaskq.metrics_interval = '1s'\n");

# The path of a program found in PATH, or '' without one.
sub program
{
	my ($name) = @_;
	for my $dir (split /:/, $ENV{PATH} // '')
	{
		return "$dir/$name" if -x "$dir/$name";
	}
	return '';
}

# One value of taskq.metrics(): name and action ('' for none).
sub metric
{
	my ($name, $action) = @_;
	my $cond = defined $action
	  ? "labels = jsonb_build_object('action', '$action')"
	  : "labels = '{}'";
	return $node->safe_psql('postgres',
		"SELECT COALESCE(max(value), -1) FROM taskq.metrics() WHERE name = '$name' AND $cond");
}

# --- gauges, refreshed by the background worker ------------------------------
$node->safe_psql('postgres', q{
	SELECT taskq.insert_tasks('[
		{"id": "r1", "action": "r"}, {"id": "r2", "action": "r"}, {"id": "r3", "action": "r"},
		{"id": "d1", "action": "r", "not_before": "2999-01-01T00:00:00Z"},
		{"id": "b0", "action": "s", "to_signal_after": ["b1"]}, {"id": "b1", "action": "s"}]');
	UPDATE taskq.tasks SET created_at = now() - interval '100 s',
	                       not_before = now() - interval '100 s' WHERE id = 'r1';
	SELECT count(*) FROM taskq.own_tasks('w', 1, '{s}');
	SELECT taskq.worker_heartbeat('host:1', '{"actor": "w"}');
	SELECT taskq.worker_heartbeat('old', '{"actor": "w"}');
	UPDATE taskq.worker_registry SET last_seen = now() - interval '1 hour' WHERE worker_id = 'old';
});
ok(defined wait_for_worker($node, 'postgres', 30), 'database postgres has a worker');
ok( $node->poll_query_until('postgres', q{
		SELECT value = 3 FROM taskq.metrics()
		 WHERE name = 'taskq_tasks_ready' AND labels->>'action' = 'r'}),
	'the worker refreshes the gauges: 3 ready tasks of r');
is(metric('taskq_tasks_delayed', 'r'), '1', 'one delayed task of r');
is(metric('taskq_tasks_in_progress', 's'), '1', 'one task of s in progress');
is(metric('taskq_tasks_blocked', 's'), '1', 'one task of s blocked by its predecessor');
is(metric('taskq_tasks_ready', 's'), '0', 'no ready task of s: 0, not missing');
my $age = metric('taskq_oldest_ready_age_seconds', 'r');
ok($age >= 100 && $age < 200, "the oldest ready task of r has waited 100 s ($age)");
is(metric('taskq_workers_live'), '1', 'one live worker (taskq.workers)');
is(metric('taskq_workers_stale'), '1', 'and one stale');
ok(metric('taskq_gauges_age_seconds') < 30, 'the gauges were refreshed recently');

# The next refresh sees the claim of r1 (the first in claim order).
$node->safe_psql('postgres', "SELECT count(*) FROM taskq.own_tasks('w', 1, '{r}')");
ok( $node->poll_query_until('postgres', q{
		SELECT value = 2 FROM taskq.metrics()
		 WHERE name = 'taskq_tasks_ready' AND labels->>'action' = 'r'}),
	'a claim shows at the next refresh');
cmp_ok(metric('taskq_oldest_ready_age_seconds', 'r'), '<', 100,
	'the oldest ready task of r is younger now');
is(metric('taskq_tasks_claimed_total', 'r'), '1', 'the claim is counted');
cmp_ok(metric('taskq_queue_wait_seconds_sum', 'r'), '>=', 100,
	'its wait in the queue was 100 s');

# --- the text format passes promtool ------------------------------------------
SKIP:
{
	my $promtool = program('promtool');
	skip 'promtool not installed (Debian package prometheus, make deps)', 2
	  unless $promtool;
	my $text = $node->safe_psql('postgres', 'SELECT taskq.metrics_text()');
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ $promtool, 'check', 'metrics' ], '<', \$text, '>', \$out,
		'2>', \$err);
	ok($ok, 'promtool check metrics accepts taskq.metrics_text()')
	  or diag("promtool: $out$err");
	is("$out$err", '', 'without a lint remark');
}

# --- a restart resets the counters; the gauges come back -----------------------
$node->restart;
is(metric('taskq_tasks_claimed_total', 'r'), '0', 'after a restart the counters are 0');
ok(defined wait_for_worker($node, 'postgres', 30), 'the worker is back');
$node->safe_psql('postgres', "SELECT count(*) FROM taskq.own_tasks('w', 1, '{r}')");
ok( $node->poll_query_until('postgres', q{
		SELECT value = 1 FROM taskq.metrics()
		 WHERE name = 'taskq_tasks_ready' AND labels->>'action' = 'r'}),
	'the gauges come back, refreshed');
is(metric('taskq_tasks_in_progress', 'r'), '2', 'in progress: the claims before and after');
is(metric('taskq_tasks_claimed_total', 'r'), '1', 'counted from the restart on');

# taskq.metrics_interval = 0 stops the refresh.
$node->safe_psql('postgres', "ALTER SYSTEM SET taskq.metrics_interval = 0");
$node->reload;
usleep(300_000);
$node->safe_psql('postgres', "SELECT taskq.enqueue('r', id => 'late')");
usleep(2_500_000);    # over two refreshes, had they been on
is(metric('taskq_tasks_ready', 'r'), '1', 'with taskq.metrics_interval = 0 nothing is refreshed');
$node->safe_psql('postgres', "ALTER SYSTEM RESET taskq.metrics_interval");
$node->reload;

# --- prometheus-postgres-exporter with contrib/prometheus/queries.yaml ---------
SKIP:
{
	my $exporter = program('prometheus-postgres-exporter');
	skip 'prometheus-postgres-exporter not installed (Debian package, make deps)', 5
	  unless $exporter;
	my $queries = "$FindBin::RealBin/../../contrib/prometheus/queries.yaml";
	my $port = PostgreSQL::Test::Cluster::get_free_port();
	my $dir = PostgreSQL::Test::Utils::tempdir();
	$node->safe_psql('postgres', q{
		CREATE ROLE exporter LOGIN;
		GRANT taskq_monitor TO exporter;
	});
	local $ENV{DATA_SOURCE_NAME} =
	    'host=' . $node->host
	  . ' port=' . $node->port
	  . ' user=exporter dbname=postgres sslmode=disable';
	my $h = IPC::Run::start(
		[
			$exporter, "--extend.query-path=$queries",
			"--web.listen-address=127.0.0.1:$port",
			'--disable-default-metrics', '--disable-settings-metrics'
		],
		'>', "$dir/exporter.log", '2>&1');
	my $body = '';
	my $until = time + 30;
	while (time < $until)
	{
		my $r = HTTP::Tiny->new(timeout => 10)->get("http://127.0.0.1:$port/metrics");
		$body = $r->{success} ? $r->{content} : '';
		last if $body =~ /^taskq_tasks_inserted_total/m;
		usleep(200_000);
	}
	$h->kill_kill;
	like($body, qr/^taskq_tasks_inserted_total\{[^}]*action="r"[^}]*\} 1$/m,
		'the exporter serves the counters (since the restart: one insert of r)');
	like($body, qr/^taskq_tasks_ready\{[^}]*action="r"[^}]*\} \d+$/m, 'the gauges');
	like($body, qr/^taskq_queue_wait_seconds_bucket\{[^}]*le="\+Inf"[^}]*\} \d+$/m,
		'the histograms');
	like($body, qr/^pg_exporter_last_scrape_error 0$/m, 'every query of the file ran');
	like($body, qr/^taskq_workers_live\{[^}]*datname="postgres"[^}]*\} 1$/m,
		'and the workers')
	  or diag(PostgreSQL::Test::Utils::slurp_file("$dir/exporter.log"));
}

$node->stop;
done_testing();
