# Sagas under kill -9.  A producer starts sagas (a DAG of six steps) and
# now and then cancels one; workers claim do and undo steps and, in one
# transaction, record the step's effect and return it (mostly success,
# sometimes retry or fatal; undos rarely retry or fail).  The postmaster is
# killed with SIGKILL at random moments, five times.  After the last
# restart the runs are driven to their end, and then: every run ended
# succeeded, failed or cancelled fully undone, or dismal; no do and no undo
# of a step took effect twice; the effects are exactly the steps the runs
# recorded as done and undone.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use TaskqTAP;

my $iterations = $ENV{TASKQ_CRASH_ITERATIONS} // 5;

my $node = taskq_node('sagacrash', conf => "taskq.worker_naptime = '200ms'\n");
$node->safe_psql('postgres', q{
CREATE TABLE effects (run text, step text, direction text, task text);
CREATE SEQUENCE run_seq;
SELECT taskq.define_saga('crash', jsonb_build_object('steps', jsonb_build_array(
    jsonb_build_object('name', 'a', 'do', 'c-do', 'undo', 'c-undo'),
    jsonb_build_object('name', 'b1', 'do', 'c-do', 'undo', 'c-undo', 'after', jsonb_build_array('a')),
    jsonb_build_object('name', 'b2', 'do', 'c-do', 'undo', 'c-undo', 'after', jsonb_build_array('a')),
    jsonb_build_object('name', 'c', 'do', 'c-do', 'undo', 'c-undo', 'after', jsonb_build_array('b1', 'b2')),
    jsonb_build_object('name', 'd', 'do', 'c-do', 'undo', null),
    jsonb_build_object('name', 'e', 'do', 'c-do', 'undo', 'c-undo')),
  'max_tries', 3, 'undo_max_tries', 4));

-- A worker: claim one step, record its effect and return it in one
-- transaction.  Idle: a short nap (this is a load generator).
CREATE PROCEDURE saga_worker(p_actor text, p_n int, p_stop_when_idle boolean)
LANGUAGE plpgsql AS $$
DECLARE
    t record;
    r float8;
    res text;
BEGIN
    FOR i IN 1..p_n LOOP
        -- a waiting claim (when not draining): it sleeps until work is ready
        SELECT * INTO t FROM taskq.own_tasks(p_actor, 1, ARRAY['c-do', 'c-undo'], '2 s',
                                             CASE WHEN p_stop_when_idle THEN NULL ELSE interval '20 ms' END);
        IF t.id IS NULL THEN
            EXIT WHEN p_stop_when_idle;
            COMMIT;
            CONTINUE;
        END IF;
        COMMIT;
        r := random();
        IF t.body->>'direction' = 'do' THEN
            res := CASE WHEN r < 0.06 THEN 'retry' WHEN r < 0.10 THEN 'fatal' ELSE 'success' END;
        ELSE
            res := CASE WHEN r < 0.10 THEN 'retry' WHEN r < 0.11 THEN 'fatal' ELSE 'success' END;
        END IF;
        BEGIN
            IF res = 'success' THEN
                INSERT INTO effects VALUES (t.body->>'run', t.body->>'step', t.body->>'direction', t.id);
            END IF;
            PERFORM taskq.return_step(t.id, t.token, res,
                                      jsonb_build_object(t.body->>'step', t.id), 'chosen ' || res);
        EXCEPTION WHEN OTHERS THEN
            NULL;       -- a stale token after an expired lease: nothing happened
        END;
        COMMIT;
    END LOOP;
END
$$;

CREATE PROCEDURE saga_producer(p_n int)
LANGUAGE plpgsql AS $$
DECLARE
    id text;
BEGIN
    FOR i IN 1..p_n LOOP
        id := 'r' || nextval('run_seq');
        PERFORM taskq.start_saga('crash', id);
        COMMIT;
        IF random() < 0.08 THEN
            SELECT r.id INTO id FROM taskq.runs AS r
             WHERE r.status IN ('running', 'waiting') ORDER BY random() LIMIT 1;
            IF id IS NOT NULL THEN
                PERFORM taskq.cancel_run(id);
            END IF;
            COMMIT;
        END IF;
        PERFORM pg_sleep(0.01);     -- the producer's pace, not a wait for time to pass
    END LOOP;
END
$$;
});

sub start_clients
{
	my @h;
	my @calls = ('CALL saga_producer(100000)',
		map { "CALL saga_worker('w$_', 10000000, false)" } 1 .. 3);
	for my $sql (@calls)
	{
		local %ENV = $node->_get_env();
		push @h,
		  IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', $sql ],
			'<', \undef, '>', '/dev/null', '2>', '/dev/null', IPC::Run::timeout(600));
	}
	return \@h;
}

srand(2024);
for my $i (1 .. $iterations)
{
	my $clients = start_clients();
	usleep(int((1.0 + rand(2.0)) * 1_000_000));
	my $left = kill9_and_wait($node);
	is($left, 0, "iteration $i: every server process left after the postmaster's SIGKILL");
	for my $h (@$clients)
	{
		eval { $h->finish; };
	}
	my $started = 0;
	for my $try (1 .. 5)
	{
		last if ($started = $node->start(fail_ok => 1));
		sleep 1;
	}
	ok($started, "iteration $i: the server restarts");
	my $n = $node->safe_psql('postgres', 'SELECT count(*) FROM taskq.runs');
	note("iteration $i: $n runs so far");
}

# Drive every run to its end: leases left by the crashes are expired by
# back-dating them, the steps are worked until nothing is left.
my $unfinished;
for my $round (1 .. 200)
{
	$node->safe_psql('postgres',
		"UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE status_code = 'in_progress'");
	$node->safe_psql('postgres', "CALL saga_worker('drain', 5000, true)");
	$unfinished = $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.runs WHERE status IN ('running', 'waiting', 'undoing')");
	last if $unfinished == 0;
}
is($unfinished, 0, 'every saga run is driven to its end');

my $summary = $node->safe_psql('postgres',
	"SELECT string_agg(status || '=' || n, ' ' ORDER BY status) FROM"
	  . " (SELECT status, count(*) AS n FROM taskq.runs GROUP BY status) AS s");
note("runs: $summary");
my $runs = $node->safe_psql('postgres', 'SELECT count(*) FROM taskq.runs');
cmp_ok($runs, '>', 20, "sagas were started under load ($summary)");
like($summary, qr/failed=|cancelled=/, 'some runs were undone');

is( $node->safe_psql('postgres', q{
SELECT count(*) FROM (SELECT run, step, direction FROM effects
                       GROUP BY 1, 2, 3 HAVING count(*) > 1) AS d}),
	'0', 'no do and no undo of a step took effect twice');

is( $node->safe_psql('postgres', q{
SELECT count(*) FROM (
  (SELECT run, step, direction FROM effects
   EXCEPT
   SELECT run, step, 'do' FROM taskq.saga_steps WHERE do_state = 'succeeded'
   EXCEPT
   SELECT run, step, 'undo' FROM taskq.saga_steps WHERE undo_state = 'succeeded')
  UNION ALL
  (SELECT run, step, 'do' FROM taskq.saga_steps WHERE do_state = 'succeeded'
   UNION ALL
   SELECT run, step, 'undo' FROM taskq.saga_steps WHERE undo_state = 'succeeded'
   EXCEPT ALL
   SELECT run, step, direction FROM effects)) AS x}),
	'0', 'the effects are exactly the dos and undos the runs recorded');

is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.runs AS r
 WHERE CASE r.status
         WHEN 'succeeded' THEN
           (SELECT count(*) FROM taskq.saga_steps AS s
             WHERE s.run = r.id AND s.do_state = 'succeeded' AND s.undo_state IS NULL) <> 6
         WHEN 'dismal' THEN
           NOT EXISTS (SELECT FROM taskq.saga_steps AS s WHERE s.run = r.id AND s.undo_state = 'failed')
         ELSE r.status NOT IN ('failed', 'cancelled')
           OR EXISTS (SELECT FROM taskq.saga_steps AS s
                       WHERE s.run = r.id AND s.do_state IN ('succeeded', 'failed')
                         AND s.undo_state IS DISTINCT FROM 'succeeded'
                         AND s.undo_state IS DISTINCT FROM 'none')
       END}),
	'0', 'every run ended succeeded, failed or cancelled fully undone, or dismal');

is( $node->safe_psql('postgres', q{
SELECT count(*) FROM (SELECT t.workflow, t.body->>'step', t.body->>'direction'
                        FROM taskq.tasks AS t
                       WHERE t.workflow LIKE 'r%' AND t.status_code = 'completed'
                       GROUP BY 1, 2, 3 HAVING count(*) > 1) AS d}),
	'0', 'no step has two completed do tasks or two completed undo tasks');

$node->stop;
done_testing();
