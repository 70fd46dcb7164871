# Child runs under kill -9.  Parents (machine crash_parent) wait in a child
# state for their child (machine crash_kid, one final state).  A worker ends
# the children one by one, each in its own committed transaction, and says
# "ack" only after the commit; the postmaster is killed with SIGKILL in the
# middle.  After the restart, for every parent: its child succeeded exactly
# when the parent moved on (one transaction: never one without the other),
# the parent moved once (one task of its next state, the child's outcome
# in its context), and every acknowledged child is among the moved.  Then
# the rest are driven to their end, with the same checks.
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

my $parents = 300;

my $node = taskq_node('childcrash', conf => "taskq.worker_naptime = '200ms'\n");
$node->safe_psql('postgres', qq{
SELECT taskq.define_machine('crash_kid', jsonb_build_object('states', jsonb_build_array(
    jsonb_build_object('name', 'K', 'action', 'crash-k', 'initial', true, 'final', true))));
SELECT taskq.define_machine('crash_parent', jsonb_build_object('states', jsonb_build_array(
    jsonb_build_object('name', 'C', 'action', NULL, 'initial', true,
      'child', jsonb_build_object('machine', 'crash_kid'),
      'transitions', jsonb_build_array(jsonb_build_object('event', 'child_succeeded', 'to', 'Z'))),
    jsonb_build_object('name', 'Z', 'action', 'crash-z', 'final', true))));
SELECT count(taskq.start_machine('crash_parent', 'cp' || i, jsonb_build_object('i', i)))
  FROM generate_series(1, $parents) AS i;

-- End the children one by one: claim a child's step and end it (the child
-- ends, its parent moves), commit, then say so.
CREATE PROCEDURE end_children(p_nap float8)
LANGUAGE plpgsql AS \$\$
DECLARE
    t record;
BEGIN
    LOOP
        SELECT * INTO t FROM taskq.own_tasks('crash-w', 1, ARRAY['crash-k'], '1 hour');
        EXIT WHEN t.id IS NULL;
        PERFORM taskq.transition(t.id, t.token, NULL);
        COMMIT;
        RAISE NOTICE 'ack %', t.id;
        PERFORM pg_sleep(p_nap);
    END LOOP;
END \$\$;
});

is( $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.runs WHERE parent IS NOT NULL AND status = 'running'"),
	$parents, "every parent started its child");

# The invariants of parents and children; $label says when.
sub check_parents
{
	my ($label) = @_;
	is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.runs AS p JOIN taskq.runs AS c ON c.parent = p.id
 WHERE p.definition = 'crash_parent'
   AND (c.status = 'succeeded') IS DISTINCT FROM (p.state = 'Z')}),
		'0', "$label: a child succeeded exactly when its parent moved on");
	is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.runs AS p
 WHERE p.definition = 'crash_parent' AND p.state = 'Z'
   AND (p.context->'child'->>'run' IS DISTINCT FROM
          (SELECT c.id FROM taskq.runs AS c WHERE c.parent = p.id)
        OR p.context->'child'->>'status' IS DISTINCT FROM 'succeeded'
        OR (SELECT count(*) FROM taskq.tasks AS t
             WHERE t.workflow = p.id AND t.action = 'crash-z') <> 1)}),
		'0', "$label: each parent that moved did so once, with its child's outcome");
	is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.runs WHERE definition = 'crash_parent' AND status <> 'running'}),
		'0', "$label: every parent is running");
}

# SIGKILL while the worker ends children
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[ 'psql', '-X', '-q', '-d', $node->connstr('postgres'), '-c', 'CALL end_children(0.01)' ],
	'>', \$out, '2>', \$err);
my $until = time + 60;
while (time < $until && (() = $err =~ /ack /g) < 60)
{
	$h->pump_nb;
	usleep(10_000);
}
my $left = kill9_and_wait($node);
is($left, 0, 'every server process left after the postmaster\'s SIGKILL');
$h->finish;
my @acked = $err =~ /NOTICE:  ack (\S+)/g;
cmp_ok(scalar @acked, '>=', 60, scalar(@acked) . ' children were ended and acknowledged before the SIGKILL');
$node->start;

my $moved = $node->safe_psql('postgres',
	"SELECT count(*) FROM taskq.runs WHERE definition = 'crash_parent' AND state = 'Z'");
cmp_ok($moved, '<', $parents, "the SIGKILL came in the middle ($moved of $parents parents moved)");
check_parents('after the restart');
my $acked = "'{" . join(',', @acked) . "}'::text[]";
my $lost = $node->safe_psql('postgres',
	"SELECT count(*) FROM taskq.tasks WHERE id = ANY($acked) AND status_code <> 'completed'");
is($lost, '0', 'every acknowledged child step is completed');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.runs AS p WHERE p.state = 'Z' AND p.context->'child'->>'run' || '/1' = ANY($acked)"),
	scalar @acked, 'the parent of every acknowledged child moved on');

# The rest: the lease the crash left expires, the children end
$node->safe_psql('postgres',
	"UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE status_code = 'in_progress'");
$node->safe_psql('postgres', 'CALL end_children(0)');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.runs WHERE definition = 'crash_parent' AND state = 'Z'"),
	$parents, 'after the drain every parent moved on');
check_parents('after the drain');

$node->stop;
done_testing();
