# taskq's own statements are never compiled with JIT.  They are planned
# without sequential scans (common/plan.c), and a sequential scan that
# stays in such a plan (a table read whole) carries the planner's
# disable_cost, far above jit_above_cost: on a server with JIT, as stock
# PostgreSQL has it, each execution was compiled with LLVM, and the
# background worker spent a tenth of a core on it while idle.  With
# jit_dump_bitcode on, every compilation leaves a .bc file in the data
# directory: a user's statement costed above jit_above_cost leaves one
# (JIT works here), the worker's iterations leave none, nor do a
# session's taskq calls made while the worker goes on.  (From 18 on, the
# planner counts disabled nodes apart from the cost, so such a plan no
# longer reaches jit_above_cost; the worker's statements are still checked,
# and the user's statement that proves JIT works sets jit_above_cost = 0,
# which compiles it on every version.)
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;

my $node = taskq_node('nojit',
	conf => "jit = on\njit_dump_bitcode = on\ntaskq.retention = '1h'\ntaskq.worker_naptime = '200ms'\n");

if ($node->safe_psql('postgres', 'SELECT pg_jit_available()') ne 't')
{
	plan skip_all => 'this server has no JIT provider';
}

my $datadir = $node->data_dir;

sub bitcode_files
{
	opendir(my $dh, $datadir) or die "opendir $datadir: $!";
	my @f = grep { /\.bc$/ } readdir($dh);
	closedir($dh);
	return scalar @f;
}

sub remove_bitcode
{
	opendir(my $dh, $datadir) or die "opendir $datadir: $!";
	unlink map { "$datadir/$_" } grep { /\.bc$/ } readdir($dh);
	closedir($dh);
}

# --- JIT works here: a user's statement costed above jit_above_cost -------
$node->safe_psql('postgres', q{
CREATE TABLE plain (n int);
INSERT INTO plain SELECT generate_series(1, 100);
SET jit_above_cost = 0;
SELECT sum(n) FROM plain;
});
ok(bitcode_files() > 0, 'a user statement planned above jit_above_cost is compiled (a .bc file)');
remove_bitcode();
is(bitcode_files(), 0, 'the .bc files are removed');

# --- the worker: several iterations (a finished task past retention goes) --
$node->safe_psql('postgres', json_insert_sql({ id => 'old', action => 'r' }));
wait_for_worker($node, 'postgres') or die 'no taskq worker';
$node->safe_psql('postgres', q{
SELECT taskq.return_task(id, token, 'x', 'completed') FROM taskq.own_tasks('w', 1, '{r}');
UPDATE taskq.tasks SET finished_at = now() - interval '2 hours' WHERE id = 'old';
});
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM taskq.tasks WHERE id = 'old'"),
	'the worker deleted the task past retention');
# and one more iteration after that one, whatever it found
$node->safe_psql('postgres', json_insert_sql({ id => 'old2', action => 'r' }));
$node->safe_psql('postgres', q{
SELECT taskq.return_task(id, token, 'x', 'completed') FROM taskq.own_tasks('w', 1, '{r}');
UPDATE taskq.tasks SET finished_at = now() - interval '2 hours' WHERE id = 'old2';
});
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM taskq.tasks WHERE id = 'old2'"),
	'and again');
is(bitcode_files(), 0, "the worker's statements were not compiled");
remove_bitcode();

# --- a session's calls: claims, returns, dependencies, a cancelled workflow -
$node->safe_psql('postgres', q{
SELECT taskq.insert_tasks('[{"id": "a", "action": "j", "to_signal_after": ["b"]},
                           {"id": "b", "action": "j"}]');
SELECT taskq.return_task(id, token, 'x', 'completed') FROM taskq.own_tasks('s', 1, '{j}');
SELECT taskq.return_task(id, token, 'x', 'completed') FROM taskq.own_tasks('s', 1, '{j}');
SELECT taskq.cancel_workflow('wf');
SELECT taskq.enqueue('j', NULL, 'c', workflow => 'wf');
SELECT taskq.enqueue_many('j', ARRAY['{}', '{}']::jsonb[]);
SELECT count(*) FROM taskq.own_tasks('s', 5, '{j}', '1 minute');
SELECT taskq.purge_finished('0 s');
});
is(bitcode_files(), 0, 'nothing was compiled while a session claimed, returned, cancelled and enqueued');

$node->stop;
done_testing();
