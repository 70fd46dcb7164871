# taskq-worker runs workflow steps through its child's standard output,
# with shell scripts only and --concurrency 3: a state machine whose
# context changes through stdout (a loop, a step with blank stdout whose
# last stderr line is the event, a final step that ends the run with a new
# context) ends in the expected state with the expected context; bad JSON,
# a value of the wrong type, an unknown event (22023) and stdout over the
# limit each fail one try with a status that says why, and the step is
# retried; a continuation forks through "continue" and a fan-in step reads
# its batch's contexts from its body; a step three leases long is kept by
# heartbeats.  A saga (a DAG a -> b, c -> d, each with an undo): the working
# map gets every step's changes; a failing step (exit 100) undoes each
# started step once, in reverse order, and the run ends failed.  A plain
# task's stdout still goes to the worker's stdout.  TASKQ_RUN, TASKQ_STATE,
# TASKQ_STEP, TASKQ_DIRECTION and TASKQ_CURSOR are set as fits.
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

my $node = taskq_node('steps');
my $db = $node->connstr('postgres') . ' application_name=taskq-worker';
my $dir = PostgreSQL::Test::Utils::tempdir();

sub q1 { return $node->safe_psql('postgres', $_[0]); }

# One script for every action; the JSON is read with sed and written with
# printf, so that nothing but a POSIX shell is needed.
open(my $sf, '>', "$dir/step.sh") or die;
print $sf <<"EOF";
#!/bin/sh
d='$dir'
body=\$(cat)
f=\$(printf '%s' "\$TASKQ_ID" | tr / _)
printf '%s\\n' "\$body" >"\$d/body-\$f-\$TASKQ_TRY"
echo "\$TASKQ_ID|\${TASKQ_RUN-unset}|\${TASKQ_STATE-unset}|\${TASKQ_STEP-unset}|\${TASKQ_DIRECTION-unset}|\${TASKQ_CURSOR-unset}" >>"\$d/env"
num() { printf '%s' "\$body" | sed -n "s/.*\\"\$1\\": \\([0-9]*\\).*/\\1/p"; }
case \$TASKQ_ACTION in
count)
	n=\$(num n); n=\${n:-0}
	case "\$TASKQ_RUN:\$n:\$TASKQ_TRY" in
	loop-bad:0:1) echo 'not json {'; exit 0 ;;
	loop-bad:1:1) echo '{"event": "nonsense"}'; exit 0 ;;
	loop-bad:2:1) echo '{"event": "done", "context": [1]}'; exit 0 ;;
	loop-big:0:1) head -c 3000000 /dev/zero | tr '\\0' x; exit 0 ;;
	esac
	n=\$((n + 1))
	if [ \$n -lt 3 ]; then
		printf '{"event": "more", "context": {"n": %d}}\\n' \$n
	else
		printf '{"event": "done", "context": {"n": %d, "by": "%s"}}\\n' \$n "\$TASKQ_STATE"
	fi ;;
check)
	[ "\$TASKQ_RUN" = loop-long ] && sleep 3.5
	echo "checked" >&2; echo fine >&2 ;;
finish)
	printf '{"context": {"n": %d, "finished": true}}' "\$(num n)" ;;
split)
	c=\${TASKQ_CURSOR-0}
	if [ \$c -lt 3 ]; then
		printf '{"continue": "%d", "event": "ok", "context": {"item": %d}}' \$((c + 1)) \$c
	else
		printf '{"event": "ok", "context": {"item": %d}}' \$c
	fi ;;
gather)
	batch=\$(printf '%s' "\$body" | sed 's/.*"fan_in_contexts": //')
	items=\$(printf '%s' "\$batch" | grep -o '"item": [0-9]*' | wc -l)
	sum=0
	for i in \$(printf '%s' "\$batch" | grep -o '"item": [0-9]*' | sed 's/.*: //'); do sum=\$((sum + i)); done
	printf '{"event": null, "context": {"items": %d, "sum": %d}}' \$items \$sum ;;
sdo)
	case \$TASKQ_STEP in
	a) echo '{"working": {"a": 1}}' ;;
	b) echo '{"result": "success", "working": {"b": 2}}' ;;
	c) if [ \$TASKQ_TRY = 1 ]; then echo '{"working": "oops"}'; else echo '{"working": {"c": 3}}'; fi ;;
	d) case \$body in *'"fail": true'*) echo "d broke" >&2; exit 100 ;; esac
	   echo '{"working": {"d": 4}}' ;;
	esac ;;
sundo)
	echo "undo \$TASKQ_RUN \$TASKQ_STEP \$TASKQ_DIRECTION" >>"\$d/undos" ;;
plain)
	echo '{"event": "plain-stdout-passes"}'; echo "plain done" >&2 ;;
esac
exit 0
EOF
close $sf;
chmod 0755, "$dir/step.sh";

q1(q{SELECT taskq.define_machine('loop', '{"states": [
  {"name": "Count", "action": "count", "initial": true,
   "transitions": [{"event": "more", "to": "Count"}, {"event": "done", "to": "Check"}]},
  {"name": "Check", "action": "check", "transitions": [{"event": "fine", "to": "Finish"}]},
  {"name": "Finish", "action": "finish", "final": true}]}')});
q1(q{SELECT taskq.define_machine('fanout', '{"states": [
  {"name": "Split", "action": "split", "initial": true, "continuation": true,
   "transitions": [{"event": "ok", "to": "Gather"}]},
  {"name": "Gather", "action": "gather", "final": true, "fan_in": 3}]}')});
q1(q{SELECT taskq.define_saga('dag', '{"steps": [
  {"name": "a", "do": "sdo", "undo": "sundo"},
  {"name": "b", "do": "sdo", "undo": "sundo", "after": ["a"]},
  {"name": "c", "do": "sdo", "undo": "sundo", "after": ["a"]},
  {"name": "d", "do": "sdo", "undo": "sundo", "after": ["b", "c"]}]}')});

q1("SELECT taskq.start_machine('loop', '$_', '{}')") for qw(loop-1 loop-2 loop-3 loop-bad loop-big loop-long);
q1(q{SELECT taskq.start_machine('fanout', 'fan', '{}')});
q1(q{SELECT taskq.start_saga('dag', 'ok-1', '{}')});
q1(q{SELECT taskq.start_saga('dag', 'bad-1', '{"fail": true}')});
q1(q{SELECT taskq.insert_tasks('[{"id": "plain-1", "action": "plain", "body": {"run": "plain-1", "machine": "m", "state": "y"}}]')});

my $log = "$dir/worker.log";
my $pid = spawn_logged($log, $bin, '-d', $db, '--actor', 'steps', '--concurrency', '3', '--lease', '1s',
	'--poll', '1s', map { ('--run', "$_=$dir/step.sh") } qw(count check finish split gather sdo sundo plain));

ok( $node->poll_query_until('postgres',
		q{SELECT count(*) = 0 FROM taskq.runs WHERE status NOT IN ('succeeded', 'failed', 'merged', 'dismal', 'cancelled')}),
	'every run finished');
ok($node->poll_query_until('postgres', q{SELECT status_code = 'completed' FROM taskq.tasks WHERE id = 'plain-1'}),
	'the plain task completed');
kill 'TERM', $pid;
waitpid($pid, 0);
is($? >> 8, 0, 'the worker exits 0 on SIGTERM');
my $wlog = slurp($log);
note "worker log:\n" . join("\n", grep { / task id=/ } split /\n/, $wlog);

# --- the state machine ------------------------------------------------------
is( q1(q{SELECT string_agg(id || ':' || status || ':' || state || ':' || context::text, ' ' ORDER BY id) FROM taskq.runs WHERE id IN ('loop-1', 'loop-2', 'loop-3')}),
	join(' ', map { "loop-$_:succeeded:Finish:{\"n\": 3, \"finished\": true}" } 1 .. 3),
	'machines: each run ends succeeded in the final state with the context its steps printed');
is( q1(q{SELECT string_agg(step || '=' || outcome || '/' || num_tries, ',' ORDER BY seq) FROM taskq.run_steps('loop-1')}),
	'Count=more/1,Count=more/1,Count=done/1,Check=fine/1,Finish=completed/1',
	'events from stdout; blank stdout: the last stderr line is the event; none ends the run');
like(slurp("$dir/body-loop-1_5-1"), qr/"context": \{"n": 3, "by": "Count"\}/,
	'a context printed by one step is the next step\'s context');
my %env = map { my @f = split /\|/; ($f[0] => join('|', @f[1 .. 5])) } split /\n/, slurp("$dir/env");
is($env{'loop-1/1'}, 'loop-1|Count|unset|unset|unset', 'a machine step: TASKQ_RUN and TASKQ_STATE');
{
	my @sb = grep { /^ok-1\/\d+$/ && $env{$_} =~ /\|b\|/ } keys %env;
	is($env{ $sb[0] // '' }, 'ok-1|unset|b|do|unset', 'a saga step: TASKQ_RUN, TASKQ_STEP and TASKQ_DIRECTION');
}
is($env{'plain-1'}, 'unset|unset|unset|unset|unset', 'a plain task (whatever its body): none of them');
like($wlog, qr/^\{"event": "plain-stdout-passes"\}$/m, 'a plain task\'s stdout goes to the worker\'s stdout');
is(q1(q{SELECT status FROM taskq.tasks WHERE id = 'plain-1'}), 'plain done', 'and it completes as before');

# bad output: the try fails with a clear status, the step is retried
is( q1(q{SELECT status || ':' || state || ':' || context::text FROM taskq.runs WHERE id = 'loop-bad'}),
	'succeeded:Finish:{"n": 3, "finished": true}', 'the run with bad output on first tries ends as the others');
is( q1(q{SELECT string_agg(step || '=' || outcome || '/' || num_tries, ',' ORDER BY seq) FROM taskq.run_steps('loop-bad')}),
	'Count=more/2,Count=more/2,Count=done/2,Check=fine/1,Finish=completed/1',
	'each of its bad first tries was retried once');
like($wlog, qr/task id=loop-bad\/1 action=count try=1 outcome=pending exit=0 .*detail="?standard output is not a JSON object: expected a JSON object at byte 0/,
	'not JSON: pending, and the status says so');
like($wlog, qr/worker task loop-bad\/2: transition failed: 22023: /, 'an unknown event: logged with its SQLSTATE');
like($wlog, qr/task id=loop-bad\/2 action=count try=1 outcome=pending .*transition failed: 22023/,
	'and the try is returned pending with that text');
like($wlog, qr/task id=loop-bad\/3 action=count try=1 outcome=pending .*\\?"context\\?" must be an object or null, not an array/,
	'a context that is not an object: pending, saying so');
is( q1(q{SELECT string_agg(step || '=' || outcome || '/' || num_tries, ',' ORDER BY seq) FROM taskq.run_steps('loop-big')}),
	'Count=more/2,Count=more/1,Count=done/1,Check=fine/1,Finish=completed/1',
	'stdout over the limit fails the try');
like($wlog, qr/task id=loop-big\/1 action=count try=1 outcome=pending .*standard output larger than 2097152 bytes/,
	'saying so');

# heartbeats: a 3.5 s step with a 1 s lease
is( q1(q{SELECT num_tries || ':' || outcome FROM taskq.run_steps('loop-long') WHERE step = 'Check'}),
	'1:fine', 'a step 3.5 leases long: its only try, the lease kept by heartbeats');
is(q1(q{SELECT status FROM taskq.runs WHERE id = 'loop-long'}), 'succeeded', 'and the run ends');

# continuation and fan-in
is( q1(q{SELECT count(*) FROM taskq.runs WHERE id = 'fan' OR parent IS NOT NULL AND id LIKE 'fan/%'}),
	'4', 'continuation: "continue" forked the run three times');
is( q1(q{SELECT string_agg(DISTINCT coalesce(t.status, ''), ',') FROM taskq.runs r JOIN taskq.tasks t ON t.workflow = r.id WHERE r.id LIKE 'fan%' AND t.action = 'split'}),
	'ok', 'each visit of the continuation state moved on with its event');
like($env{'fan/1'} // '', qr/^fan\|Split\|unset\|unset\|unset$/, 'TASKQ_CURSOR is unset the first time');
ok((grep { /^fan\/c\d+\/\d+$/ && $env{$_} =~ /\|Split\|unset\|unset\|[123]$/ } keys %env) == 3,
	'and is the cursor in the forks');
is( q1(q{SELECT count(*) FILTER (WHERE status = 'succeeded') + count(*) FILTER (WHERE status = 'merged') || ':' || sum((context->>'items')::int) || ':' || sum((context->>'sum')::int) FROM taskq.runs WHERE id = 'fan' OR id LIKE 'fan/%'}),
	'4:4:6', 'fan-in: the batches\' steps saw every instance\'s context once (4 items, 0+1+2+3)');
note 'fan-in batches: ' . q1(q{SELECT string_agg(id || '=' || (context->>'items'), ' ') FROM taskq.runs WHERE (id = 'fan' OR id LIKE 'fan/%') AND status = 'succeeded'});
{
	my ($gb) = grep { slurp($_) =~ /"fan_in": true/ } glob("$dir/body-fan*");
	like(slurp($gb // ''), qr/"fan_in_contexts": \[\{"run": "fan[^"]*", "context": \{"item": \d\}\}/,
		'the batch\'s body on stdin carries "fan_in_contexts": [{"run", "context"}, ...]');
}

# --- the saga -------------------------------------------------------------
is( q1(q{SELECT status || ':' || context::text FROM taskq.runs WHERE id = 'ok-1'}),
	'succeeded:{"a": 1, "b": 2, "c": 3, "d": 4}', 'saga: the working map has every step\'s changes');
like($wlog, qr/task id=ok-1\/\d+ action=sdo try=1 outcome=pending .*\\?"working\\?" must be an object or null, not a string/,
	'a working map that is not an object: the try is retried, saying why');
is( q1(q{SELECT status || ':' || context::text || ':' || error FROM taskq.runs WHERE id = 'bad-1'}),
	'failed:{"a": 1, "b": 2, "c": 3}:step "d": exit 100: d broke',
	'a step that exits 100 fails the saga: it ends failed with the changes made and the error');
{
	my @u = grep { /^undo bad-1 / } split /\n/, slurp("$dir/undos");
	is(join(',', sort @u), 'undo bad-1 a undo,undo bad-1 b undo,undo bad-1 c undo,undo bad-1 d undo',
		'each started step was undone once (TASKQ_DIRECTION undo)');
	is($u[0] // '', 'undo bad-1 d undo', 'd first');
	is($u[3] // '', 'undo bad-1 a undo', 'a last');
	is(scalar(grep { /^undo ok-1 / } split /\n/, slurp("$dir/undos")), 0, 'the saga that succeeded undid nothing');
}

check_invariants($node, 'after the steps');
$node->stop;
done_testing();
