# The postmaster is killed 10 times (SIGKILL and immediate shutdown, in
# turn) while clients enqueue, own and return tasks.  After each restart:
# every acknowledged insert and return is there, no task is both finished
# and leased, and the dependency counters are exact.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $iterations = $ENV{TASKQ_CRASH_ITERATIONS} // 10;    # make crash-loop: more

my $node = taskq_node('crash', conf => "taskq.worker_naptime = '200ms'\n");
$node->safe_psql('postgres', 'CREATE EXTENSION amcheck');
create_held($node, 'postgres', 20);

my %acks;
my $total_ops = 0;
srand(4242);

for my $i (1 .. $iterations)
{
	my $load = start_load($node, "i$i", statements => 4000, producers => 1, workers => 3);

	# Let the load run a while, then crash.
	my $run = 0.8 + rand(1.2);
	usleep(int($run * 1_000_000));

	my $how = $i % 2 ? 'SIGKILL of the postmaster' : 'immediate shutdown';
	if ($i % 2)
	{
		my $left = kill9_and_wait($node);
		is($left, 0, "iteration $i: every server process left after the postmaster's SIGKILL");
	}
	else
	{
		$node->stop('immediate');
	}
	my $ops = stop_load($load, \%acks);
	$total_ops += $ops;
	cmp_ok($ops, '>', 20, "iteration $i: the clients got $ops operations acknowledged before the $how");

	my $started = 0;
	for my $try (1 .. 5)
	{
		last if ($started = $node->start(fail_ok => 1));
		sleep 1;
	}
	ok($started, "iteration $i: the server restarts after the $how");

	check_acks($node, \%acks, "iteration $i");
	check_invariants($node, "iteration $i");
}

# The indexes agree with the heap after all those crashes.
my $idx = $node->safe_psql('postgres', q{
SELECT string_agg(c.relname || '=' || ok, ',' ORDER BY c.relname)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid,
       LATERAL (SELECT bt_index_check(c.oid, true)::text IS NOT NULL AS ok) x
 WHERE i.indrelid = 'taskq.tasks'::regclass
   AND c.relam = (SELECT a.oid FROM pg_am AS a WHERE a.amname = 'btree')});
unlike($idx, qr/=f/, "the btree indexes of taskq.tasks pass amcheck ($idx)");

# Every task can still be driven to its end: expire what is left, then
# the worker requeues it and the queue drains.
$node->safe_psql('postgres',
	"UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE status_code = 'in_progress'");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE status_code = 'in_progress'"),
	'the worker requeues every lease left behind by the crashes');
my $drained = 0;
for (1 .. 200)
{
	my $n = $node->safe_psql('postgres', q{
SELECT count(*) FROM (
  SELECT taskq.return_task(id, token, 'drained', 'completed')
    FROM taskq.own_tasks('drainer', 2000, '{a,b}', '1 hour')) s});
	$drained += $n;
	last if $n == 0
	  && $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.tasks WHERE action IN ('a','b') AND status_code < 'completed'"
		  . " AND not_before > now()") == 0;
	usleep(100_000) if $n == 0;
}
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.tasks WHERE action IN ('a','b') AND status_code < 'completed'"),
	'0', "every worked task reaches an end ($drained drained)");
check_invariants($node, 'after draining');
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.tasks WHERE action = 'held' AND num_signals <> 0"),
	'0', 'the held tasks were signalled by every one of their predecessors');
note "acknowledged operations over all iterations: $total_ops";

$node->stop;
done_testing();
