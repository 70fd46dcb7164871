# taskq-worker, the worker runner (tools/taskq-worker), with shell-script
# children: at most --concurrency children at once, claimed in batches; the
# body on stdin and the task in the environment; exit statuses 0, 75, 100,
# other and a signal mapped to completed, pending, aborted, pending,
# pending; a task several leases long kept by heartbeats and done once; a
# lost lease (back-dated and claimed by another session) stops the child
# and returns nothing; --timeout stops a child and the task is retried;
# a claim waiting in the server wakes it; a killed connection is re-made; SIGTERM gives running
# children --grace, then stops them and gives their tasks back (none lost,
# none done twice), and a second signal stops at once; --help lists every
# option; a task claimed ahead while a long child runs is given back
# unstarted (no try counted); a return refused with TQ001 (the task claimed
# by another session) refuses only that task.  Leases are back-dated, never
# waited out.
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
note "taskq-worker: $bin";

# --- --help and --version ---------------------------------------------------
{
	my $help = `"$bin" --help`;
	is($? >> 8, 0, '--help exits 0');
	my $src = ($ENV{TESTDIR} // '.') . '/tools/taskq-worker/options.c';
	open(my $f, '<', $src) or die "$src: $!";
	my @names = map { /^\s*\{"([a-z-]+)", (?:required|no)_argument/ ? $1 : () } <$f>;
	close $f;
	cmp_ok(scalar @names, '>=', 12, 'the options are read from options.c');
	my @missing = grep { $help !~ /--\Q$_\E\b/ } @names;
	is(join(',', @missing), '', '--help lists every option (' . scalar(@names) . ')');
	my $v = `"$bin" --version`;
	like($v, qr/^taskq-worker \(taskq\) \d+\.\d+/, '--version prints the version');
	system("\"$bin\" --concurrency 0 --run a=true 2>/dev/null");
	is($? >> 8, 2, 'a bad option exits 2');
}

my $node = taskq_node('runner');
my $db = $node->connstr('postgres') . ' application_name=taskq-worker';
my $dir = PostgreSQL::Test::Utils::tempdir();

# One script for every action.  Each child records its start and end (with
# its pid), its body, its environment and what it was told.
open(my $sf, '>', "$dir/child.sh") or die;
print $sf <<"EOF";
#!/bin/sh
d='$dir'
echo "start \$TASKQ_ID \$\$" >>"\$d/events"
cat >"\$d/body-\$TASKQ_ID"
echo "\$TASKQ_ID|\$TASKQ_ACTION|\$TASKQ_TRY|\$TASKQ_TOKEN|\$TASKQ_DEADLINE|\${TASKQ_RUN-unset}" >>"\$d/env"
end() { echo "end \$TASKQ_ID \$\$" >>"\$d/events"; }
if [ -f "\$d/phase2" ]; then end; echo "done \$TASKQ_ID" >>"\$d/done"; exit 0; fi
case \$TASKQ_ACTION in
rec)  sleep 0.4; end; echo recorded >&2; exit 0 ;;
code) c=\${TASKQ_ID#code-}; end
      [ "\$c" = kill ] && kill -KILL \$\$
      echo "first line" >&2; echo "said \$c" >&2; exit "\$c" ;;
long) sleep 3.5; end; echo "long done" >&2; exit 0 ;;
slow|steal)
      trap 'echo "term \$TASKQ_ID \$TASKQ_TRY" >>"\$d/terms"; end; exit 0' TERM
      sleep 30 & wait; end; exit 0 ;;
term) case \$TASKQ_ID in
      *quick) sleep 0.5; end; echo "done \$TASKQ_ID" >>"\$d/done"; exit 0 ;;
      *polite) trap 'echo "term \$TASKQ_ID" >>"\$d/terms"; end; exit 1' TERM; sleep 30 & wait ;;
      *) trap '' TERM; sleep 30 ;;
      esac ;;
esac
exit 3
EOF
close $sf;
chmod 0755, "$dir/child.sh";

# Start taskq-worker with @args; its output goes to $log.
sub start_worker
{
	my ($log, @args) = @_;
	return spawn_logged($log, $bin, '-d', $db, @args);
}

# SIGTERM, then up to $timeout s (10): (exit status or undef, seconds).
sub stop_worker { return stop_process(@_); }

sub wait_until
{
	my ($cond, $timeout) = @_;
	my $t0 = time;
	while (time - $t0 < ($timeout // 20))
	{
		return 1 if $cond->();
		usleep(50_000);
	}
	return 0;
}

sub row
{
	my ($id, $cols) = @_;
	return $node->safe_psql('postgres',
		"SELECT " . ($cols // "status_code || '|' || num_tries") . " FROM taskq.tasks WHERE id = '$id'");
}

sub task_lines
{
	my ($log, $id) = @_;
	return grep { / task id=\Q$id\E / } split /\n/, slurp($log);
}

# --- one worker, concurrency 3: exit codes, heartbeats, timeout, batches ----
my @rec = map { { id => "rec-$_", action => 'rec', body => "{\"n\": $_}" } } 1 .. 9;
my $codes_sql = join(',',
	map { "{\"id\": \"code-$_\", \"action\": \"code\", \"max_tries\": 3, \"retry\": {\"delay\": \"1 hour\"}}" }
	  qw(0 75 100 3 kill));
$node->safe_psql('postgres',
	    "SELECT taskq.insert_tasks('["
	  . join(',', map { "{\"id\": \"$_->{id}\", \"action\": \"rec\", \"body\": $_->{body}}" } @rec)
	  . ",$codes_sql"
	  . ",{\"id\": \"long-1\", \"action\": \"long\", \"max_tries\": 1}"
	  . ",{\"id\": \"slow-1\", \"action\": \"slow\", \"max_tries\": 2}"
	  . "]')");

my $log1 = "$dir/worker1.log";
my $t0 = time;
my $w1 = start_worker($log1, '--actor', 'runner-1', '--concurrency', '3', '--lease', '1s',
	'--poll', '30s', '--timeout', 'slow=1s', '--kill-after', '1s',
	map { ('--run', "$_=$dir/child.sh") } qw(rec code long slow));
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM taskq.tasks WHERE status_code = 'in_progress' OR (status_code = 'pending' AND num_tries = 0) OR (id = 'slow-1' AND status_code <> 'aborted')"),
	'worker 1 works through every task');
note sprintf('worker 1 took %.1f s', time - $t0);

# never more than 3 children at once, and 3 were used
{
	my ($cur, $max, $bad) = (0, 0, 0);
	for my $l (split /\n/, slurp("$dir/events"))
	{
		$cur += $l =~ /^start / ? 1 : -1;
		$max = $cur if $cur > $max;
	}
	is($max, 3, 'never more than --concurrency 3 children at once, and 3 at times');
}
is( $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.tasks WHERE action = 'rec' AND status_code = 'completed' AND num_tries = 1 AND status = 'recorded'"),
	'9', 'every rec task completed once, its status the last line of stderr');
is(slurp("$dir/body-rec-4"), '{"n": 4}', 'the body is on standard input');
{
	my ($env) = grep { /^code-0\|/ } split /\n/, slurp("$dir/env");
	like($env // '',
		qr/^code-0\|code\|1\|[0-9a-f-]{36}\|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\|unset$/,
		'TASKQ_ID, TASKQ_ACTION, TASKQ_TRY, TASKQ_TOKEN and TASKQ_DEADLINE are set, TASKQ_RUN is not');
}

# exit statuses
is(row('code-0', "status_code || '|' || num_tries || '|' || status"), 'completed|1|said 0', 'exit 0: completed, status = last stderr line');
is(row('code-75', "status_code || '|' || num_tries || '|' || status || '|' || (not_before > now() + interval '50 minutes')"),
	'pending|1|exit 75: said 75|true', 'exit 75: pending, the retry policy applies');
is(row('code-100'), 'aborted|1', 'exit 100: aborted on its first of 3 tries');
is(row('code-3', "status_code || '|' || num_tries || '|' || status"), 'pending|1|exit 3: said 3', 'exit 3: pending');
like(row('code-kill', "status_code || '|' || num_tries || '|' || status"), qr/^pending\|1\|(?:signal 9|exit 137)/, 'killed by a signal: pending (sh reports 128 + the signal)');
my @l100 = task_lines($log1, 'code-100');
is(scalar @l100, 1, 'one log line for the task');
like($l100[0] // '', qr/ action=code try=1 outcome=aborted exit=100 seconds=\d+\.\d{3}/, 'with action, try, outcome, exit and seconds');

# heartbeats: 3.5 s with a 1 s lease
is(row('long-1', "status_code || '|' || num_tries || '|' || status"), 'completed|1|long done',
	'a task of 3.5 leases completed on its only try: the heartbeats kept its lease');
is(scalar(() = slurp("$dir/events") =~ /^start long-1 /mg), 1, 'and its child ran once');

# --timeout: stopped (SIGTERM) and retried; the second timeout used the last try
is(row('slow-1'), 'aborted|2', '--timeout: the task was retried and aborted after its 2 tries');
is(scalar(() = slurp("$dir/terms") =~ /^term slow-1 /mg), 2, 'each try\'s child got SIGTERM');
is(scalar(grep { /outcome=timeout/ } task_lines($log1, 'slow-1')), 2, 'logged as timeouts');

# with --poll 30s, only the waiting claim (or, before 0.5, a notification) explains a quick start
$t0 = time;
$node->safe_psql('postgres', json_insert_sql({ id => 'late-1', action => 'rec' }));
ok($node->poll_query_until('postgres', "SELECT status_code = 'completed' FROM taskq.tasks WHERE id = 'late-1'"),
	'a task inserted while the worker is idle is done');
cmp_ok(time - $t0, '<', 5, sprintf('woken at once, not by the 30 s poll (%.1f s)', time - $t0));

# a killed connection is re-made (claims on connect)
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'taskq-worker'");
ok(wait_until(sub { slurp($log1) =~ /connection lost/ }, 10), 'the worker notices its connection is gone');
$node->safe_psql('postgres', json_insert_sql({ id => 'late-2', action => 'rec' }));
ok($node->poll_query_until('postgres', "SELECT status_code = 'completed' FROM taskq.tasks WHERE id = 'late-2'"),
	'it reconnects and works on');

my ($rc1, $took1) = stop_worker($w1);
is($rc1, 0, sprintf('an idle worker exits 0 on SIGTERM (%.1f s)', $took1));

# --- a lost lease stops the child; nothing is returned ---------------------
$node->safe_psql('postgres', json_insert_sql({ id => 'steal-1', action => 'steal', max_tries => 5 }));
my $log2 = "$dir/worker2.log";
my $w2 = start_worker($log2, '--actor', 'runner-2', '--concurrency', '1', '--lease', '2s',
	'--log-format', 'json', '--run', "steal=$dir/child.sh");
ok(wait_until(sub { slurp("$dir/events") =~ /^start steal-1 /m }), 'the worker started steal-1');
# Back-date the lease and claim the task from another session (a heartbeat
# in between may revive the lease: then again).
my $thief = '';
for (1 .. 20)
{
	# one session, so that a slow psql start leaves no room for a heartbeat
	$thief = $node->safe_psql('postgres',
		"UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'steal-1' AND status_code = 'in_progress'; "
		  . "SELECT id || ':' || num_tries FROM taskq.own_tasks('thief', 1, '{steal}', interval '1 hour')");
	last if $thief ne '';
	usleep(100_000);
}
is($thief, 'steal-1:2', 'another session owns the task (second try)');
ok(wait_until(sub { slurp("$dir/terms") =~ /^term steal-1 1$/m }, 5),
	'at its next heartbeat the worker stops the child (SIGTERM)');
ok(wait_until(sub { slurp($log2) =~ /"event":"task","id":"steal-1".*"outcome":"lost"/ }, 5),
	'and logs the task as lost');
is(row('steal-1', "status_code || '|' || num_tries || '|' || actor_id"), 'in_progress|2|thief',
	'nothing was returned: the thief still holds it, although the child exited 0');
my ($rc2) = stop_worker($w2);
is($rc2, 0, 'worker 2 exits 0 on SIGTERM');
my @bad_json = grep { my $l = $_; !eval { decode_json($l); 1 } } split /\n/, slurp($log2);
is(join("\n", @bad_json), '', '--log-format json: every line is a JSON object');

# --- SIGTERM during work: grace, then stop; tasks given back ---------------
# With release_task (0.5) a task is given back without counting its try, so
# even a task with max_tries 1 stays pending; before it, return_task
# 'pending' gives it back and uses the try up.
my $has_release = $node->safe_psql('postgres',
	"SELECT pg_catalog.to_regprocedure('taskq.release_task(text,uuid)') IS NOT NULL") eq 't';
my ($max_tries, $tries_after) = $has_release ? (1, 0) : (3, 1);
note $has_release ? 'release_task is there' : 'no release_task: tasks are given back with return_task';
$node->safe_psql('postgres',
	json_insert_sql(map { { id => "term-$_", action => 'term', max_tries => $max_tries } } qw(quick polite stubborn)));
my $log3 = "$dir/worker3.log";
my $w3 = start_worker($log3, '--actor', 'runner-3', '--concurrency', '3', '--lease', '5s',
	'--grace', '1.5s', '--kill-after', '1s', '--run', "term=$dir/child.sh");
ok(wait_until(sub { scalar(() = slurp("$dir/events") =~ /^start term-/mg) == 3 }),
	'worker 3 runs the three term tasks');
my @pids = slurp("$dir/events") =~ /^start term-\S+ (\d+)$/mg;
my ($rc3, $took3) = stop_worker($w3, 15);
is($rc3, 0, 'SIGTERM during work: the worker exits 0');
cmp_ok($took3, '>=', 1.4, sprintf('after the grace (%.1f s)', $took3));
cmp_ok($took3, '<', 5, 'and the stop of the stubborn child with SIGKILL');
is(join(',', grep { kill(0, $_) } @pids), '', 'no child is left running');
is(row('term-quick'), 'completed|1', 'a child that ends within the grace has its task completed');
is( $node->safe_psql('postgres',
		"SELECT string_agg(id || ':' || status_code || ':' || num_tries, ',' ORDER BY id) FROM taskq.tasks WHERE id IN ('term-polite', 'term-stubborn')"),
	"term-polite:pending:$tries_after,term-stubborn:pending:$tries_after",
	'the stopped ones were given back (pending' . ($has_release ? ', the try not counted)' : ')'));
is(scalar(grep { /outcome=released/ } split /\n/, slurp($log3)), 2, 'logged as released');

# Another worker finishes them: each is done exactly once.
open(my $p2, '>', "$dir/phase2") or die;
close $p2;
my $w4 = start_worker("$dir/worker4.log", '--actor', 'runner-4', '--concurrency', '3',
	'--lease', '5s', '--run', "term=$dir/child.sh");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 3 FROM taskq.tasks WHERE id LIKE 'term-%' AND status_code = 'completed'"),
	'another worker completes the given-back tasks');
stop_worker($w4);
is(join(',', sort split /\n/, slurp("$dir/done")),
	'done term-polite,done term-quick,done term-stubborn', 'none was lost, none done twice');
unlink "$dir/phase2";

# --- a second signal stops at once ----------------------------------------
$node->safe_psql('postgres', json_insert_sql({ id => 'hard-stubborn', action => 'term', max_tries => $max_tries }));
my $log5 = "$dir/worker5.log";
my $w5 = start_worker($log5, '--actor', 'runner-5', '--lease', '5s', '--grace', '30s',
	'--kill-after', '30s', '--run', "term=$dir/child.sh");
ok(wait_until(sub { slurp("$dir/events") =~ /^start hard-stubborn /m }), 'worker 5 runs a stubborn child');
kill 'TERM', $w5;
usleep(300_000);
my ($rc5, $took5) = stop_worker($w5, 5);
is($rc5, 0, 'a second signal: the worker exits 0');
cmp_ok($took5, '<', 2, sprintf('at once (%.1f s), not after --grace 30s', $took5));
is(row('hard-stubborn'), "pending|$tries_after", 'and gives the task back');

# --- claiming ahead: a task held while a long child runs is given back ------
# Quick children make the worker claim one task ahead per slot; hold-1 then
# runs 2 s, longer than a task claimed ahead may wait (a quarter of the 2 s
# lease), so the task claimed ahead is given back (no try counted) and done
# after hold-1.
{
	open(my $qf, '>', "$dir/quick.sh") or die;
	print $qf "#!/bin/sh\necho \"start \$TASKQ_ID\" >>'$dir/qevents'\n"
	  . "case \$TASKQ_ID in hold-*) sleep 2 ;; esac\n"
	  . "echo \"end \$TASKQ_ID\" >>'$dir/qevents'\nexit 0\n";
	close $qf;
	chmod 0755, "$dir/quick.sh";
}
$node->safe_psql('postgres',
	json_insert_sql(map { { id => $_, action => 'quick' } } qw(q-1 q-2 q-3 hold-1 q-4 q-5 q-6)));
my $log6 = "$dir/worker6.log";
my $w6 = start_worker($log6, '--actor', 'runner-6', '--concurrency', '1', '--lease', '2s',
	'--run', "quick=$dir/quick.sh");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 7 FROM taskq.tasks WHERE action = 'quick' AND status_code = 'completed'"),
	'claiming ahead: every quick task is done');
stop_worker($w6);
is( $node->safe_psql('postgres',
		"SELECT string_agg(DISTINCT num_tries::text, ',') FROM taskq.tasks WHERE action = 'quick'"),
	'1', 'each on its first try (a task given back unstarted counts no try)');
{
	my ($cur, $max) = (0, 0);
	for my $l (split /\n/, slurp("$dir/qevents"))
	{
		$cur += $l =~ /^start / ? 1 : -1;
		$max = $cur if $cur > $max;
	}
	is($max, 1, 'still one child at a time with --concurrency 1');
	is(scalar(() = slurp("$dir/qevents") =~ /^start /mg), 7, 'and one child per task');
}
like(slurp($log6), qr/outcome=released .*claimed ahead and not started in time/,
	'the task claimed ahead while hold-1 ran was given back after waiting its limit');

# --- a return refused with TQ001 refuses only that task ---------------------
# The child of stolen-1 lets its lease lapse and has another session claim the
# task before it exits 0: the worker's return_and_own fails (TQ001), so it
# returns each task with return_task and claims with own_tasks.
{
	open(my $tf, '>', "$dir/thief.sh") or die;
	print $tf "#!/bin/sh\n"
	  . "if [ \"\$TASKQ_ID\" = stolen-1 ]; then\n"
	  . "  psql -XAtq -d \"\$THIEF_DB\" -c \"UPDATE taskq.tasks SET action_deadline = now() - interval '1 second' WHERE id = 'stolen-1'\" "
	  . "-c \"SELECT id FROM taskq.own_tasks('thief-2', 1, '{stealme}', interval '1 hour')\" >>'$dir/thief.out' 2>&1\n"
	  . "fi\nexit 0\n";
	close $tf;
	chmod 0755, "$dir/thief.sh";
}
$node->safe_psql('postgres',
	json_insert_sql(map { { id => $_, action => 'stealme' } } qw(stolen-1 s-2 s-3 s-4)));
$ENV{THIEF_DB} = $node->connstr('postgres');
my $log7 = "$dir/worker7.log";
my $w7 = start_worker($log7, '--actor', 'runner-7', '--concurrency', '1', '--lease', '60s',
	'--run', "stealme=$dir/thief.sh");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 3 FROM taskq.tasks WHERE id IN ('s-2', 's-3', 's-4') AND status_code = 'completed'"),
	'the other tasks are done');
stop_worker($w7);
delete $ENV{THIEF_DB};
is(slurp("$dir/thief.out"), "stolen-1\n", 'the child had its own task claimed by another session');
is(row('stolen-1', "status_code || '|' || actor_id"), 'in_progress|thief-2', 'the thief holds it: nothing was returned');
my $l7 = slurp($log7);
like($l7, qr/(?:return_and_own failed \(TQ001|task id=stolen-1 .*outcome=not-returned .*TQ001)/,
	'the refused return is TQ001');
like($l7, qr/task id=stolen-1 .*outcome=not-returned/, 'and logged as not returned');

check_invariants($node, 'after the runs');
$node->stop;
done_testing();
