# taskq-worker --result: for the children of a --result action the worker
# reads standard output, and one JSON value printed by a child that exits 0
# is its task's result: an object, an array, a number, a string; the
# result is what wait_for_task returns and what a successor reads with
# predecessor_results (the successor, a --result action too, prints what
# it read as its own result).  Blank output completes without a result;
# output that is not one JSON value, or more than 2 MiB, fails the try
# (pending, the status saying why); a non-zero exit ignores the output; a
# result the server refuses (over 1 MiB as jsonb: 54000) returns the task
# pending with the error as status, neither lost nor left to its lease.  A
# return made one by one (at shutdown) carries its result too.  An action
# without --result still passes its standard output through.  --result
# naming an action without --run is a usage error.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $bin = taskq_worker_bin();

# --- usage ------------------------------------------------------------------
{
	my $err = `"$bin" --result nope --run a=true 2>&1 >/dev/null`;
	is($? >> 8, 2, '--result for an action without --run: usage error (exit 2)');
	like($err, qr/--result names action "nope", which has no --run/, 'naming the action');
	my $help = `"$bin" --help`;
	like($help, qr/-R, --result=ACTION/, '--help lists --result');
}

my $node = taskq_node('results');
my $db = $node->connstr('postgres') . ' application_name=taskq-worker';
my $dir = PostgreSQL::Test::Utils::tempdir();

sub q1 { return $node->safe_psql('postgres', $_[0]); }

my ($psql) = grep { -x $_ } map { "$_/psql" } split /:/, $ENV{PATH} // '';
ok(defined $psql, 'psql is in PATH');
my $connstr = $node->connstr('postgres');

# One script for every action, by task id.
open(my $sf, '>', "$dir/res.sh") or die;
print $sf <<"EOF";
#!/bin/sh
d='$dir'
cat >/dev/null
case \$TASKQ_ID in
obj)   printf '{"a": 1, "b": [true, null], "c": "\\\\u0041\\\\n"}' ;;
arr)   echo ' [1, "two", {"three": 3}] ' ;;
num)   echo 42; echo "counted" >&2 ;;
str)   echo '"hello"' ;;
blank) printf ' \\n\\t\\n'; echo "blank done" >&2 ;;
bad)   echo 'not json'; echo "ignored" >&2 ;;
two)   echo '1 2' ;;
exit75) echo '{"x": 1}'; echo "later" >&2; exit 75 ;;
over)  head -c 3000000 /dev/zero | tr '\\0' x ;;
huge)  printf '"'; head -c 1500000 /dev/zero | tr '\\0' x; printf '"' ;;
succ)  "$psql" -X -At -d "$connstr" -c "SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('id', id, 'result', result) ORDER BY id) FROM taskq.predecessor_results('\$TASKQ_ID', '\$TASKQ_TOKEN')" ;;
late)  touch "\$d/late-started"; while [ ! -f "\$d/late-go" ]; do sleep 0.05; done; echo '{"late": true}' ;;
plain-1) echo '{"passes": "through"}'; echo "plain done" >&2 ;;
esac
exit 0
EOF
close $sf;
chmod 0755, "$dir/res.sh";

my @ids = qw(obj arr num str blank bad two exit75 over huge);
q1(     "SELECT taskq.insert_tasks('["
	  . join(',',
		map { "{\"id\": \"$_\", \"action\": \"res\", \"max_tries\": 3, \"retry\": {\"delay\": \"1 hour\"}"
			  . ($_ eq 'obj' || $_ eq 'arr' ? ', "to_signal_after": ["succ"]' : '') . '}' } @ids)
	  . ',{"id": "succ", "action": "res"}'
	  . ',{"id": "plain-1", "action": "plain"}'
	  . "]')");

my $log = "$dir/worker.log";
my $pid = spawn_logged($log, $bin, '-d', $db, '--actor', 'results', '--concurrency', '2',
	'--poll', '1s', '--run', "res=$dir/res.sh", '--run', "plain=$dir/res.sh", '--result', 'res');

# wait_for_task sees the result once the task completed
is(q1(q{SELECT (taskq.wait_for_task('num', '60 s')).result::text}), '42',
	'a number printed is the result wait_for_task returns');
ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM taskq.tasks WHERE status_code = 'in_progress' OR (status_code = 'pending' AND num_tries = 0)}),
	'every task was tried');

# one by one at shutdown: a child still running when SIGTERM comes
q1(q{SELECT taskq.insert_tasks('[{"id": "late", "action": "res"}]')});
my $t0 = time;
usleep(50_000) while !-f "$dir/late-started" && time - $t0 < 60;
ok(-f "$dir/late-started", 'the late child started');
kill 'TERM', $pid;
usleep(300_000);
open(my $go, '>', "$dir/late-go") or die;
close $go;
my ($rc) = wait_exit($pid, 30);
is($rc, 0, 'the worker exits 0 on SIGTERM');
my $wlog = slurp($log);
note "worker log:\n" . join("\n", grep { / task id=|worker task / } split /\n/, $wlog);

sub task { return q1("SELECT status_code || '|' || num_tries || '|' || coalesce(status, '') || '|' || coalesce(result::text, '<null>') FROM taskq.tasks WHERE id = '$_[0]'"); }

is(task('obj'), 'completed|1|done|{"a": 1, "b": [true, null], "c": "A\\n"}', 'an object printed is the result');
is(task('arr'), 'completed|1|done|[1, "two", {"three": 3}]', 'an array (white space around it) is the result');
is(task('num'), 'completed|1|counted|42', 'a number; the status is still the last line of stderr');
is(task('str'), 'completed|1|done|"hello"', 'a string');
is(task('blank'), 'completed|1|blank done|<null>', 'blank output: completed without a result');
is(task('bad'), 'pending|1|standard output is not JSON: unexpected character at byte 0|<null>',
	'output that is not JSON: the try fails, pending, the status says why');
is(task('two'), 'pending|1|standard output is not JSON: text after the JSON value at byte 2|<null>',
	'two JSON values: the try fails');
is(task('exit75'), 'pending|1|exit 75: later|<null>', 'a non-zero exit ignores the output');
is(task('over'), 'pending|1|standard output larger than 2097152 bytes|<null>',
	'output over 2 MiB: the try fails');
like(task('huge'), qr/^pending\|1\|result refused: 54000: [^|]*too large[^|]*\|<null>$/,
	'a result the server refuses (over 1 MiB as jsonb): pending, the status names the error');
like($wlog, qr/task id=huge action=res try=1 outcome=pending .*result refused: 54000/,
	'and the log line says so');
is(task('late'), 'completed|1|done|{"late": true}', 'a return made one by one (at shutdown) carries the result');

my $succ = q1(q{SELECT result::text FROM taskq.tasks WHERE id = 'succ'});
is($succ, '[{"id": "arr", "result": [1, "two", {"three": 3}]}, {"id": "obj", "result": {"a": 1, "b": [true, null], "c": "A\\n"}}]',
	'a successor reads its predecessors\' results with predecessor_results');

is(task('plain-1'), 'completed|1|plain done|<null>', 'an action without --result completes as before');
like($wlog, qr/^\{"passes": "through"\}$/m, 'and its standard output goes to the worker\'s');
unlike($wlog, qr/^42$/m, 'a --result action\'s output does not');

check_invariants($node, 'after the results');
$node->stop;
done_testing();
