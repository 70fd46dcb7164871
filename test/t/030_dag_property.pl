# Trigger rules, by property: random DAGs of up to 30 tasks, each task with
# a random rule, run by 8 racing workers that complete or abort what they
# claim at random.  An oracle written here, independently of the C code,
# computes every task's final state from its predecessors' outcomes (and,
# for the tasks that run, the outcome their worker chose); every task must
# end in that state, no task may have been claimed before its rule was met
# (the predecessors' states each worker read in its claim's transaction,
# while the claim held the task's row), and no task may have been claimed
# twice.  A few wide joins (more than 64
# predecessors) take the background worker's deferred signals.  Every task
# graph renders with dot -Tsvg.
#
# TASKQ_DAG_COUNT sets the number of DAGs (default 200; 1000 for the long
# run), TASKQ_DAG_SEED the random seed (printed, to replay a failure).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;

my $ndags = $ENV{TASKQ_DAG_COUNT} // 200;
my $seed = $ENV{TASKQ_DAG_SEED} // int(rand(1_000_000));
my $nworkers = 8;
note "DAGs: $ndags, seed: $seed (TASKQ_DAG_SEED=$seed replays it)";
srand($seed);

my $node = taskq_node('dag', conf => "max_connections = 40\n");

my @rules = qw(all_success all_done one_failed one_success);

# ---------------------------------------------------------------- the DAGs
# %pred{id} = [ids], %rule{id}, @order: every task in insertion order.
my (%pred, %rule, %succ, @order, %dag_of);
my @dags;
for my $d (1 .. $ndags + 2)
{
	my $wide = $d > $ndags;            # the last two: wide joins
	my $n = $wide ? 71 : 1 + int(rand(30));
	my @ids = map { "d$d.$_" } 1 .. $n;
	my @tasks;
	for my $i (0 .. $n - 1)
	{
		my $id = $ids[$i];
		my @p;
		if ($wide)
		{
			@p = @ids[ 0 .. $n - 2 ] if $i == $n - 1;
		}
		else
		{
			# each earlier task is a predecessor with probability 2/(i+2),
			# at most 4: chains, fans and joins of every width up to 4
			for my $j (0 .. $i - 1)
			{
				push @p, $ids[$j] if @p < 4 && rand() < 2 / ($i + 2);
			}
		}
		$pred{$id} = \@p;
		$rule{$id} = $rules[ int(rand(@rules)) ];
		$succ{$_} //= [] for ($id, @p);
		push @{ $succ{$_} }, $id for @p;
		push @order, $id;
		$dag_of{$id} = "d$d";
	}
	push @dags, [ "d$d", \@ids ];
}

# Insert each DAG as one batch (the successor lists from %succ), 50 DAGs
# per psql call.
my @sql;
for my $dag (@dags)
{
	my ($w, $ids) = @$dag;
	my @objs = map {
		{
			id => $_, action => 'dag', workflow => $w,
			trigger => $rule{$_},
			(@{ $succ{$_} } ? (to_signal_after => $succ{$_}) : ())
		}
	} @$ids;
	push @sql, json_insert_sql(@objs) . ";\n";
	if (@sql == 50 || $dag == $dags[-1])
	{
		$node->safe_psql('postgres', join('', @sql));
		@sql = ();
	}
}
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.tasks"), scalar(@order),
	sprintf('%d tasks in %d DAGs inserted', scalar(@order), scalar(@dags)));
ok(defined wait_for_worker($node, 'postgres', 30), 'the database has a background worker');

# ---------------------------------------------------------------- the workers
# Each worker claims one task at a time and, in the claim's transaction,
# reads what its predecessors are (committed) and the completions of them
# whose signal is still deferred; then it commits the claim, picks completed
# (70%) or aborted, logs both with the return in the same transaction, and
# stops when no task is unfinished.
#
# Why in the claim's transaction: until it commits, the claim holds the
# task's row, and every finish of a predecessor must change that row to be
# counted.  An abort waits for the row; a completion may commit meanwhile,
# but only with its signal deferred (taskq.deferred_signals), which the
# worker cannot fold into the row either.  So what the read sees is what
# was counted when the claim ran, but for completions still deferred:
# subtracted, they give exactly the finishes the claim could have counted.
# Read after the commit, a predecessor that finished in between would hide
# a claim made too early.
$node->safe_psql('postgres', q{
CREATE TABLE dag_deadlocks (id text);
CREATE TABLE dag_log (id text, outcome taskq.status, seen_completed int, seen_aborted int,
                      seen_unfinished int, seen_deferred int, worker int,
                      at timestamptz DEFAULT clock_timestamp());
CREATE PROCEDURE dag_worker(w int, seed float8) LANGUAGE plpgsql AS $$
DECLARE
    t record;
    oc taskq.status;
    c int;
    a int;
    u int;
    d int;
    attempt int;
    deadline timestamptz := clock_timestamp() + interval '240 s';
BEGIN
    PERFORM setseed(seed);
    LOOP
        -- a waiting claim: it sleeps until a commit makes a task ready
        SELECT o.id, o.token INTO t
          FROM taskq.own_tasks('w' || w, 1, ARRAY['dag'], interval '1 hour', interval '20 ms') AS o;
        IF t.id IS NULL THEN
            COMMIT;
            EXIT WHEN NOT EXISTS (SELECT FROM taskq.tasks AS x
                                   WHERE x.action = 'dag' AND x.status_code < 'completed');
            EXIT WHEN clock_timestamp() > deadline;
            CONTINUE;
        END IF;
        -- still in the claim's transaction (see above), and in one
        -- statement: the states and the deferred signals of one snapshot
        SELECT count(*) FILTER (WHERE p.status_code = 'completed'),
               count(*) FILTER (WHERE p.status_code = 'aborted'),
               count(*) FILTER (WHERE p.status_code < 'completed'),
               (SELECT coalesce(sum(s.signals), 0) FROM taskq.deferred_signals AS s
                 WHERE s.task_id = t.id)
          INTO c, a, u, d
          FROM taskq.tasks AS p WHERE p.to_signal_after @> ARRAY[t.id];
        COMMIT;     -- the claim: its row is not held while the return waits
        oc := CASE WHEN random() < 0.7 THEN 'completed' ELSE 'aborted' END;
        -- A return whose abort cascade (or skip) meets another finish that
        -- locks the same rows in the other order may be chosen as a
        -- deadlock victim: as any worker would, try the return again (its
        -- locks went with the failed attempt).
        FOR attempt IN 1 .. 20 LOOP
            BEGIN
                INSERT INTO dag_log (id, outcome, seen_completed, seen_aborted, seen_unfinished,
                                     seen_deferred, worker)
                     VALUES (t.id, oc, c, a, u, d, w);
                PERFORM taskq.return_task(t.id, t.token, NULL, oc);
                EXIT;
            EXCEPTION WHEN deadlock_detected THEN
                INSERT INTO dag_deadlocks VALUES (t.id);
            END;
            IF attempt = 20 THEN
                RAISE EXCEPTION 'the return of % deadlocked 20 times', t.id;
            END IF;
            COMMIT;
            PERFORM pg_sleep(0.001 * attempt);
        END LOOP;
        COMMIT;
    END LOOP;
END $$;
});

my $t0 = time;
my $failed = run_psql_workers($node, 300,
	map { sprintf('CALL dag_worker(%d, %.6f)', $_, (($seed * 7919 + $_ * 104729) % 1_000_000) / 1_000_000) }
	  1 .. $nworkers);
is($failed, 0, sprintf('8 workers ran every DAG (%d s)', time - $t0));
note 'returns retried after a deadlock: '
  . $node->safe_psql('postgres', 'SELECT count(*) FROM dag_deadlocks');

# ---------------------------------------------------------------- the oracle
my %log;         # id -> [outcome, seen_completed, seen_aborted, seen_unfinished, seen_deferred, claims]
for my $line (split /\n/, $node->safe_psql('postgres',
		"SELECT id, outcome, seen_completed, seen_aborted, seen_unfinished, seen_deferred FROM dag_log"))
{
	my ($id, $oc, $c, $a, $u, $d) = split /\|/, $line;
	$log{$id}{claims}++;
	@{ $log{$id} }{qw(outcome c a u d)} = ($oc, $c, $a, $u, $d);
}

# Expected final state, in topological (insertion) order:
#   completed / aborted: it ran, and its worker chose so;
#   cascaded: aborted because an all_success predecessor aborted;
#   skipped: its rule can no longer be met.
my %want;
for my $id (@order)
{
	my @p = @{ $pred{$id} };
	my $ok = grep { $want{$_} eq 'completed' } @p;
	my $bad = @p - $ok;
	my $runs;
	if (!@p) { $runs = 1; }
	elsif ($rule{$id} eq 'all_success') { $runs = $bad == 0 ? 1 : 'cascaded'; }
	elsif ($rule{$id} eq 'all_done') { $runs = 1; }
	elsif ($rule{$id} eq 'one_failed') { $runs = $bad > 0 ? 1 : 'skipped'; }
	else { $runs = $ok > 0 ? 1 : 'skipped'; }
	if ($runs eq '1')
	{
		# it must have run: what its worker chose (undef: it never ran)
		$want{$id} = defined $log{$id} ? $log{$id}{outcome} : 'ran (never claimed)';
	}
	else
	{
		$want{$id} = $runs;
	}
}

my %got;
for my $line (split /\n/, $node->safe_psql('postgres', q{
		SELECT id, CASE WHEN status_code = 'aborted' AND status = 'skipped' THEN 'skipped'
		                WHEN status_code = 'aborted' AND status LIKE 'aborted: predecessor %' THEN 'cascaded'
		                ELSE status_code::text END
		  FROM taskq.tasks WHERE action = 'dag'}))
{
	my ($id, $s) = split /\|/, $line;
	$got{$id} = $s;
}

my (@wrong, @early, @twice, @claimed_not_run);
for my $id (@order)
{
	my $g = $got{$id} // 'missing';
	push @wrong, "$id ($rule{$id} after @{$pred{$id}}): $g, want $want{$id}" if $g ne $want{$id};
	next unless $log{$id};
	push @twice, $id if $log{$id}{claims} > 1;
	push @claimed_not_run, $id if $want{$id} eq 'skipped' || $want{$id} eq 'cascaded';
	# what the claim could count: every abort, and the completions whose
	# signal was no longer deferred (a deferred one arrives when folded)
	my ($c, $a, $u, $d) = @{ $log{$id} }{qw(c a u d)};
	my $n = @{ $pred{$id} };
	my $met = !$n
	  || ($rule{$id} eq 'all_success' && $u == 0 && $a == 0 && $d == 0)
	  || ($rule{$id} eq 'all_done' && $u == 0 && $d == 0)
	  || ($rule{$id} eq 'one_failed' && $a > 0)
	  || ($rule{$id} eq 'one_success' && $c - $d > 0);
	push @early, "$id ($rule{$id}): claimed seeing $c completed ($d of them deferred), $a aborted, $u unfinished"
	  unless $met;
}
is(scalar(@wrong), 0, 'every task ends as the oracle says') or diag(join("\n", @wrong[ 0 .. ($#wrong < 20 ? $#wrong : 19) ]));
is(scalar(@early), 0, 'no task was claimed before its rule was met') or diag(join("\n", @early[ 0 .. ($#early < 20 ? $#early : 19) ]));
is(scalar(@twice), 0, 'no task was claimed twice') or diag("@twice");
is(scalar(@claimed_not_run), 0, 'no skipped or cascaded task was ever claimed') or diag("@claimed_not_run");

my %count;
$count{ $got{$_} // 'missing' }++ for @order;
note join(', ', map { "$_: $count{$_}" } sort keys %count);
ok(($count{skipped} // 0) > 0 && ($count{cascaded} // 0) > 0 && ($count{completed} // 0) > 0,
	'the run skipped, cascaded and completed tasks');

# The deferred signals of the wide joins were all folded: nothing left.
# The workers stop when every task is finished, which may be before the
# background worker folded the last deferrals: a successor decided by an
# abort (one_failed) or already skipped finishes without waiting for the
# completions deferred to it.  So wait for the fold, then check it.
$node->poll_query_until('postgres',
	'SELECT coalesce(sum(signals), 0) = 0 FROM taskq.deferred_signals')
  or diag('the background worker did not fold the deferred signals in time');
is($node->safe_psql('postgres', 'SELECT coalesce(sum(signals), 0) FROM taskq.deferred_signals'),
	'0', 'no deferred signal left');
# Every count is exact: each finished predecessor counted once.
is($node->safe_psql('postgres', q{
	SELECT count(*) FROM taskq.tasks AS t
	 WHERE t.action = 'dag'
	   AND t.num_completed + t.num_failed <> t.total_dependencies}), '0',
	'every task counted each predecessor once');

# ---------------------------------------------------------------- graphs
SKIP:
{
	my $dot = `command -v dot 2>/dev/null`;
	chomp $dot;
	skip 'dot (graphviz) is not installed', 2 unless $dot;
	# every graph in one query, then every DOT graph through one dot run
	# (dot renders each graph of its input: one <svg> each)
	my $sep = "\n-- next graph --\n";
	my @g = split /\Q$sep\E/, $node->safe_psql('postgres', qq{
		SELECT string_agg(s.w || E'\\t' || taskq.task_graph(s.w, 'dot') || E'\\t'
		                  || taskq.task_graph(s.w, 'mermaid'), E'$sep' ORDER BY s.w)
		  FROM (SELECT DISTINCT workflow AS w FROM taskq.tasks WHERE action = 'dag') AS s});
	my ($bad_mermaid, $all_dot) = (0, '');
	my %size = map { $_->[0] => scalar(@{ $_->[1] }) } @dags;
	for my $one (@g)
	{
		my ($w, $dotg, $mer) = split /\t/, $one, 3;
		$all_dot .= $dotg;
		my $nodes = () = $mer =~ /:::/g;
		$bad_mermaid++ unless $mer =~ /^flowchart LR\n/ && $nodes == $size{$w};
	}
	my ($out, $err);
	my $ok = IPC::Run::run([ $dot, '-Tsvg' ], '<', \$all_dot, '>', \$out, '2>', \$err);
	my $svgs = () = $out =~ /<svg /g;
	my $nodes = () = $out =~ /<g id="node/g;
	ok($ok && $err eq '' && @g == @dags && $svgs == @dags && $nodes == @order && !$bad_mermaid,
		sprintf('dot -Tsvg renders all %d task graphs (%d nodes), the Mermaid ones list every task', $svgs, $nodes))
	  or diag("dot: $err; graphs " . scalar(@g) . ", svgs $svgs, nodes $nodes, bad mermaid $bad_mermaid");
	my $g = $node->safe_psql('postgres', "SELECT taskq.task_graph('d1')");
	like($g, qr/^digraph "d1" \{/, 'a DOT graph');
}

$node->stop;
done_testing();
