# What taskq-worker hands a child besides its body: TASKQ_CONCURRENCY_KEY
# (the task's key; unset without one), its predecessors' results with
# --predecessors (a JSON array in the file TASKQ_PREDECESSORS_FILE), and
# fd 3 (TASKQ_CONTINUE_FD) in a continuation state, where a cursor line
# forks the next chunk at once.  Two workers of one slot each work on
# consecutive chunks at the same time (their intervals overlap: chunk 0
# waits for chunk 1 to start, which only an early fork allows), and a child
# killed after its fork loses nothing: the fork is there, the retry forks
# nothing new, every chunk runs.  Claims wait in the server (own_tasks'
# wait): with --poll 60s a task inserted while the worker waits runs at
# once, and SIGTERM does not wait for the claim.
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

# --- usage ------------------------------------------------------------------
{
	my $err = `"$bin" --predecessors nope --run a=true 2>&1 >/dev/null`;
	is($? >> 8, 2, '--predecessors for an action without --run: usage error (exit 2)');
	like($err, qr/--predecessors names action "nope", which has no --run/, 'naming the action');
	like(`"$bin" --help`, qr/-P, --predecessors=ACTION/, '--help lists --predecessors');
}

my $node = taskq_node('handoff');
my $db = $node->connstr('postgres') . ' application_name=taskq-worker';
my $dir = PostgreSQL::Test::Utils::tempdir();
my ($psql) = grep { -x $_ } map { "$_/psql" } split /:/, $ENV{PATH} // '';
my $connstr = $node->connstr('postgres');

sub q1 { return $node->safe_psql('postgres', $_[0]); }

# $1: the worker's label.  Times are nanoseconds since the epoch.
open(my $sf, '>', "$dir/h.sh") or die;
print $sf <<"EOF";
#!/bin/sh
d='$dir'
cat >/dev/null
f=\$(printf '%s' "\$TASKQ_ID" | tr / _)
case \$TASKQ_ACTION in
part)
	echo "\${TASKQ_CONCURRENCY_KEY-unset}" >"\$d/key-\$f"
	case \$TASKQ_ID in p2) ;; *) printf '{"part": "%s"}' "\$TASKQ_ID" ;; esac ;;
sum)
	echo "\${TASKQ_CONCURRENCY_KEY-unset}" >"\$d/key-\$f"
	cat "\$TASKQ_PREDECESSORS_FILE" ;;
chunk)
	c=\${TASKQ_CURSOR:-0}
	[ "\$c" -lt 1 ] && echo \$((c + 1)) >&\$TASKQ_CONTINUE_FD
	date +%s%N >"\$d/start-\$c"; echo "\$1" >"\$d/who-\$c"
	if [ "\$c" = 0 ]; then
		i=0; while [ ! -f "\$d/start-1" ] && [ \$i -lt 200 ]; do sleep 0.1; i=\$((i + 1)); done
	fi
	sleep 0.2
	date +%s%N >"\$d/end-\$c"
	echo '{"event": null}' ;;
crash)
	c=\${TASKQ_CURSOR:-0}
	[ "\$c" -lt 2 ] && echo \$((c + 1)) >&3
	echo "\$c \$TASKQ_TRY" >>"\$d/crash-done"
	if [ "\$c" = 0 ] && [ "\$TASKQ_TRY" = 1 ]; then
		until [ "\$("$psql" -X -At -d "$connstr" -c "SELECT count(*) FROM taskq.runs WHERE parent = 'cr'")" = 1 ]; do sleep 0.05; done
		touch "\$d/forked"
		kill -9 \$\$
	fi
	echo '{"event": null}' ;;
plain) ;;
esac
exit 0
EOF
close $sf;
chmod 0755, "$dir/h.sh";

# --- keys and predecessors' results ----------------------------------------------
q1(q{SELECT taskq.insert_tasks('[
  {"id": "p1", "action": "part", "concurrency_key": "customer-1", "to_signal_after": ["s"]},
  {"id": "p2", "action": "part", "to_signal_after": ["s"]},
  {"id": "s", "action": "sum", "concurrency_key": "customer-2"}]')});
my $log = "$dir/w1.log";
my $pid = spawn_logged($log, $bin, '-d', $db, '--actor', 'w1', '--concurrency', '2',
	'--poll', '60s', '--run', "part=$dir/h.sh", '--run', "sum=$dir/h.sh", '--result', 'part',
	'--result', 'sum', '--predecessors', 'sum', '--run', "plain=$dir/h.sh");
is(q1(q{SELECT (taskq.wait_for_task('s', '60 s')).result::text}),
	'[{"id": "p1", "result": {"part": "p1"}, "status": "done", "status_code": "completed"}, '
	  . '{"id": "p2", "result": null, "status": "done", "status_code": "completed"}]',
	'a --predecessors child reads its predecessors\' results from TASKQ_PREDECESSORS_FILE');
is(slurp("$dir/key-p1"), "customer-1\n", 'TASKQ_CONCURRENCY_KEY is the task\'s key');
is(slurp("$dir/key-p2"), "unset\n", 'and unset for a task without one');
is(slurp("$dir/key-s"), "customer-2\n", 'a successor has its own');

# --- the waiting claim --------------------------------------------------------
like(slurp($log), qr/claims wait in the server/, 'the worker claims with own_tasks\' wait');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%taskq.own_tasks(%wait =>%'}),
	'a claim waits in the server');
is(q1(q{SELECT count(*) FROM pg_stat_activity WHERE application_name = 'taskq-worker'
	AND query = 'LISTEN taskq'}), '0', 'and the worker does not LISTEN');
my $t0 = time;
q1(q{SELECT taskq.insert_tasks('[{"id": "now", "action": "plain"}]')});
is(q1(q{SELECT (taskq.wait_for_task('now', '30 s')).status_code}), 'completed',
	'a task inserted while the claim waits is run');
cmp_ok(time - $t0, '<', 10, 'at once, not at the next --poll (60 s)');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_activity
	WHERE state = 'active' AND pid <> pg_backend_pid() AND query LIKE '%taskq.own_tasks(%wait =>%'}),
	'the next claim waits again');
my ($rc, $took) = stop_process($pid, 30);
is($rc, 0, 'SIGTERM: the worker exits 0');
cmp_ok($took, '<', 10, 'without waiting for its claim\'s wait to pass');

# --- continuation forks run at the same time ----------------------------------
q1(q{SELECT taskq.define_machine('chunks', '{"states": [{"name": "Chunk", "action": "chunk",
	"initial": true, "continuation": true, "final": true}]}')});
q1(q{SELECT taskq.start_machine('chunks', 'ch')});
my @pids = map {
	spawn_logged("$dir/c$_.log", $bin, '-d', $db, '--actor', "c$_", '--poll', '1s',
		'--run', "chunk=$dir/h.sh c$_")
} (1, 2);
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 2 FROM taskq.runs WHERE id LIKE 'ch%' AND status = 'succeeded'}),
	'both chunks ran');
stop_process($_, 30) for @pids;
my ($s0, $e0, $s1, $e1) = map { slurp("$dir/$_") + 0 } qw(start-0 end-0 start-1 end-1);
ok($s1 < $e0 && $s0 < $e1, 'chunk 1 started while chunk 0 ran: the fork was committed first')
  or diag("chunk 0: $s0-$e0, chunk 1: $s1-$e1\n" . slurp("$dir/c1.log") . slurp("$dir/c2.log"));
isnt(slurp("$dir/who-0"), slurp("$dir/who-1"), 'on two workers');
like(slurp("$dir/c1.log") . slurp("$dir/c2.log"), qr{task ch/1: cursor "1" forked run ch/},
	'the fork is logged');

# --- a child killed after its fork ----------------------------------------------
q1(q{SELECT taskq.define_machine('crashes', '{"states": [{"name": "Chunk", "action": "crash",
	"initial": true, "continuation": true, "final": true}]}')});
q1(q{SELECT taskq.start_machine('crashes', 'cr')});
$pid = spawn_logged("$dir/cr.log", $bin, '-d', $db, '--actor', 'cr', '--concurrency', '2',
	'--poll', '1s', '--run', "crash=$dir/h.sh");
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 3 FROM taskq.runs WHERE id LIKE 'cr%' AND status = 'succeeded'}),
	'every chunk ran');
stop_process($pid, 30);
ok(-f "$dir/forked", 'the fork was there before the child was killed');
is(q1(q{SELECT count(*) FROM taskq.runs WHERE id LIKE 'cr%'}), '3',
	'three runs: the retry of the killed step forked nothing new');
is(join(',', sort split /\n/, slurp("$dir/crash-done")), '0 1,0 2,1 1,2 1',
	'chunk 0 ran twice (killed, then retried), the others once');
like(slurp("$dir/cr.log"), qr{task id=cr/1 action=crash try=1 outcome=pending exit=137 },
	'the killed try was returned pending');

check_invariants($node, 'after the handoffs');
$node->stop;
done_testing();
