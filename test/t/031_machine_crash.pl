# State machines under kill -9.  Random machines with loops,
# continuations and fan-ins (TaskqMachine.pm) are run by racing workers,
# each its own connection, that record every step's effect in the step's
# own transaction (public.prop_effects, primary key run + step: a committed
# step done again would fail) and say "ack" only after the commit.  The
# postmaster is killed with SIGKILL in the middle, several times, new runs
# starting each time.  After each restart every acknowledged step is there;
# at the end, with the workers draining everything, every run finished as
# its script dictates (the oracle of the property test), every step that
# committed did so exactly once (the effects are exactly the steps of the
# runs' logs) and the task table's invariants hold.
#
# TASKQ_MACHINE_CRASHES (default 4) kills; TASKQ_PROP_SEED fixes the seed.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;
use TaskqMachine;

my $crashes = $ENV{TASKQ_MACHINE_CRASHES} // 4;
my $seed = $ENV{TASKQ_PROP_SEED} // int(time() * 1000) % 1_000_000;
note "seed $seed (TASKQ_PROP_SEED=$seed repeats this run)";
srand($seed);

my $node = taskq_node('machine_crash',
	conf => "taskq.worker_naptime = '100ms'\nmax_connections = 40\n");
$node->safe_psql('postgres', machine_setup_sql());

my %machines = map { ("c-m$_" => gen_machine($_)) } 1 .. 4;
my @names = sort keys %machines;
my %runs;
my %acked;

for my $c (1 .. $crashes)
{
	my %new;
	for my $r (1 .. 80)
	{
		my $m = $names[ int(rand(@names)) ];
		$new{"c$c-r$r"} = { machine => $m, k => 1 + int(rand(3)),
			script => TaskqMachine::gen_script($machines{$m}, 4 + int(rand(6))) };
	}
	define_and_start($node, { map { $_ => $machines{$_} } @names }, \%new) if $c == 1;
	define_and_start($node, {}, \%new) if $c > 1;
	%runs = (%runs, %new);

	my $w = start_workers($node, 4, tag => "c$c-w", seconds => 60, effects => 1,
		pending => 0.1, crash => 0.05);
	usleep(int((0.5 + rand(1.0)) * 1_000_000));
	my $left = kill9_and_wait($node);
	is($left, 0, "crash $c: every server process left after the postmaster's SIGKILL");
	my $notes = finish_workers($w);
	my $n = 0;
	while ($notes =~ /NOTICE:  ack (\S+) (\d+)/g)
	{
		$acked{"$1 $2"} = 1;
		$n++;
	}
	cmp_ok($n, '>', 10, "crash $c: the workers had $n steps acknowledged before the SIGKILL");
	my $started = 0;
	for (1 .. 5)
	{
		last if ($started = $node->start(fail_ok => 1));
		sleep 1;
	}
	ok($started, "crash $c: the server restarts");
	my $unfinished = $node->safe_psql('postgres',
		'SELECT count(*) FROM taskq.runs WHERE finished_at IS NULL');
	cmp_ok($unfinished, '>', 0, "crash $c: the SIGKILL came in the middle ($unfinished runs unfinished)");

	my %have = map { $_ => 1 } split /\n/,
	  $node->safe_psql('postgres', "SELECT run || ' ' || i FROM public.prop_effects");
	my @lost = grep { !$have{$_} } sort keys %acked;
	diag("acknowledged step lost: $_") for @lost[ 0 .. ($#lost < 9 ? $#lost : 9) ];
	is(scalar @lost, 0, "crash $c: every acknowledged step is there (" . scalar(keys %acked) . ')');
}

# Drain: the leases the crashes left expire (the worker requeues them),
# then the workers finish every run.
$node->safe_psql('postgres',
	"UPDATE taskq.tasks SET action_deadline = now() - interval '1 s' WHERE status_code = 'in_progress'");
my $w = start_workers($node, 4, tag => 'drain-w', seconds => 60, effects => 1,
	pending => 0.05, crash => 0.02);
my $notes = finish_workers($w);
is(() = $notes =~ /worker \S+ steps/g, 4, 'the draining workers ended by themselves')
  or diag $notes;
is( $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(DISTINCT sqlstate || ' ' || message, E'\\n'), '') FROM public.prop_err"),
	'', 'no worker call failed (a step done twice would fail on its effect)');

check_runs($node, \%machines, \%runs, 'after the crashes');

# The effects are exactly the steps in the runs' logs: each committed once.
my $diff = $node->safe_psql('postgres', q{
WITH logged AS (
  SELECT r.id AS run, (e.n - 1)::int AS i
    FROM taskq.runs AS r, jsonb_array_elements_text(r.context->'log') WITH ORDINALITY AS e(entry, n)
   WHERE split_part(e.entry, ':', 1) = r.id)
SELECT count(*) FROM (
  (SELECT run, i FROM logged EXCEPT ALL SELECT run, i FROM public.prop_effects)
  UNION ALL
  (SELECT run, i FROM public.prop_effects EXCEPT ALL SELECT run, i FROM logged)) AS d});
is($diff, '0', 'every step in a run\'s log committed its effect exactly once, and no other did');
check_invariants($node, 'after the crashes');

$node->stop;
done_testing();
