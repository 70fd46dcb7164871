# taskq.worker_role: the background workers run as a configured role, not
# the bootstrap superuser.  A role that does not exist, or may not log in,
# starts no worker (the launcher warns once); a database the role may not
# connect to gets none.  Running as a member of taskq_admin, the worker
# expires leases, deletes finished tasks past retention and sends the
# notifications, whose payload is the action name only.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $node = taskq_node('role', no_extension => 1,
	conf => "taskq.worker_role = 'taskq_bg'\ntaskq.worker_naptime = '200ms'\n");
$node->safe_psql('postgres', 'CREATE EXTENSION taskq');

sub worker_roles
{
	return $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(datname || ':' || usename, ',' ORDER BY datname), '')"
		  . " FROM pg_stat_activity WHERE backend_type = 'taskq worker'");
}

# Wait for a pattern in the server log after $offset (the launcher scans
# every 10 s, and at once when a commit notes ready work).
sub wait_for_log
{
	my ($re, $offset, $timeout) = @_;
	my $until = time + ($timeout // 30);
	while (time < $until)
	{
		return 1 if $node->log_contains($re, $offset);
		usleep(100_000);
	}
	return 0;
}

# --- the role does not exist: no worker ----------------------------------
my $offset = 0;
$node->safe_psql('postgres', json_insert_sql({ id => 'r1', action => 'alpha' }));
ok(wait_for_log(qr/role "taskq_bg" named by taskq.worker_role does not exist/, $offset),
	'the launcher warns that the role does not exist');
is(worker_roles(), '', 'and starts no worker');

# --- a role that may not log in: no worker -------------------------------
$offset = -s $node->logfile;
$node->safe_psql('postgres', 'CREATE ROLE taskq_bg NOLOGIN IN ROLE taskq_admin');
$node->safe_psql('postgres', json_insert_sql({ id => 'r2', action => 'alpha' }));
ok(wait_for_log(qr/role "taskq_bg" named by taskq.worker_role is not permitted to log in/, $offset),
	'the launcher warns that the role may not log in');
is(worker_roles(), '', 'and starts no worker');

# --- LOGIN: the worker runs as taskq_bg ----------------------------------
$node->safe_psql('postgres', 'ALTER ROLE taskq_bg LOGIN');
$node->safe_psql('postgres', json_insert_sql({ id => 'r3', action => 'alpha' }));
ok(defined wait_for_worker($node, 'postgres', 30), 'a worker starts once the role may log in');
is(worker_roles(), 'postgres:taskq_bg', 'it runs as taskq_bg');
is($node->safe_psql('postgres', "SELECT rolsuper FROM pg_roles WHERE rolname = 'taskq_bg'"),
	'f', 'which is not a superuser');

# It expires a lease (back-dated) with taskq_admin's privileges only.
$node->safe_psql('postgres',
	"SELECT count(*) FROM taskq.own_tasks('gone', 1, '{alpha}', '1 hour')");
$node->safe_psql('postgres',
	"UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE status_code = 'in_progress'");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE status_code = 'in_progress'"),
	'it expires a lease');

# It deletes finished tasks past retention.
$node->safe_psql('postgres', q{
SELECT taskq.return_task(id, token, NULL, 'completed') FROM taskq.own_tasks('w', 1, '{alpha}');
UPDATE taskq.tasks SET finished_at = now() - interval '30 days' WHERE status_code = 'completed';
SELECT taskq.insert_tasks('[{"id": "wake", "action": "beta"}]');
});
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE status_code = 'completed'"),
	'it deletes finished tasks past retention');

# It sends the notifications: the payload is the action, nothing else.
my $l = listen_session($node);
$node->safe_psql('postgres',
	"SELECT taskq.insert_tasks('[{\"id\": \"secret-id-42\", \"action\": \"gamma\", \"body\": {\"password\": \"hunter2\"}}]')");
my ($found, $took, @seen) = wait_for_notification($l, 'gamma', 30);
ok($found, 'a listener is told about new work by the worker running as taskq_bg');
is(join(',', grep { /secret|hunter|password/ } @seen), '', 'no id or body in any payload');
$l->quit;

ok(!$node->log_contains(qr/taskq worker.*(FATAL|ERROR)|permission denied/), 'the worker logged no error');

# --- a database the role may not connect to gets no worker ---------------
# (Revoked before the extension exists: a worker the launcher may have
# started meanwhile found no extension and left.)
$node->safe_psql('postgres', 'CREATE DATABASE closed');
$node->safe_psql('postgres', 'REVOKE CONNECT ON DATABASE closed FROM PUBLIC');
$node->safe_psql('closed', 'CREATE EXTENSION taskq');
$offset = -s $node->logfile;
$node->safe_psql('closed', json_insert_sql({ id => 'c1', action => 'alpha' }));
# The commit woke the launcher; give it a scan.
sleep 2;
is(worker_roles(), 'postgres:taskq_bg', 'no worker for a database the role may not connect to');
ok(!$node->log_contains(qr/FATAL/, $offset), 'and no failed connection attempt');

$node->stop;
done_testing();
