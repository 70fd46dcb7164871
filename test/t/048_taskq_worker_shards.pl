# taskq-worker on several shards: --dbname given once per shard starts a
# worker process per shard under a supervisor; tasks on both shards are
# done; while one shard refuses connections (ALLOW_CONNECTIONS false, its
# sessions terminated) the other keeps being served, and once it is allowed
# again the first is served again; a shard that turns read-only (25006, as
# after a failover) is left with backoff while the other is served, and
# served again once writable; --shards-from-proxy reads the partitions from
# a proxy database's taskq_proxy.partitions() (the extension's, or a plain SQL function
# with the same signature); SIGTERM to the supervisor stops every shard's
# process (exit 0); a return whose connection was terminated while it
# waited is made again after the reconnection.  Usage errors exit 2.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $bin = taskq_worker_bin();

# --- usage -------------------------------------------------------------------
system("\"$bin\" -d dbname=a -d dbname=a --run a=true 2>/dev/null");
is($? >> 8, 2, 'a shard given twice is a usage error');
system("\"$bin\" -d dbname=a -d dbname=b --shards-from-proxy --run a=true 2>/dev/null");
is($? >> 8, 2, '--shards-from-proxy with two --dbname is a usage error');
like(`"$bin" --help`, qr/--shards-from-proxy/, '--help lists --shards-from-proxy');

my $node = taskq_node('shards');
my $dir = PostgreSQL::Test::Utils::tempdir();
for my $s (qw(s0 s1))
{
	$node->safe_psql('postgres', "CREATE DATABASE $s");
	$node->safe_psql($s, 'CREATE EXTENSION taskq');
}
my %conn = map { $_ => $node->connstr($_) } qw(s0 s1);

open(my $sf, '>', "$dir/child.sh") or die;
print $sf <<"EOF";
#!/bin/sh
echo "done \$TASKQ_ID" >>'$dir/done'
exit 0
EOF
close $sf;
chmod 0755, "$dir/child.sh";

sub insert
{
	my ($db, @ids) = @_;
	$node->safe_psql($db,
		'SET default_transaction_read_only = off; '
		  . "SELECT taskq.insert_tasks('["
		  . join(',', map { "{\"id\": \"$_\", \"action\": \"w\"}" } @ids) . "]')");
}

sub completed
{
	my ($db, @ids) = @_;
	my $list = join(',', map { "'$_'" } @ids);
	return $node->safe_psql($db,
		"SELECT count(*) FROM taskq.tasks WHERE id IN ($list) AND status_code = 'completed'")
	  == @ids;
}

sub wait_until
{
	my ($cond, $timeout) = @_;
	my $t0 = time;
	while (time - $t0 < ($timeout // 30))
	{
		return 1 if $cond->();
		usleep(100_000);
	}
	return 0;
}

sub terminate_sessions
{
	my ($db) = @_;
	$node->safe_psql('postgres',
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '$db' AND pid <> pg_backend_pid()");
}

my @common = ('--concurrency', '2', '--poll', '1s', '--max-backoff', '1s', '--lease', '10s',
	'--run', "w=$dir/child.sh");

# --- two shards by --dbname ----------------------------------------------------
my $log = "$dir/worker.log";
my $w = spawn_logged($log, $bin, '-d', $conn{s0}, '-d', $conn{s1}, @common);
insert('s0', map { "a-$_" } 1 .. 5);
insert('s1', map { "b-$_" } 1 .. 5);
ok(wait_until(sub { completed('s0', map { "a-$_" } 1 .. 5) && completed('s1', map { "b-$_" } 1 .. 5) }),
	'tasks on both shards are done');
like(slurp($log), qr/ shard=0 .*outcome=completed/, 'shard 0\'s process logs with shard=0');
like(slurp($log), qr/ shard=1 .*outcome=completed/, 'shard 1\'s process logs with shard=1');
is( $node->safe_psql('s0', "SELECT count(*) FROM taskq.workers"),
	'1', 'each shard\'s process lists itself in its shard\'s taskq.workers');

# shard 0 refuses connections: shard 1 is served meanwhile
$node->safe_psql('postgres', 'ALTER DATABASE s0 ALLOW_CONNECTIONS false');
terminate_sessions('s0');
ok( wait_until(sub { slurp($log) =~ /shard=0 .*(?:cannot connect|connection lost)/ }, 10),
	'shard 0\'s process notices its database is gone');
my $t0 = time;
insert('s1', map { "b2-$_" } 1 .. 5);
ok(wait_until(sub { completed('s1', map { "b2-$_" } 1 .. 5) }, 10),
	'shard 1 is served while shard 0 refuses connections');
note sprintf('in %.1f s', time - $t0);
ok( wait_until(sub { my $n = () = slurp($log) =~ /shard=0 [^\n]*cannot connect/g; $n >= 2 }, 10),
	'shard 0 is tried again (with backoff)');
ok(kill(0, $w), 'the worker runs on');

$node->safe_psql('postgres', 'ALTER DATABASE s0 ALLOW_CONNECTIONS true');
insert('s0', map { "a2-$_" } 1 .. 5);
ok(wait_until(sub { completed('s0', map { "a2-$_" } 1 .. 5) }, 20),
	'after it allows connections again, shard 0 is served again');

# shard 1 turns read-only (as a demoted primary): left with backoff, shard 0 served
$node->safe_psql('postgres', 'ALTER DATABASE s1 SET default_transaction_read_only = on');
terminate_sessions('s1');
insert('s1', 'b3-1');
ok( wait_until(sub { slurp($log) =~ /shard=1 [^\n]*25006/ }, 15),
	'shard 1\'s claims fail with 25006 (read-only)');
insert('s0', 'a3-1');
ok(wait_until(sub { completed('s0', 'a3-1') }, 10), 'shard 0 is served meanwhile');
ok(!completed('s1', 'b3-1'), 'the read-only shard\'s task is not done');
$node->safe_psql('postgres', 'ALTER DATABASE s1 RESET default_transaction_read_only');
ok(wait_until(sub { completed('s1', 'b3-1') }, 20),
	'once writable again (a new connection), shard 1 is served again');

my @shard_pids = map { $node->safe_psql($_, 'SELECT pid FROM taskq.workers') } qw(s0 s1);
is(scalar(grep { /^\d+$/ && $_ != $w } @shard_pids), 2, 'a process of its own for each shard');
my ($rc, $took) = stop_process($w, 20);
is($rc, 0, sprintf('SIGTERM to the supervisor: every shard process stops, exit 0 (%.1f s)', $took // -1));
is(scalar(grep { kill(0, $_) } @shard_pids), 0, 'no shard process is left');
is($node->safe_psql('s1', "SELECT count(*) FROM taskq.workers"), '0',
	'and they deleted their rows of taskq.workers');

# --- --shards-from-proxy ----------------------------------------------------------
# The proxy database of taskq_proxy with the two shards as its partitions;
# where PL/Proxy is not installed, a stand-in: partitions() with its signature.
$node->safe_psql('postgres', 'CREATE DATABASE proxy');
my %lit = map { $_ => $conn{$_} =~ s/'/''/gr } keys %conn;
my $real_proxy = $node->safe_psql('postgres',
	"SELECT count(*) FROM pg_available_extensions WHERE name IN ('plproxy', 'taskq_proxy')") eq '2';
$node->safe_psql('proxy', $real_proxy ? <<"REAL" : <<"STANDIN");
CREATE EXTENSION plproxy;
CREATE EXTENSION taskq_proxy;
CREATE SERVER taskq FOREIGN DATA WRAPPER plproxy OPTIONS (p0 '$lit{s0}', p1 '$lit{s1}');
REAL
CREATE SCHEMA taskq_proxy;
CREATE FUNCTION taskq_proxy.partitions() RETURNS TABLE (partition int, connstr text)
LANGUAGE sql AS \$\$ VALUES (1, '$lit{s1}'), (0, '$lit{s0}') \$\$;
STANDIN
my $plog = "$dir/proxy.log";
$w = spawn_logged($plog, $bin, '-d', $node->connstr('proxy'), '--shards-from-proxy', @common);
insert('s0', map { "pa-$_" } 1 .. 3);
insert('s1', map { "pb-$_" } 1 .. 3);
ok(wait_until(sub { completed('s0', map { "pa-$_" } 1 .. 3) && completed('s1', map { "pb-$_" } 1 .. 3) }),
	'--shards-from-proxy: tasks on both partitions are done');
like(slurp($plog), qr/2 shard\(s\)/, 'two partitions read from taskq_proxy.partitions()');
like(slurp($plog), qr/ shard=1 .*id=pb-/, 'partition 1\'s process works on shard s1');
($rc, $took) = stop_process($w, 20);
is($rc, 0, 'and it stops with exit 0');

# a proxy without partitions: tried again with backoff, SIGTERM ends it
$node->safe_psql('proxy', $real_proxy ? 'DROP SERVER taskq CASCADE' : 'DROP SCHEMA taskq_proxy CASCADE');
my $elog = "$dir/empty.log";
$w = spawn_logged($elog, $bin, '-d', $node->connstr('proxy'), '--shards-from-proxy', @common);
ok(wait_until(sub { slurp($elog) =~ /reading the partitions again/ }, 10),
	'a proxy that cannot answer is asked again');
($rc) = stop_process($w, 10);
is($rc, 0, 'SIGTERM while waiting for the proxy: exit 0');

# --- a return lost with its connection is made again (same token) ---------------
# The child waits for the file go; meanwhile a session locks the task's row,
# so that the return blocks; the worker's sessions are terminated while it
# waits: the return is made again on the new connection once the lock goes.
open($sf, '>', "$dir/held.sh") or die;
print $sf <<"EOF";
#!/bin/sh
touch '$dir/held-started'
while [ ! -f '$dir/go' ]; do sleep 0.05; done
echo "done \$TASKQ_ID" >>'$dir/done'
echo held >&2
exit 0
EOF
close $sf;
chmod 0755, "$dir/held.sh";
my $hlog = "$dir/held.log";
$w = spawn_logged($hlog, $bin, '-d', $conn{s0}, '-d', $conn{s1}, '--concurrency', '1',
	'--poll', '1s', '--max-backoff', '1s', '--lease', '30s', '--run', "h=$dir/held.sh");
$node->safe_psql('s0', q{SELECT taskq.insert_tasks('[{"id": "h-1", "action": "h"}]')});
ok(wait_until(sub { -f "$dir/held-started" }, 20), 'the child of h-1 runs');
my $holder = $node->background_psql('s0');
my $holder_pid = $holder->query_safe('SELECT pg_backend_pid()');
$holder->query_safe('BEGIN');
$holder->query_safe("SELECT id FROM taskq.tasks WHERE id = 'h-1' FOR UPDATE");
open(my $go, '>', "$dir/go") or die;
close $go;
ok( $node->poll_query_until('s0',
		"SELECT count(*) > 0 FROM pg_stat_activity WHERE datname = 's0' AND pid <> $holder_pid AND wait_event_type = 'Lock'"),
	'its return waits for the row lock');
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 's0' AND pid <> $holder_pid");
ok(wait_until(sub { slurp($hlog) =~ /shard=0 [^\n]*to make again after the reconnection/ }, 10),
	'the worker keeps the return to make it again');
$holder->query_safe('ROLLBACK');
$holder->quit;
ok(wait_until(sub { completed('s0', 'h-1') }, 20), 'h-1 is completed after the reconnection');
is( $node->safe_psql('s0', "SELECT num_tries || '|' || status FROM taskq.tasks WHERE id = 'h-1'"),
	'1|held', 'by the return of its first and only try');
like(slurp($hlog), qr/ task shard=0 id=h-1 action=h try=1 outcome=completed/,
	'logged as completed once');
($rc) = stop_process($w, 20);
is($rc, 0, 'the worker stops with exit 0');

is(scalar(() = slurp("$dir/done") =~ /^done /mg), 29, 'every task ran once');

$node->stop;
done_testing();
