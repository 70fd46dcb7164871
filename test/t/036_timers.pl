# Timers of runs fired by the background worker: a waiting state's timeout
# wakes a worker that sleeps for a long naptime (the commit that entered
# the state told it when), and the run moves on on_timeout; a deadline
# fails a machine (its step aborted) and makes a saga undo; a timeout and a
# deadline that came due while the server was down (kill -9 of the
# postmaster) fire exactly once after the restart; the retention of runs
# deletes the timers of the runs it deletes.  Timers are short or
# back-dated, never waited out with pg_sleep.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $node = taskq_node('timers', conf => "taskq.worker_naptime = '60s'\n");
$node->safe_psql('postgres', json_insert_sql({ id => 'wake', action => 'nobody' }));
ok(defined wait_for_worker($node, 'postgres', 30), 'database postgres has a worker');
usleep(500_000);    # it is asleep now, for a minute

$node->safe_psql('postgres', q{
	SELECT taskq.define_machine('approval', '{"states": [
	  {"name": "Ask", "action": "ask", "initial": true, "transitions": [{"event": "asked", "to": "Wait"}]},
	  {"name": "Wait", "action": null, "timeout": "1 second", "on_timeout": "expired",
	   "transitions": [{"event": "approved", "to": "Done"}, {"event": "expired", "to": "Late"}]},
	  {"name": "Done", "action": "done", "final": true},
	  {"name": "Late", "action": "late", "final": true}]}');
	SELECT taskq.define_saga('trip', '{"steps": [
	  {"name": "flight", "do": "fly", "undo": "unfly"},
	  {"name": "hotel", "do": "book", "undo": "unbook"}]}');
	CREATE FUNCTION ask_step(p_run text) RETURNS text LANGUAGE sql AS $$
	  SELECT taskq.transition(o.id, o.token, 'asked')
	    FROM taskq.own_tasks('w', 1, ARRAY['ask'], '1 hour') AS o WHERE o.id = p_run || '/1' $$;
});

# Start a run of approval and take it into Wait (its timeout set then).
sub into_wait
{
	my ($run, $extra) = @_;
	$node->safe_psql('postgres',
		"SELECT taskq.start_machine('approval', '$run'$extra); SELECT ask_step('$run')");
}

# --- the worker wakes for a timeout ------------------------------------------
my $t0 = time;
into_wait('w1', '');
ok($node->poll_query_until('postgres', "SELECT state = 'Late' FROM taskq.runs WHERE id = 'w1'"),
	'the timeout moves the run on on_timeout');
my $took = time - $t0;
cmp_ok($took, '<', 15,
	sprintf('within %.1f s although the worker naps for 60 s: the commit that entered the '
		  . 'state woke it for the timer', $took));
is($node->safe_psql('postgres',
		"SELECT status || ' ' || step_task || ' ' || (SELECT action FROM taskq.tasks WHERE id = r.step_task)"
		  . " FROM taskq.runs AS r WHERE id = 'w1'"),
	'running w1/2 late', 'its next state has its task');
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.run_timers WHERE run_id = 'w1'"),
	'0', 'the timer is gone');

# an event in time: the timer fires nothing (back-dated after the event)
$node->safe_psql('postgres', "ALTER SYSTEM SET taskq.worker_naptime = '1s'");
$node->reload;
$node->safe_psql('postgres', q{
	BEGIN;
	SELECT taskq.start_machine('approval', 'w2');
	SELECT ask_step('w2');
	SELECT taskq.send_event('w2', 'approved');
	COMMIT;});
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM taskq.run_timers WHERE run_id = 'w2'"),
	'the stale timer of a run that moved on is deleted when it comes due');
is($node->safe_psql('postgres', "SELECT state FROM taskq.runs WHERE id = 'w2'"), 'Done',
	'and moved nothing');

# --- deadlines ------------------------------------------------------------------
$node->safe_psql('postgres', q{
	BEGIN;
	SELECT taskq.start_machine('approval', 'd1', deadline => '1 hour');
	SELECT taskq.start_saga('trip', 's1', deadline => '1 hour');
	WITH o AS (SELECT * FROM taskq.own_tasks('w', 1, ARRAY['fly'], '1 hour'))
	SELECT taskq.return_step(o.id, o.token, 'success') FROM o;
	UPDATE taskq.runs SET deadline = now() WHERE id IN ('d1', 's1');
	UPDATE taskq.run_timers SET due_at = now() WHERE run_id IN ('d1', 's1');
	COMMIT;});
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM taskq.runs WHERE id IN ('d1', 's1') AND error = 'deadline exceeded'"),
	'the worker fires back-dated deadlines');
is($node->safe_psql('postgres', q{
		SELECT r.status || ' ' || t.status_code FROM taskq.runs AS r, taskq.tasks AS t
		 WHERE r.id = 'd1' AND t.id = 'd1/1'}),
	'failed aborted', 'a machine fails, its pending step aborted');
is($node->safe_psql('postgres', q{
		SELECT string_agg(action || ' ' || status_code, ',' ORDER BY id) FROM taskq.tasks WHERE workflow = 's1'}),
	'fly completed,book aborted,unfly pending', 'a saga undoes what it did');

# --- a timeout and a deadline due while the server is down -----------------------
into_wait('k1', '');    # timeout 1 second
$node->safe_psql('postgres', "SELECT taskq.start_machine('approval', 'k2', deadline => '1 second')");
kill9_and_wait($node);
usleep(1_500_000);    # both come due while the server is down
$node->start;
ok($node->poll_query_until('postgres', q{
		SELECT (SELECT state FROM taskq.runs WHERE id = 'k1') = 'Late'
		   AND (SELECT status FROM taskq.runs WHERE id = 'k2') = 'failed'}),
	'after kill -9 of the postmaster and a restart, the timeout and the deadline fire');
is($node->safe_psql('postgres', q{
		SELECT string_agg(id || ' ' || action, ',' ORDER BY id) FROM taskq.tasks
		 WHERE workflow = 'k1' AND action <> 'ask'}),
	'k1/2 late', 'the timeout moved the run once');
is($node->safe_psql('postgres', q{
		SELECT error || ' ' || (SELECT status_code FROM taskq.tasks WHERE id = 'k2/1')
		  FROM taskq.runs WHERE id = 'k2'}),
	'deadline exceeded aborted', 'the deadline failed the run once');
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.run_timers WHERE run_id IN ('k1', 'k2')"),
	'0', 'no timer is left');

# --- retention deletes the timers of the runs it deletes --------------------------
$node->safe_psql('postgres', q{
	SELECT taskq.start_machine('approval', 'r1', deadline => '1 hour');
	SELECT taskq.cancel_run('r1');
	UPDATE taskq.runs SET finished_at = now() - interval '30 days' WHERE id = 'r1';});
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM taskq.runs WHERE id = 'r1'"),
	'the run is deleted past retention');
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.run_timers WHERE run_id = 'r1'"),
	'0', 'with its timer');

$node->stop;
done_testing();
