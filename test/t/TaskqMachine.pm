# Random state machines for the property and crash tests of taskq's state
# machines (test/t/030_machine_property.pl, test/t/031_machine_crash.pl).
#
# A machine has 3-6 states S0..Sn-1 in a chain ("next" from Sk to Sk+1),
# extra random transitions (back edges make loops), S0 initial and often a
# continuation state, one fan-in state, the last state (and some others)
# final.  Each run carries its script in its context: the events to send,
# one per visit, a JSON null for the end in a final state.  The worker (a
# PL/pgSQL procedure, one psql process per worker) knows nothing of the
# machines: it reads the event for the visit from the context, forks a
# continuation while the cursor is below the context's k, reads a fan-in
# batch with fan_in_contexts and goes on with the first instance's script,
# and appends "<run>:<state>[:<cursor>]" to the context's log.  It gives
# steps back (pending) and rolls a finished step back (a crash before the
# commit: the lease expires) at random.
#
# The oracle (check_runs) is written here from the definitions and the
# scripts alone: the states each run passes through follow from its script;
# a run ends succeeded in the state its script ends in, or merged in a
# fan-in state; its log is exactly its path (nothing lost, nothing twice);
# every instance that entered a fan-in state was in exactly one batch; each
# continuation visit below k forked exactly once.
package TaskqMachine;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;

our @EXPORT = qw(
  machine_setup_sql gen_machine gen_script define_and_start
  start_workers finish_workers check_runs
);

my $JSON = JSON::PP->new->canonical;

# The tables the workers write and the worker procedure.
sub machine_setup_sql
{
	return <<'SQL';
CREATE TABLE public.prop_seen (batch text, run text, i int, n int, body_run text, worker text);
CREATE TABLE public.prop_err (worker text, sqlstate text, message text, detail text);
CREATE TABLE public.prop_effects (run text, i int, state text, task text, worker text,
                                  PRIMARY KEY (run, i));
CREATE PROCEDURE public.prop_worker(me text, seed float8, p_pending float8, p_crash float8,
                                    p_until timestamptz, p_effects bool DEFAULT false)
LANGUAGE plpgsql AS $$
DECLARE
  t record; ctx jsonb; st text; i int; ev text; cur text; c int; k int; me_run text; d text;
  done bool;
  steps int := 0; pend int := 0; crash int := 0;
BEGIN
  PERFORM setseed(seed);
  LOOP
    EXIT WHEN clock_timestamp() > p_until;
    t := NULL;
    -- an empty claim waits up to 20 ms for work (no sleep between claims)
    SELECT o.id, o.token, o.body INTO t FROM taskq.own_tasks(me, 1, NULL, '1 s', interval '20 ms') AS o;
    COMMIT;
    IF t.id IS NULL THEN
      EXIT WHEN NOT EXISTS (SELECT 1 FROM taskq.runs WHERE finished_at IS NULL);
      CONTINUE;
    END IF;
    IF random() < p_pending THEN
      PERFORM taskq.return_task(t.id, t.token, 'flaky ' || me, 'pending');
      COMMIT;
      pend := pend + 1;
      CONTINUE;
    END IF;
    done := false;
    BEGIN
      ctx := t.body->'context';
      st := t.body->>'state';
      me_run := t.body->>'run';
      IF t.body ? 'fan_in' THEN
        INSERT INTO public.prop_seen
          SELECT t.id, f.run, (f.context->>'i')::int, f.n, me_run, me
            FROM taskq.fan_in_contexts(t.id, t.token) WITH ORDINALITY AS f(run, context, n);
        SELECT f.context INTO ctx FROM taskq.fan_in_contexts(t.id, t.token) AS f LIMIT 1;
      END IF;
      i := (ctx->>'i')::int;
      k := (ctx->>'k')::int;
      cur := st;
      IF t.body ? 'cursor' THEN
        c := coalesce((t.body->>'cursor')::int, 0);
        cur := st || ':' || c;
        IF c < k - 1 THEN
          PERFORM taskq.continue_machine(t.id, t.token, (c + 1)::text);
        END IF;
      END IF;
      ev := ctx->'script'->>i;
      ctx := ctx || jsonb_build_object('i', i + 1,
                                       'log', (ctx->'log') || to_jsonb(me_run || ':' || cur));
      IF p_effects THEN
        INSERT INTO public.prop_effects VALUES (me_run, i, st, t.id, me);
      END IF;
      PERFORM taskq.transition(t.id, t.token, ev, ctx);
      IF random() < p_crash THEN
        RAISE EXCEPTION 'simulated crash before the commit';
      END IF;
      steps := steps + 1;
      done := true;
    EXCEPTION
      WHEN raise_exception THEN
        crash := crash + 1;
      WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS d = PG_EXCEPTION_DETAIL;
        INSERT INTO public.prop_err VALUES (me, SQLSTATE, SQLERRM, d);
    END;
    COMMIT;
    IF p_effects AND done THEN
      RAISE NOTICE 'ack % %', me_run, i;
    END IF;
  END LOOP;
  RAISE NOTICE 'worker % steps % pending % crashed %', me, steps, pend, crash;
END $$;
SQL
}

# A random machine (a Perl structure of its JSON definition).
sub gen_machine
{
	my ($m) = @_;
	my $n = 3 + int(rand(4));
	my @s = map { { name => "S$_", action => "m$m-s$_", transitions => [] } } 0 .. $n - 1;
	$s[0]{initial} = JSON::PP::true;
	$s[0]{continuation} = JSON::PP::true if rand() < 0.75;
	my $fi = 1 + int(rand($n - 1));
	$s[$fi]{fan_in} = 0.2 + int(rand(3)) / 10;
	$s[ $n - 1 ]{final} = JSON::PP::true;
	for my $k (1 .. $n - 2)
	{
		$s[$k]{final} = JSON::PP::true if rand() < 0.25;
	}
	for my $k (0 .. $n - 2)
	{
		push @{ $s[$k]{transitions} }, { event => 'next', to => 'S' . ($k + 1) };
	}
	for my $k (0 .. $n - 1)
	{
		for my $e (1 .. int(rand(3)))
		{
			push @{ $s[$k]{transitions} }, { event => "e$e", to => 'S' . int(rand($n)) };
		}
	}
	my %def = (states => \@s, retry => { delay => '20 ms', factor => 1 });
	# a state of its own retry policy and tries now and then
	$s[ int(rand($n)) ]{retry} = { delay => '10 ms', factor => 2, max_delay => '40 ms' }
	  if rand() < 0.5;
	return \%def;
}

sub state_index { my ($name) = @_; return substr($name, 1); }

# A random walk through machine $def: the events, a JSON null at the end.
# At most $len events before it heads for the last state, at most two
# visits of a continuation state (forks multiply).
sub gen_script
{
	my ($def, $len) = @_;
	my $st = $def->{states};
	my ($s, @ev) = (0);
	my $cont = $st->[0]{continuation} ? 1 : 0;
	for (;;)
	{
		my $cur = $st->[$s];
		if ($cur->{final} && (rand() < 0.3 || @ev >= $len))
		{
			push @ev, undef;
			last;
		}
		my @opts = @{ $cur->{transitions} };
		@opts = grep { $_->{event} eq 'next' } @opts if @ev >= $len;
		@opts = grep { !($st->[ state_index($_->{to}) ]{continuation} && $cont >= 2) } @opts;
		@opts = grep { $_->{event} eq 'next' } @{ $cur->{transitions} } unless @opts;
		my $t = $opts[ int(rand(@opts)) ];
		push @ev, $t->{event};
		$s = state_index($t->{to});
		$cont++ if $st->[$s]{continuation};
	}
	return \@ev;
}

# The states a script passes through (the last is where it ends).
sub script_path
{
	my ($def, $script) = @_;
	my @path = ('S0');
	for my $e (@$script)
	{
		last unless defined $e;
		my ($t) = grep { $_->{event} eq $e } @{ $def->{states}[ state_index($path[-1]) ]{transitions} };
		die "script event $e not in state $path[-1]" unless $t;
		push @path, $t->{to};
	}
	return @path;
}

# Define the machines and start the runs: $runs->{id} = {machine, script,
# k, debug}.
sub define_and_start
{
	my ($node, $machines, $runs) = @_;
	my $sql = "BEGIN;\n";
	for my $m (sort keys %$machines)
	{
		$sql .= "SELECT taskq.define_machine('$m', '" . $JSON->encode($machines->{$m}) . "');\n";
	}
	for my $id (sort keys %$runs)
	{
		my $r = $runs->{$id};
		my $ctx = $JSON->encode(
			{ i => 0, k => $r->{k}, root => $id, log => [], script => $r->{script} });
		my $debug = $r->{debug} ? "'" . $JSON->encode($r->{debug}) . "'" : 'NULL';
		$sql .= "SELECT taskq.start_machine('$r->{machine}', '$id', '$ctx', $debug);\n";
	}
	$node->safe_psql('postgres', "$sql COMMIT;");
}

# Start $n workers (psql processes running prop_worker); returns handles.
sub start_workers
{
	my ($node, $n, %o) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir();
	my @w;
	for my $k (1 .. $n)
	{
		my $me = ($o{tag} // 'w') . $k;
		my $sql = sprintf(
			"CALL public.prop_worker('%s', %.4f, %s, %s, clock_timestamp() + interval '%d s', %s);",
			$me, rand() * 2 - 1, $o{pending} // 0.1, $o{crash} // 0.05,
			$o{seconds} // 120, $o{effects} ? 'true' : 'false');
		local %ENV = $node->_get_env();
		my $h = IPC::Run::start(
			[ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c', $sql ],
			'<', \undef, '>', "$dir/$me.out", '2>', "$dir/$me.err",
			IPC::Run::timeout(($o{seconds} // 120) + 60));
		push @w, { me => $me, h => $h, err => "$dir/$me.err" };
	}
	return \@w;
}

# Wait for the workers; returns their stderr (notices) joined.
sub finish_workers
{
	my ($w, %o) = @_;
	my $all = '';
	for my $x (@$w)
	{
		$x->{h}->kill_kill if $o{kill};
		eval { $x->{h}->finish; };
		open(my $f, '<', $x->{err}) or next;
		local $/;
		$all .= <$f> // '';
		close $f;
	}
	return $all;
}

# The oracle.  Returns the number of failed checks.
sub check_runs
{
	my ($node, $machines, $runs, $label) = @_;
	my $bad = 0;
	my @err;

	my $left = $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.runs WHERE finished_at IS NULL");
	$bad += !is($left, '0', "$label: every run finished");
	my $steps_left = $node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.tasks WHERE status_code < 'completed'");
	$bad += !is($steps_left, '0', "$label: no step task is left unfinished");

	my %run;
	for my $l (split /\n/,
		$node->safe_psql('postgres',
			"SELECT id, coalesce(parent, '-'), status, state, context FROM taskq.runs"))
	{
		my ($id, $parent, $status, $state, $ctx) = split /\|/, $l, 5;
		$run{$id} = { parent => $parent, status => $status, state => $state,
			ctx => $JSON->decode($ctx) };
	}
	my %children;
	push @{ $children{ $run{$_}{parent} } }, $_ for grep { $run{$_}{parent} ne '-' } keys %run;

	# each run: its path follows from its script
	my (%expect_seen, %forks_expected);
	my ($succeeded, $merged) = (0, 0);
	for my $id (sort keys %run)
	{
		my $r = $run{$id};
		my $root = $r->{ctx}{root};
		my $spec = $runs->{$root};
		unless ($spec)
		{
			push @err, "run $id has no known root ($root)";
			next;
		}
		my $def = $machines->{ $spec->{machine} };
		my @path = script_path($def, $spec->{script});
		my @log = @{ $r->{ctx}{log} };
		my $i = $r->{ctx}{i};
		push @err, "run $id: context i=$i but log has " . scalar(@log) . ' entries'
		  unless $i == @log;
		for my $j (0 .. $#log)
		{
			my ($who, $state, $cursor) = split /:/, $log[$j];
			push @err, "run $id: log entry $j is $log[$j], its script says $path[$j]"
			  unless defined $path[$j] && $state eq $path[$j];
			next unless $who eq $id;
			my $st = $def->{states}[ state_index($state) ];
			$expect_seen{"$id $j"} = 1 if $st->{fan_in};
			$forks_expected{$id}++ if defined $cursor && $cursor < $spec->{k} - 1;
		}
		if ($r->{status} eq 'succeeded')
		{
			$succeeded++;
			push @err, "run $id succeeded in $r->{state} after " . scalar(@log)
			  . " steps, its script ends in $path[-1] after " . scalar(@path) . ' steps'
			  unless @log == @path && $r->{state} eq $path[-1];
		}
		elsif ($r->{status} eq 'merged')
		{
			$merged++;
			my $st = $def->{states}[ state_index($r->{state}) ];
			push @err, "run $id merged in $r->{state} (not a fan-in state, or not where its script is)"
			  unless $st->{fan_in} && defined $path[@log] && $path[@log] eq $r->{state};
			$expect_seen{ $id . ' ' . scalar(@log) } = 1;
		}
		else
		{
			push @err, "run $id ended $r->{status} in $r->{state}";
		}
	}
	for my $id (sort keys %run)
	{
		my $got = scalar @{ $children{$id} // [] };
		my $want = $forks_expected{$id} // 0;
		push @err, "run $id forked $got runs, its continuation visits ask for $want"
		  unless $got == $want;
	}

	# fan-in: each instance in exactly one batch; the batch's body names its first
	my %seen;
	for my $l (split /\n/,
		$node->safe_psql('postgres',
			"SELECT run, i, count(DISTINCT batch), bool_and(n > 1 OR run = body_run)"
			  . " FROM public.prop_seen GROUP BY run, i"))
	{
		my ($id, $i, $nb, $first_ok) = split /\|/, $l;
		$seen{"$id $i"} = 1;
		push @err, "instance $id (step $i) was in $nb batches" unless $nb == 1;
		push @err, "instance $id (step $i) first in its batch, but the batch's body names another run"
		  unless $first_ok eq 't';
	}
	for my $k (sort keys %expect_seen)
	{
		push @err, "instance $k entered a fan-in state but no batch counted it" unless $seen{$k};
	}
	for my $k (sort keys %seen)
	{
		push @err, "instance $k was counted in a batch it never entered" unless $expect_seen{$k};
	}

	diag($_) for @err[ 0 .. ($#err < 14 ? $#err : 14) ];
	$bad += !is(scalar @err, 0,
		"$label: every run ended as its script dictates ($succeeded succeeded, $merged merged, "
		  . scalar(keys %run) . ' runs from ' . scalar(keys %$runs) . ' roots, '
		  . scalar(keys %expect_seen) . ' fan-in arrivals, each in one batch)');
	return $bad;
}

1;
