# Primary and synchronous standby under load; the primary is killed and
# the standby promoted.  No acknowledged operation is lost; the taskq
# launcher and workers stay off the standby, come up on the promoted node
# and expire leases there within seconds; writes on a standby fail with
# SQLSTATE 25006 (read-only transaction), never XX000.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $primary = taskq_node('primary', allows_streaming => 1);
create_held($primary, 'postgres', 20);
# Tasks to act on from the standby, and one finished task to read.
$primary->safe_psql('postgres', json_insert_sql(
		{ id => 'sb-own', action => 'sb' },
		{ id => 'sb-after', action => 'sb2' },
		{ id => 'sb-done', action => 'sb3' }));
my ($sb_tok) = $primary->safe_psql('postgres',
	"SELECT token FROM taskq.own_tasks('sbw', 1, '{sb}', '1 hour')");
$primary->safe_psql('postgres',
	"SELECT taskq.return_task(id, token, 'done', 'completed') FROM taskq.own_tasks('sbw', 1, '{sb3}')");

$primary->backup('b1');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b1', has_streaming => 1);
$standby->start;
$primary->append_conf('postgresql.conf', "synchronous_standby_names = '*'\n");
$primary->reload;
ok( $primary->poll_query_until('postgres',
		"SELECT sync_state = 'sync' FROM pg_stat_replication"),
	'the standby is synchronous');
$primary->wait_for_catchup($standby);

my $taskq_procs = "SELECT count(*) FROM pg_stat_activity WHERE backend_type IN ('taskq worker', 'taskq launcher')";
is($standby->safe_psql('postgres', $taskq_procs), '0', 'no taskq launcher or worker on the standby');

# --- writes on the standby: 25006 ------------------------------------------
my %writes = (
	insert_tasks => "SELECT taskq.insert_tasks('[{\"id\":\"sb-new\",\"action\":\"x\"}]')",
	replace_tasks => "SELECT taskq.replace_tasks('[{\"id\":\"sb-after\",\"action\":\"x\"}]')",
	own_tasks => "SELECT * FROM taskq.own_tasks('sbw', 1, NULL, '1 min')",
	own_tasks_no_ready => "SELECT * FROM taskq.own_tasks('sbw', 1, '{nothing}', '1 min')",
	return_task => "SELECT taskq.return_task('sb-own', '$sb_tok', 'x', 'completed')",
	return_tasks => "SELECT taskq.return_tasks(ARRAY['sb-own'], ARRAY['$sb_tok']::uuid[], NULL, ARRAY['completed']::taskq.status[])",
	extend_ownership => "SELECT * FROM taskq.extend_ownership('sbw', ARRAY['sb-own'], ARRAY['$sb_tok']::uuid[], '1 hour')",
	add_dependencies => "SELECT taskq.add_dependencies(ARRAY['sb-own'], ARRAY['sb-after'])",
	chain => "SELECT taskq.chain('[{\"id\":\"c1\",\"action\":\"x\"},{\"id\":\"c2\",\"action\":\"x\"}]')",
);
for my $f (sort keys %writes)
{
	my ($st) = sqlstate_of($standby, $writes{$f});
	is($st, '25006', "$f on a standby fails with 25006");
}
my ($rst, $rout) = sqlstate_of($standby, "SELECT (taskq.wait_for_task('sb-done', '0 s')).status_code");
is("$rst|$rout", '|completed', 'wait_for_task reads a finished task on a standby');
my ($vst, $vout) = sqlstate_of($standby, "SELECT completed FROM taskq.action_stats WHERE action = 'sb3'");
is("$vst|$vout", '|1', 'the monitoring views read on a standby');

# --- load, leases, then the primary dies ---------------------------------
# Leases that end by themselves shortly after the failover, and long ones,
# claimed in transaction blocks so that they commit synchronously (a claim
# alone in its transaction may commit asynchronously: taskq.async_claims).
$primary->safe_psql('postgres',
	json_insert_sql(map { { id => "short-$_", action => 'short' } } 1 .. 50),
	);
$primary->safe_psql('postgres',
	json_insert_sql(map { { id => "long-$_", action => 'long' } } 1 .. 50));
my $long = $primary->safe_psql('postgres',
	"BEGIN; SELECT count(*) FROM taskq.own_tasks('holder', 50, '{long}', '1 hour'); COMMIT");
is($long, '50', 'a holder owns 50 tasks with a 1 hour lease');

my %acks;
my $load = start_load($primary, 'fo', statements => 4000);
usleep(1_500_000);
is($standby->safe_psql('postgres', $taskq_procs), '0', 'still no taskq process on the standby under load');
my $short = $primary->safe_psql('postgres',
	"BEGIN; SELECT count(*) FROM taskq.own_tasks('holder', 50, '{short}', '4 s'); COMMIT");
is($short, '50', 'a holder owns 50 tasks with a 4 s lease');
my $short_t0 = time;
usleep(1_000_000);

kill9_and_wait($primary);
my $ops = stop_load($load, \%acks);
cmp_ok($ops, '>', 50, "the clients got $ops operations acknowledged before the primary died");
is($standby->safe_psql('postgres', $taskq_procs), '0', 'no taskq process on the standby before promotion');
ok(!$standby->log_contains(qr/background worker "taskq/),
	'no taskq background worker started or failed on the standby');

my $p0 = time;
$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'), 'the standby is promoted');

check_acks($standby, \%acks, 'after failover');
check_invariants($standby, 'after failover');
is( $standby->safe_psql('postgres',
		"SELECT count(*) FROM taskq.tasks WHERE id LIKE 'short-%' AND actor_id = 'holder' AND num_tries = 1"),
	'50', 'the short leases taken just before the crash are on the new primary');

my $w = wait_for_worker($standby, 'postgres', 30);
ok(defined $w, sprintf('a taskq worker runs on the promoted node (%.1f s after promotion)', time - $p0));
is(scalar(launcher_pids($standby)), 1, 'and one launcher');

# The 4 s leases end by themselves; nobody calls own_tasks.
ok( $standby->poll_query_until('postgres',
		"SELECT count(*) = 50 FROM taskq.tasks WHERE id LIKE 'short-%' AND status_code = 'pending'"),
	'the leases that ended are requeued on the new primary');
my $late = time - ($short_t0 + 4);
cmp_ok($late, '<', 5, sprintf('within seconds of their deadline (%.1f s after)', $late));

$standby->safe_psql('postgres',
	"UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE id LIKE 'long-%'");
my $t0 = time;
ok( $standby->poll_query_until('postgres',
		"SELECT count(*) = 50 FROM taskq.tasks WHERE id LIKE 'long-%' AND status_code = 'pending'"
		  . " AND num_tries = 1 AND actor_id = 'holder'"),
	'back-dated leases are requeued on the new primary');
cmp_ok(time - $t0, '<', 5, 'within seconds');

# The new primary takes writes.
my ($st) = sqlstate_of($standby, "SELECT taskq.return_task('sb-own', '$sb_tok', 'x', 'completed')");
is($st, '', 'return_task works on the promoted node');

$standby->stop;
done_testing();
