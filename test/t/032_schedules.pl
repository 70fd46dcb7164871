# Schedules fired by the background worker: schedule() wakes a worker that
# sleeps for a long naptime, and the worker then wakes for each tick; the
# tasks have the tick in their id and as not_before; catch_up 'all',
# 'latest' and 'none' insert what they say after back-dated ticks (at most
# 1,000 missed ones); a tick is inserted exactly once across kill -9 of the
# background worker in the middle of its firing transaction, across a
# crash of the whole server, and across the failover to a promoted standby
# (a schedule of '1 seconds' with catch_up 'all' leaves no tick without
# its task and none twice).  Ticks are back-dated, never waited out.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

# A long naptime: only schedule()'s wakeup and the ticks wake the worker.
my $node = taskq_node('primary', allows_streaming => 1,
	conf => "taskq.worker_naptime = '60s'\n");
$node->safe_psql('postgres', json_insert_sql({ id => 'wake', action => 'nobody' }));
ok(defined wait_for_worker($node, 'postgres', 30), 'database postgres has a worker');
usleep(500_000);    # it is asleep now, for a minute

# The ids of a schedule's tasks that do not spell their not_before, and the
# gaps and repeats among its ticks from the first to the last ('1 seconds').
sub bad_ids
{
	my ($n, $name) = @_;
	return $n->safe_psql('postgres', qq{
		SELECT count(*) FROM taskq.tasks
		 WHERE id LIKE '$name/%'
		   AND id <> '$name/' || to_char(not_before AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')});
}

sub gaps
{
	my ($n, $name) = @_;
	return $n->safe_psql('postgres', qq{
		SELECT extract(epoch FROM max(not_before) - min(not_before))::int + 1 - count(*)
		  FROM taskq.tasks WHERE id LIKE '$name/%'});
}

# --- schedule() wakes the worker; the worker wakes for each tick ------------
my $t0 = time;
$node->safe_psql('postgres',
	q{SELECT taskq.schedule('sec', '1 seconds', '{"action": "tick", "body": {"k": 1}}')});
ok($node->poll_query_until('postgres',
		"SELECT count(*) >= 3 FROM taskq.tasks WHERE id LIKE 'sec/%'"),
	'a schedule of 1 seconds inserts its tasks');
my $took = time - $t0;
cmp_ok($took, '<', 10,
	sprintf('three ticks within %.1f s although the worker naps for 60 s: schedule() woke it, '
		  . 'and it sleeps until each next tick', $took));
is(bad_ids($node, 'sec'), '0', 'each id is <name>/<tick as ISO 8601 UTC> and not_before the tick');
is($node->safe_psql('postgres',
		"SELECT string_agg(DISTINCT action || ' ' || body::text, ',') FROM taskq.tasks WHERE id LIKE 'sec/%'"),
	'tick {"k": 1}', 'with the task object given');
is($node->safe_psql('postgres', q{
		SELECT s.last_tick = (SELECT max(not_before) FROM taskq.tasks WHERE id LIKE 'sec/%')
		       AND s.next_tick = s.last_tick + interval '1 s'
		  FROM taskq.schedules AS s WHERE s.name = 'sec'}),
	't', 'last_tick is the last tick inserted, next_tick the one after');
is($node->safe_psql('postgres', "SELECT taskq.unschedule('sec')"), 't', 'unschedule');
my $n_sec = $node->safe_psql('postgres', "SELECT count(*) FROM taskq.tasks WHERE id LIKE 'sec/%'");
usleep(1_500_000);
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.tasks WHERE id LIKE 'sec/%'"),
	$n_sec, 'an unscheduled schedule inserts nothing more');

# The rest with the default naptime.
$node->safe_psql('postgres', "ALTER SYSTEM SET taskq.worker_naptime = '1s'");
$node->reload;
# a delayed task wakes the worker (at its commit), which then reads the file
$node->safe_psql('postgres',
	"SELECT taskq.enqueue('nobody', NULL, 'poke', 0, now() + interval '100 ms')");
usleep(500_000);

# --- catch_up ---------------------------------------------------------------
# Yearly schedules back-dated five years: the ticks due are the 1 January of
# this year and the five before it; this year's is the current tick, the
# five earlier ones were missed.
for my $mode (qw(all latest none))
{
	$node->safe_psql('postgres', qq{
		BEGIN;
		SELECT taskq.schedule('y-$mode', '0 0 1 1 *', '{"action": "yearly"}', 'UTC', '$mode');
		UPDATE taskq.schedule_registry
		   SET next_tick = make_timestamptz(extract(year FROM now() AT TIME ZONE 'UTC')::int - 5, 1, 1, 0, 0, 0, 'UTC')
		 WHERE name = 'y-$mode';
		COMMIT;});
}
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.schedules WHERE name LIKE 'y-%' AND next_tick <= now()"),
	'the back-dated schedules fired');
my $years = q{
	SELECT string_agg(extract(year FROM not_before AT TIME ZONE 'UTC')::int
	                  - extract(year FROM now() AT TIME ZONE 'UTC')::int || '', ',' ORDER BY not_before)
	  FROM taskq.tasks WHERE id LIKE 'y-%s/%%'};
is($node->safe_psql('postgres', sprintf($years, 'all')), '-5,-4,-3,-2,-1,0',
	"catch_up 'all' inserts every missed tick and the current one");
is($node->safe_psql('postgres', sprintf($years, 'latest')), '-1,0',
	"catch_up 'latest' inserts the most recent missed tick and the current one");
is($node->safe_psql('postgres', sprintf($years, 'none')), '0',
	"catch_up 'none' inserts only the current tick");
is($node->safe_psql('postgres', q{
		SELECT bool_and(last_tick = make_timestamptz(extract(year FROM now() AT TIME ZONE 'UTC')::int, 1, 1, 0, 0, 0, 'UTC')
		                AND next_tick = last_tick + interval '1 year')
		  FROM taskq.schedules WHERE name LIKE 'y-%'}),
	't', 'each moved on to next year');
is(bad_ids($node, 'y-all'), '0', 'ids and not_before agree');

# 'all' inserts at most the 1,000 most recent missed ticks.
$node->safe_psql('postgres', q{
	BEGIN;
	SELECT taskq.schedule('m-all', '* * * * *', '{"action": "minutely"}', 'UTC', 'all');
	UPDATE taskq.schedule_registry SET next_tick = date_trunc('minute', now()) - interval '3000 min'
	 WHERE name = 'm-all';
	COMMIT;});
ok($node->poll_query_until('postgres',
		"SELECT next_tick > now() FROM taskq.schedules WHERE name = 'm-all'"),
	'a minutely schedule 3,000 minutes behind fired');
is($node->safe_psql('postgres', q{
		SELECT count(*) || ' ' || (max(not_before) - min(not_before))::text
		       || ' ' || (max(not_before) = (SELECT last_tick FROM taskq.schedules WHERE name = 'm-all'))
		  FROM taskq.tasks WHERE id LIKE 'm-all/%'}),
	'1001 16:40:00 true', 'the 1,000 most recent missed minutes and the current one');
$node->safe_psql('postgres',
	"SELECT taskq.unschedule(name) FROM taskq.schedules; DELETE FROM taskq.tasks");

# --- kill -9 of the worker in the middle of its firing transaction -----------
# A session inserts the id of the tick first and holds it uncommitted: the
# worker's insert of that tick (this year's: the only one due) waits for
# it, with the schedule row locked.
my $tick = $node->safe_psql('postgres',
	"SELECT to_char(date_trunc('year', now() AT TIME ZONE 'UTC'), 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')");
$node->safe_psql('postgres',
	q{SELECT taskq.schedule('k9', '0 0 1 1 *', '{"action": "scheduled"}', 'UTC', 'none')});
my $holder = $node->background_psql('postgres', on_error_stop => 0);
$holder->query_safe(
	"BEGIN; SELECT taskq.insert_tasks('[{\"id\": \"k9/$tick\", \"action\": \"impostor\"}]')");
$node->safe_psql('postgres', qq{
	UPDATE taskq.schedule_registry SET next_tick = '$tick' WHERE name = 'k9'});
ok($node->poll_query_until('postgres', q{
		SELECT count(*) = 1 FROM pg_stat_activity
		 WHERE backend_type = 'taskq worker' AND wait_event_type = 'Lock'}),
	'the worker waits in its firing transaction for the tick\'s id');
my ($wpid) = worker_pids($node, 'postgres');
kill 'KILL', $wpid;
$holder->quit;
ok($node->poll_query_until('postgres',
		"SELECT last_tick IS NOT NULL FROM taskq.schedules WHERE name = 'k9'"),
	'after kill -9 of the worker (the server restarts), the tick fires');
is($node->safe_psql('postgres',
		"SELECT string_agg(id || ' ' || action, ',') FROM taskq.tasks WHERE id LIKE 'k9/%'"),
	"k9/$tick scheduled", 'its task is inserted once, by the schedule');
$node->safe_psql('postgres', "SELECT taskq.unschedule('k9')");

# --- a crash of the server while a schedule of '1 seconds' runs --------------
$node->safe_psql('postgres',
	q{SELECT taskq.schedule('crash', '1 seconds', '{"action": "c"}', 'UTC', 'all')});
ok($node->poll_query_until('postgres',
		"SELECT count(*) >= 3 FROM taskq.tasks WHERE id LIKE 'crash/%'"),
	'the schedule runs');
kill9_and_wait($node);
usleep(1_500_000);    # ticks pass while the server is down
$node->start;
my $restarted = $node->safe_psql('postgres', 'SELECT now()');
ok($node->poll_query_until('postgres',
		"SELECT last_tick > '$restarted'::timestamptz + interval '2 s' FROM taskq.schedules WHERE name = 'crash'"),
	'after kill -9 of the postmaster and a restart the schedule runs on');
is(gaps($node, 'crash'), '0', 'every tick from the first to the last has its task, once');
is(bad_ids($node, 'crash'), '0', 'with the tick in its id');
$node->safe_psql('postgres', "SELECT taskq.unschedule('crash')");

# --- failover -------------------------------------------------------------------
$node->backup('b1');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'b1', has_streaming => 1);
$standby->start;
$node->append_conf('postgresql.conf', "synchronous_standby_names = '*'\n");
$node->reload;
ok($node->poll_query_until('postgres', "SELECT sync_state = 'sync' FROM pg_stat_replication"),
	'the standby is synchronous');
$node->safe_psql('postgres',
	q{SELECT taskq.schedule('fo', '1 seconds', '{"action": "f"}', 'UTC', 'all')});
ok($node->poll_query_until('postgres', "SELECT count(*) >= 3 FROM taskq.tasks WHERE id LIKE 'fo/%'"),
	'the schedule runs on the primary');
$node->wait_for_catchup($standby);
my $taskq_procs = "SELECT count(*) FROM pg_stat_activity WHERE backend_type IN ('taskq worker', 'taskq launcher')";
is($standby->safe_psql('postgres', $taskq_procs), '0', 'nothing fires on the standby: no taskq worker');
my ($st) = sqlstate_of($standby, q{SELECT taskq.schedule('sb', '@daily', '{"action": "x"}')});
is($st, '25006', 'schedule() on a standby fails with 25006');
usleep(1_000_000);
kill9_and_wait($node);
$standby->promote;
ok($standby->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'), 'the standby is promoted');
my $promoted = $standby->safe_psql('postgres', 'SELECT now()');
ok($standby->poll_query_until('postgres',
		"SELECT last_tick > '$promoted'::timestamptz + interval '2 s' FROM taskq.schedules WHERE name = 'fo'"),
	'the promoted node fires the schedule');
is(gaps($standby, 'fo'), '0', 'every tick across the failover has its task, once');
is(bad_ids($standby, 'fo'), '0', 'with the tick in its id');

$standby->stop;
done_testing();
