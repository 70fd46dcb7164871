# taskq_proxy on one server: four shard databases (s0..s3, each with
# CREATE EXTENSION taskq) and a proxy database (plproxy + taskq_proxy)
# whose partitions connect back over the socket.  Proves:
# - the proxy has every function of a shard (name, arguments, who may call
#   it) and every view with a column partition: a new function cannot be
#   forgotten;
# - routing: each task lives on the partition of its id's route, as
#   taskq_proxy.partition_of and a producer's own hashtext(route) & 3 say,
#   for each kind of call (enqueue, enqueue_many, batches, shapes, jobs,
#   runs, schedules), and calls that name a task reach it;
# - refusals: edges across routes and batches spanning routes (0A000), a
#   workflow of another route (22023), a waiting claim (0A000);
# - claims take from several partitions, and survive a partition refusing
#   connections with a WARNING and nothing lost; a routed call to it is
#   08006 naming it, and so is a view;
# - machines and sagas run end to end through the proxy; definitions are
#   broadcast under one version and check_definitions() sees a difference;
# - errors of a shard arrive as the shard raised them.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;

my $node = taskq_node('proxy');
my $have = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_available_extensions WHERE name IN ('plproxy', 'taskq_proxy')");
plan skip_all => 'plproxy or taskq_proxy is not installed' if $have ne '2';

my ($host, $port) = ($node->host, $node->port);
for my $s (0 .. 3)
{
	$node->safe_psql('postgres', "CREATE DATABASE s$s");
	$node->safe_psql("s$s", 'CREATE EXTENSION taskq');
}
$node->safe_psql('postgres', 'CREATE DATABASE proxy');
my $parts = join(', ', map { "p$_ 'host=$host port=$port dbname=s$_'" } 0 .. 3);
$node->safe_psql('proxy', qq{
	CREATE EXTENSION plproxy;
	CREATE EXTENSION taskq_proxy;
	CREATE SERVER taskq FOREIGN DATA WRAPPER plproxy OPTIONS ($parts);
	CREATE USER MAPPING FOR PUBLIC SERVER taskq;
	GRANT USAGE ON FOREIGN SERVER taskq TO taskq_producer, taskq_worker, taskq_monitor, taskq_admin;
	CREATE ROLE prod LOGIN IN ROLE taskq_producer;
	CREATE ROLE wrk LOGIN IN ROLE taskq_worker;
	CREATE ROLE mon LOGIN IN ROLE taskq_monitor;
	CREATE ROLE adm LOGIN IN ROLE taskq_admin;
});

sub proxy { return $node->safe_psql('proxy', $_[0]); }
sub shard { return $node->safe_psql("s$_[0]", $_[1]); }
sub err { my ($sql, $db) = @_; return (sqlstate_of($node, $sql, $db // 'proxy'))[0]; }
# Where a task is: the shards that hold it.
sub where_n
{
	my ($id) = @_;
	return join(',', grep { shard($_, "SELECT count(*) FROM taskq.tasks WHERE id = '$id'") ne '0' } 0 .. 3);
}
sub part_of { return proxy("SELECT taskq_proxy.partition_of('$_[0]')"); }

# --- the proxy covers every function and view of a shard ------------------
my $fn_sql = q{
	SELECT p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') '
	       || coalesce((SELECT string_agg(r.rolname, ',' ORDER BY r.rolname)
	                      FROM aclexplode(p.proacl) AS a JOIN pg_roles AS r ON r.oid = a.grantee
	                     WHERE a.privilege_type = 'EXECUTE'), '')
	  FROM pg_proc AS p
	 WHERE p.pronamespace = 'taskq'::regnamespace AND p.proname !~ '^_'
	   AND p.prorettype <> 'trigger'::regtype
	 ORDER BY 1};
my $shard_fns = shard(0, $fn_sql);
my $proxy_fns = proxy($fn_sql);
ok(length($shard_fns) > 1000, 'a shard lists its functions');
is($proxy_fns, $shard_fns,
	'the proxy has every function of a shard, with the same arguments and the same roles');

my $rel_sql = q{
	SELECT c.relname || ': ' || string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
	       || ' [' || coalesce((SELECT string_agg(r.rolname, ',' ORDER BY r.rolname)
	                              FROM aclexplode(c.relacl) AS x JOIN pg_roles AS r ON r.oid = x.grantee
	                             WHERE x.privilege_type = 'SELECT'), '') || ']'
	  FROM pg_class AS c JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	 WHERE c.relnamespace = 'taskq'::regnamespace AND a.attname <> 'partition'
	   AND (c.relkind = 'v' OR c.relname IN ('attempts', 'run_timers', 'saga_steps', 'runs', 'tasks'))
	 GROUP BY c.oid, c.relname ORDER BY c.relname};
is(proxy($rel_sql), shard(0, $rel_sql),
	'the proxy has every view of a shard (and the tables monitors read), with the same columns and roles');
is(proxy(q{SELECT count(*) FROM pg_class WHERE relnamespace = 'taskq'::regnamespace AND relkind = 'v'
             AND NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = pg_class.oid AND attname = 'partition' AND attnum = 1)}),
	'0', 'each view on the proxy starts with the column partition');

# --- routing ------------------------------------------------------------------
my @ids = map { ("r$_/a", "r$_/b", "solo$_") } 1 .. 12;
my $idlist = join(',', map { "'$_'" } @ids);
proxy(join('', map { "SELECT taskq.enqueue('e', NULL, '$_');" } @ids));
# id => partition, as the proxy computes it, as a producer does
# (hashtext of the route, & 3), and where the task is
my %proxy_p = split /[|\n]/, proxy("SELECT i, taskq_proxy.partition_of(i) FROM unnest(ARRAY[$idlist]) AS i");
my %mine_p = split /[|\n]/, shard(0, "SELECT i, hashtext(split_part(i, '/', 1)) & 3 FROM unnest(ARRAY[$idlist]) AS i");
my %at;
for my $s (0 .. 3)
{
	$at{$_} .= $s for split /\n/, shard($s, "SELECT id FROM taskq.tasks WHERE id = ANY (ARRAY[$idlist])");
}
is(scalar(grep { defined $at{$_} && $at{$_} eq $proxy_p{$_} && $mine_p{$_} eq $proxy_p{$_} } @ids), scalar(@ids),
	'each task is on the partition of its route, which a producer computes as hashtext(route) & 3');
is(join(',', sort { $a <=> $b } keys %{ { map { $_ => 1 } values %at } }), '0,1,2,3',
	'the routes spread over all four partitions');
is(where_n('r1/a'), where_n('r1/b'), 'ids of one route share a partition');

my $made = proxy("SELECT taskq.enqueue('e', NULL, NULL, workflow => 'wf7')");
like($made, qr{^wf7/[0-9a-f-]{36}$}, 'a made id of a task with a workflow is under the workflow\'s route');
is(where_n($made), part_of('wf7'), 'and lives on its partition');

my ($ret, $out, $stderr) = $node->psql('proxy',
	q{SELECT array_to_string(taskq.enqueue_many('m', ARRAY['{"n":1}','{"n":2}','{"n":3}','{"n":4}']::jsonb[],
	                                              ARRAY['m1/x', NULL, 'm3/x', 'm4/x']), ',')});
my @many = split /,/, $out;
is(scalar(@many), 4, 'enqueue_many returns an id per body');
is("$many[0],$many[2],$many[3]", 'm1/x,m3/x,m4/x', 'in argument order, given ids kept');
like($stderr, qr/NOTICE:  enqueue_many committed on partitions/, 'and names the partitions it committed');
is(scalar(grep { where_n($_) eq part_of($_) } @many), 4, 'each on its own partition');
is(proxy("SELECT count(*) FROM unnest(taskq.enqueue_many('m', ARRAY['{}']::jsonb[], ARRAY['m1/x']))"), '1',
	'a repeat of enqueue_many with the same ids completes it (inserted if absent)');

proxy(q{SELECT taskq.insert_tasks('[{"id": "b1/1", "action": "b"}, {"id": "b1/2", "action": "b", "to_signal_after": ["b1/1"]}]')});
is(where_n('b1/2'), part_of('b1'), 'insert_tasks: a batch of one route on its partition');
is(shard(part_of('b1'), "SELECT num_signals FROM taskq.tasks WHERE id = 'b1/1'"), '1', 'with its edges');
is(proxy(q{SELECT string_agg(id || ':' || inserted, ',' ORDER BY id)
             FROM taskq.insert_tasks_if_absent('[{"id": "b1/1", "action": "b"}, {"id": "b1/3", "action": "b"}]')}),
	'b1/1:false,b1/3:true', 'insert_tasks_if_absent through the proxy');
proxy(q{SELECT taskq.chain('[{"id": "c1/1", "action": "c"}, {"id": "c1/2", "action": "c"}]');
        SELECT taskq."group"('[{"id": "c1/3", "action": "c"}]', ARRAY['c1/2']);
        SELECT taskq.chord('[{"id": "c1/4", "action": "c"}]', '{"id": "c1/j", "action": "c", "spontaneous": true}', ARRAY['c1/3']);
        SELECT taskq.insert_tasks('[{"id": "c1/r", "action": "c"}]');
        SELECT taskq.replace_tasks('[{"id": "c1/r", "action": "c", "body": {"v": 2}}]')});
is(shard(part_of('c1'), "SELECT string_agg(id || ':' || num_signals, ',' ORDER BY id) FROM taskq.tasks WHERE id LIKE 'c1/%'"),
	'c1/1:0,c1/2:1,c1/3:1,c1/4:1,c1/j:1,c1/r:0', 'chain, group and chord on one partition, with their edges');
is(shard(part_of('c1'), "SELECT body FROM taskq.tasks WHERE id = 'c1/r'"), '{"v": 2}', 'replace_tasks on it too');
proxy(q{SELECT taskq.create_job('job9', '[{"id": "job9/first", "action": "j"}]')});
is(where_n('job9/first'), part_of('job9'), 'a job\'s tasks on the job\'s partition');
is(proxy("SELECT state FROM taskq.job_state('job9')"), 'waiting', 'job_state through the proxy');
proxy(q{SELECT taskq.add_dependencies(ARRAY['d1/a', 'd2/a'], ARRAY['d1/b', 'd2/b'])
          FROM (SELECT taskq.insert_tasks('[{"id": "d1/a", "action": "d"}, {"id": "d1/b", "action": "d"}]'),
                       taskq.insert_tasks('[{"id": "d2/a", "action": "d"}, {"id": "d2/b", "action": "d"}]')) AS x});
is(shard(part_of('d2'), "SELECT num_signals FROM taskq.tasks WHERE id = 'd2/b'"), '1',
	'add_dependencies split per partition, each pair on its route\'s');

# --- refusals -------------------------------------------------------------------
is(err(q{SELECT taskq.insert_tasks('[{"id": "x1/a", "action": "x"}, {"id": "x2/a", "action": "x"}]')}),
	'0A000', 'a batch spanning routes: 0A000');
is(err(q{SELECT taskq.insert_tasks('[{"id": "x1/a", "action": "x", "to_signal_after": ["x2/b"]}]')}),
	'0A000', 'an edge across routes in a batch: 0A000');
is(err(q{SELECT taskq.chain('[{"id": "x1/a", "action": "x"}]', ARRAY['r1/a'])}), '0A000',
	'after_ids of another route: 0A000');
is(err(q{SELECT taskq.add_dependencies(ARRAY['r1/a'], ARRAY['r2/a'])}), '0A000',
	'add_dependencies across routes: 0A000');
is(err(q{SELECT taskq.enqueue('x', NULL, 'x1/a', workflow => 'x2')}), '22023',
	'a task whose workflow has another route: 22023');
is(err(q{SELECT taskq.create_job('x3', '[{"id": "x4/a", "action": "x"}]')}), '22023',
	'a job task under another route: 22023');
is(err(q{SELECT * FROM taskq.own_tasks('w', 1, NULL, NULL, '1s')}), '0A000',
	'a waiting claim through the proxy: 0A000');
is(where_n('x1/a'), '', 'and nothing of the refused calls was inserted');
is(err(q{SELECT taskq.return_task('r1/a', gen_random_uuid(), 'ok', 'completed')}), 'TQ001',
	'a shard\'s error arrives with its SQLSTATE');
my (undef, undef, $msg) = $node->psql('proxy', q{SELECT taskq.return_task('r1/a', gen_random_uuid(), 'ok', 'completed')});
like($msg, qr/ERROR:  invalid performance token for task "r1\/a"\nDETAIL:  The task is no longer owned/,
	'and with its own message and detail');
is(err(q{SELECT taskq.enqueue('e', NULL, 'r1/a')}), '23505', 'a duplicate id: 23505 from its shard');

# --- claims across partitions; one partition refusing connections -----------------
proxy(q{SELECT taskq.cancel_tasks(ARRAY(SELECT id FROM taskq.tasks WHERE status_code = 'pending'))});
my @work = map { "w$_/t" } 1 .. 40;
proxy(q{SELECT taskq.enqueue_many('work', array_fill('{}'::jsonb, ARRAY[40]),
                                  ARRAY(SELECT 'w' || g || '/t' FROM generate_series(1, 40) AS g))});
my $claimed = proxy(q{SELECT count(DISTINCT taskq_proxy.partition_of(id)) FROM taskq.own_tasks('w', 20, ARRAY['work'])});
ok($claimed >= 2, "one claim takes from several partitions ($claimed)");
is(proxy(q{SELECT sum(in_progress) FROM taskq.action_stats WHERE action = 'work'}), '20', 'and holds 20 tasks');

my $down = part_of('w1');
$node->safe_psql('postgres', "ALTER DATABASE s$down ALLOW_CONNECTIONS false");
$node->safe_psql('postgres', "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 's$down'");
my $on_down = scalar(grep { part_of($_) eq $down } @work);
($ret, $out, $stderr) = $node->psql('proxy',
	q{SELECT id FROM taskq.own_tasks('w', 40, ARRAY['work'])});
like($stderr, qr/WARNING:  skipping partition $down of cluster taskq/, 'a claim skips the partition that refuses connections with a WARNING');
my @got = grep { length } split /\n/, $out;
ok(!grep({ part_of($_) eq $down } @got), 'and claims none of its tasks');
is(err(q{SELECT taskq.release_task('w1/t', gen_random_uuid())}), '08006',
	'a call routed to it: 08006');
($ret, $out, $stderr) = $node->psql('proxy', q{SELECT taskq.release_task('w1/t', gen_random_uuid())});
like($stderr, qr/partition $down of cluster taskq cannot be reached/, 'naming the partition');
is(err(q{SELECT * FROM taskq.action_stats}), '08006', 'a view fails with 08006 rather than leave the partition out');
$node->safe_psql('postgres', "ALTER DATABASE s$down ALLOW_CONNECTIONS true");
my $rest = proxy(q{SELECT count(*) FROM taskq.own_tasks('w', 40, ARRAY['work'])});
is(20 + scalar(@got) + $rest, 40, 'back, its tasks are claimed too: 40 claims of 40 tasks, none lost, none twice');

# --- workers: returns, extends, split returns ----------------------------------------
proxy(q{SELECT taskq.enqueue_many('v', array_fill('{}'::jsonb, ARRAY[8]), ARRAY(SELECT 'v' || g || '/t' FROM generate_series(1, 8) AS g))});
my $held = proxy(q{SELECT string_agg(id || ' ' || token, ';') FROM taskq.own_tasks('w', 8, ARRAY['v'])});
my @h = map { [split / /] } split /;/, $held;
is(scalar(@h), 8, 'eight v tasks claimed');
my $ids = join(',', map { "'$_->[0]'" } @h);
my $toks = join(',', map { "'$_->[1]'" } @h);
is(proxy("SELECT count(*) FILTER (WHERE owned) FROM taskq.extend_ownership('w', ARRAY[$ids], ARRAY[$toks]::uuid[], '10 min')"),
	'8', 'extend_ownership split per partition: all owned');
is(proxy(qq{SELECT taskq.return_tasks(ARRAY[$ids], ARRAY[$toks]::uuid[], array_fill('ok'::text, ARRAY[8]),
                                      array_fill('completed'::taskq.status, ARRAY[8]))}),
	'8', 'return_tasks split per partition returns all eight');
is(proxy(qq{SELECT taskq.return_tasks(ARRAY[$ids], ARRAY[$toks]::uuid[], array_fill('ok'::text, ARRAY[8]),
                                      array_fill('completed'::taskq.status, ARRAY[8]))}),
	'8', 'a repeat succeeds (repeated returns are no-ops)');
is(proxy(q{SELECT count(*) FROM taskq.tasks WHERE action = 'v' AND status_code = 'completed'}), '8',
	'taskq.tasks through the proxy: all eight completed');
# return_and_own with ids of several partitions: returned per partition, then a claim
proxy(q{SELECT taskq.enqueue_many('ro', array_fill('{}'::jsonb, ARRAY[8]), ARRAY(SELECT 'ro' || g || '/t' FROM generate_series(1, 8) AS g))});
$held = proxy(q{SELECT string_agg(id || ' ' || token, ';') FROM taskq.own_tasks('w', 4, ARRAY['ro'])});
@h = map { [split / /] } split /;/, $held;
ok((grep { my $x = $_; grep { part_of($_->[0]) ne part_of($x->[0]) } @h } @h) > 0,
	'four ro tasks claimed from more than one partition');
$ids = join(',', map { "'$_->[0]'" } @h);
$toks = join(',', map { "'$_->[1]'" } @h);
is(proxy(qq{SELECT count(*) FROM taskq.return_and_own(ARRAY[$ids], ARRAY[$toks]::uuid[], NULL,
                                                       array_fill('completed'::taskq.status, ARRAY[4]), 'w', 4, ARRAY['ro'])}),
	'4', 'return_and_own with ids of several partitions claims the other four');
is(proxy(q{SELECT count(*) FILTER (WHERE status_code = 'completed') || ' ' || count(*) FILTER (WHERE status_code = 'in_progress')
             FROM taskq.tasks WHERE action = 'ro'}), '4 4', 'and returned the first four');

# --- the proxy's own default lease goes with its claims ------------------------------
proxy(q{SELECT taskq.enqueue_many('dl', array_fill('{}'::jsonb, ARRAY[2]), ARRAY['dl1/t', 'dl2/t'])});
is(proxy(q{SET taskq.default_lease = 420;
           SELECT round(extract(epoch FROM action_deadline - now()) / 60) FROM taskq.own_tasks('w', 1, ARRAY['dl'])}),
	'7', "a claim without max_duration takes the proxy session's taskq.default_lease");
is(proxy(q{SET taskq.default_lease = 0;
           SELECT round(extract(epoch FROM action_deadline - now()) / 60) FROM taskq.own_tasks('w', 1, ARRAY['dl'])}),
	'5', "with it 0, the shard's (5 minutes)");

# --- machines and sagas end to end --------------------------------------------------
my $def = q{'{"states": [
	{"name": "Check", "action": "check", "initial": true, "transitions": [{"event": "ok", "to": "Ship"}]},
	{"name": "Ship", "action": "ship", "final": true}]}'};
is(proxy("SELECT taskq.define_machine('order', $def)"), '1', 'define_machine through the proxy: version 1');
is(proxy("SELECT taskq.define_machine('order', $def)"), '1', 'the same definition again: version 1, a no-op');
is(join(',', map { shard($_, "SELECT string_agg(version::text, ',') FROM taskq.definitions WHERE name = 'order'") } 0 .. 3),
	'1,1,1,1', 'every partition holds version 1');
proxy(q{SELECT taskq.define_saga('trip', '{"steps": [{"name": "Hotel", "do": "hotel", "undo": "unhotel"},
                                                      {"name": "Car", "do": "car", "after": ["Hotel"]}]}')});
proxy(join('', map { "SELECT taskq.start_machine('order', 'o$_'); SELECT taskq.start_saga('trip', 't$_');" } 1 .. 6));
for my $round (1 .. 6)
{
	my $tasks = proxy(q{SELECT string_agg(id || ' ' || token || ' ' || action, ';')
	                      FROM taskq.own_tasks('w', 50, ARRAY['check', 'ship', 'hotel', 'car'])});
	last unless $tasks;
	for my $t (split /;/, $tasks)
	{
		my ($id, $tok, $action) = split / /, $t;
		if ($action eq 'check') { proxy("SELECT taskq.transition('$id', '$tok', 'ok')"); }
		elsif ($action eq 'ship') { proxy("SELECT taskq.transition('$id', '$tok', NULL)"); }
		else { proxy("SELECT taskq.return_step('$id', '$tok', 'success', '{\"$action\": 1}')"); }
	}
}
is(proxy(q{SELECT string_agg(kind || ':' || status, ',' ORDER BY kind, status) FROM
             (SELECT kind, status, count(*) FROM taskq.runs GROUP BY 1, 2) AS x}),
	'machine:succeeded,saga:succeeded', 'six machines and six sagas ran to the end through the proxy');
is(scalar(grep { proxy("SELECT partition FROM taskq.runs WHERE id = '$_'") eq part_of($_) } map { ("o$_", "t$_") } 1 .. 6),
	12, 'each run on its id\'s partition');
like(proxy(q{SELECT string_agg(step, ',' ORDER BY seq) FROM taskq.run_steps('t1')}), qr/Hotel.*Car/,
	'run_steps through the proxy');
is(proxy(q{SELECT status FROM taskq.wait_for_run('o1', '1s')}), 'succeeded', 'wait_for_run through the proxy');
like(proxy(q{SELECT taskq.run_graph('o1')}), qr/digraph/, 'run_graph through the proxy');

is(proxy('SELECT count(*) FROM taskq_proxy.check_definitions()'), '0', 'the definitions agree');
shard(2, q{SELECT taskq.define_machine('order', '{"states": [{"name": "A", "action": "a", "initial": true, "final": true}]}')});
is(proxy(q{SELECT name || ' ' || version || ' missing ' || missing_on::text || ' differs ' || differs_on::text
             FROM taskq_proxy.check_definitions()}),
	'order 2 missing {0,1,3} differs {}', 'check_definitions names a version held by one partition only');
is(proxy("SELECT taskq.define_machine('order', $def)"), '1',
	'define_machine of a definition a partition holds reuses its version');

# --- settings, schedules, monitoring ------------------------------------------------
proxy(q{SELECT taskq.set_action_policy('work', max_tries => 3); SELECT taskq.set_concurrency_limit('work', 4)});
is(join(',', map { shard($_, "SELECT max_tries FROM taskq.action_policies WHERE action = 'work'") } 0 .. 3),
	'3,3,3,3', 'set_action_policy is broadcast to every partition');
is(proxy(q{SELECT count(*) FROM taskq.limits WHERE action = 'work' AND max_running = 4}), '4',
	'set_concurrency_limit too: the view shows it per partition');
proxy(q{SELECT taskq.schedule('nightly/db', '0 1 * * *', '{"action": "backup"}')});
is(proxy(q{SELECT partition FROM taskq.schedules WHERE name = 'nightly/db'}), part_of('nightly'),
	'a schedule lives on its name\'s route\'s partition, with the tasks it makes');
is(proxy(q{SELECT taskq.unschedule('nightly/db')}), 't', 'unschedule through the proxy');
like(proxy(q{SELECT taskq.metrics_text()}), qr/^taskq_\w+\{partition="3"/m, 'metrics_text labels each sample with its partition');
is(proxy(q{SELECT count(DISTINCT labels->>'partition') FROM taskq.metrics()}), '4', 'metrics() has all four partitions');

# --- roles: a shard's grants decide, the proxy's match ---------------------------------
is(err("SET ROLE prod; SELECT taskq.enqueue('e', NULL, 'pr/1')"), '', 'a producer enqueues through the proxy');
is(err("SET ROLE prod; SELECT * FROM taskq.own_tasks('w', 1, NULL)"), '42501', 'but may not claim');
is(err("SET ROLE mon; SELECT * FROM taskq.action_stats"), '', 'a monitor reads the views');
is(err("SET ROLE wrk; SELECT * FROM taskq.action_stats"), '42501', 'a worker does not');

done_testing();
