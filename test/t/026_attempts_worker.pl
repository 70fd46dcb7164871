# The attempt history with the background worker: its expiry sweep ends
# the attempts of expired leases (expired, and cancelled for a task
# cancelled while held; a late owner's return then ends an expired one as
# returned), and its retention deletes the attempts with their tasks, also
# when the worker runs as a role of its own (a member of taskq_admin).
# Leases and finish times are back-dated, never waited out.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;

my $node = taskq_node('attempts',
	conf => "taskq.worker_naptime = '50ms'\ntaskq.retention = '1h'\n"
	  . "taskq.worker_role = 'queue_bg'\n",
	no_extension => 1);
$node->safe_psql('postgres', q{
	CREATE EXTENSION taskq;
	CREATE ROLE queue_bg LOGIN IN ROLE taskq_admin;
	SELECT taskq.set_action_policy('ka', NULL, NULL, true);
	SELECT taskq.insert_tasks('[{"id": "e1", "action": "ka"},
	                            {"id": "e2", "action": "ka", "max_tries": 1},
	                            {"id": "x1", "action": "ka"},
	                            {"id": "r1", "action": "ka"},
	                            {"id": "p1", "action": "plain"}]');
	CREATE TABLE tok AS SELECT id, token FROM taskq.own_tasks('w', 10, NULL, '1 hour');
});
ok(defined wait_for_worker($node, 'postgres', 30), 'database postgres has a worker');
is($node->safe_psql('postgres',
		"SELECT usename FROM pg_stat_activity WHERE backend_type = 'taskq worker'"),
	'queue_bg', 'the worker runs as queue_bg');
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.attempts WHERE outcome IS NULL"),
	'4', 'each claim of an action that keeps attempts has an open row');

# --- the worker's expiry sweep ------------------------------------------------
$node->safe_psql('postgres', q{
	SELECT taskq.cancel_tasks('{x1}');
	UPDATE taskq.tasks SET action_deadline = now() - interval '1 second'
	 WHERE id IN ('e1', 'e2', 'x1');
});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE id IN ('e1', 'e2', 'x1') AND status_code = 'in_progress'"),
	'the worker sweeps the expired leases');
is( $node->safe_psql('postgres', q{
		SELECT string_agg(t.id || ':' || t.status_code || ':' || a.try || ':' || a.outcome, ',' ORDER BY t.id)
		  FROM taskq.tasks AS t JOIN taskq.attempts AS a ON a.task_id = t.id
		 WHERE t.id IN ('e1', 'e2', 'x1')}),
	'e1:pending:1:expired,e2:aborted:1:expired,x1:aborted:1:cancelled',
	'requeued or aborted, their attempts end expired; the cancelled one cancelled');
$node->safe_psql('postgres', q{
	SELECT taskq.return_task('e1', (SELECT token FROM tok WHERE id = 'e1'), 'late', 'completed');
});
is( $node->safe_psql('postgres',
		"SELECT outcome || ':' || status FROM taskq.task_attempts('e1')"),
	'completed:late', 'the late owner\'s return ends the expired attempt as returned');

# --- the worker's retention -----------------------------------------------------
$node->safe_psql('postgres', q{
	SELECT taskq.return_task('r1', (SELECT token FROM tok WHERE id = 'r1'), NULL, 'completed');
	UPDATE taskq.tasks SET finished_at = now() - interval '2 hours' WHERE id IN ('r1', 'e2');
});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE id IN ('r1', 'e2')"),
	'the worker deletes the finished tasks past retention');
is( $node->safe_psql('postgres', q{
		SELECT string_agg(DISTINCT task_id, ',' ORDER BY task_id) FROM taskq.attempts}),
	'e1,x1', 'and their attempts with them');

$node->stop;
done_testing();
