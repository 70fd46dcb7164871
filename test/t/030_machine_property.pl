# Property test of state machines: random machines with loops,
# continuations and fan-ins (TaskqMachine.pm), run by several racing
# workers, each its own connection, that give steps back (pending) and roll
# finished steps back (the lease then expires) at random; some runs with
# restart_each_step (every step finished twice, the first discarded) or
# fail_at_steps (a state's first finish turned into a retry).  After the
# workers drained everything, the oracle (written from the definitions and
# the scripts alone) checks that every run ended in the state its events
# dictate, its context holds exactly its path, every instance that entered
# a fan-in state was in exactly one batch and every continuation forked
# once per visit.
#
# TASKQ_PROP_ROUNDS (default 2) rounds of TASKQ_PROP_ROOTS (default 40)
# root runs over TASKQ_PROP_MACHINES (default 4) machines with
# TASKQ_PROP_WORKERS (default 4) workers; TASKQ_PROP_SEED fixes the seed.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use TaskqTAP;
use TaskqMachine;

my $rounds   = $ENV{TASKQ_PROP_ROUNDS}   // 2;
my $nroots   = $ENV{TASKQ_PROP_ROOTS}    // 40;
my $nmach    = $ENV{TASKQ_PROP_MACHINES} // 4;
my $nworkers = $ENV{TASKQ_PROP_WORKERS}  // 4;
my $seed     = $ENV{TASKQ_PROP_SEED}     // int(time() * 1000) % 1_000_000;
note "seed $seed (TASKQ_PROP_SEED=$seed repeats this run)";
srand($seed);

my $node = taskq_node('machine_property',
	conf => "taskq.worker_naptime = '100ms'\nmax_connections = 40\n");
$node->safe_psql('postgres', machine_setup_sql());

for my $round (1 .. $rounds)
{
	my (%machines, %runs);
	for my $m (1 .. $nmach)
	{
		$machines{"p$round-m$m"} = gen_machine($m);
	}
	my @names = sort keys %machines;
	for my $r (1 .. $nroots)
	{
		my $m = $names[ int(rand(@names)) ];
		my %run = (machine => $m, k => 1 + int(rand(3)),
			script => TaskqMachine::gen_script($machines{$m}, 3 + int(rand(6))));
		my $x = rand();
		if ($x < 0.2)
		{
			$run{debug} = { restart_each_step => JSON::PP::true };
		}
		elsif ($x < 0.35)
		{
			my $n = scalar @{ $machines{$m}{states} };
			$run{debug} = { fail_at_steps => { 'S' . int(rand($n)) => 'retry' } };
		}
		$runs{"p$round-r$r"} = \%run;
	}
	my $t0 = time;
	define_and_start($node, \%machines, \%runs);
	my $w = start_workers($node, $nworkers, tag => "p$round-w", seconds => 90,
		pending => 0.1, crash => 0.05);
	my $notes = finish_workers($w);
	my ($steps, $pend, $crash) = (0, 0, 0);
	while ($notes =~ /worker \S+ steps (\d+) pending (\d+) crashed (\d+)/g)
	{
		$steps += $1;
		$pend += $2;
		$crash += $3;
	}
	note sprintf("round %d: %d steps, %d given back, %d rolled back, in %.1f s",
		$round, $steps, $pend, $crash, time - $t0);
	cmp_ok($steps, '>', 0, "round $round: the workers made $steps steps");
	is(() = $notes =~ /worker \S+ steps/g, $nworkers, "round $round: every worker ended by itself")
	  or diag $notes;

	my $errs = $node->safe_psql('postgres',
		"SELECT coalesce(string_agg(DISTINCT sqlstate || ' ' || message || ' ' || coalesce(detail, ''), E'\\n'), '') FROM public.prop_err");
	is($errs, '', "round $round: no worker call failed");

	check_runs($node, \%machines, \%runs, "round $round");
	# the next round starts afresh
	$node->safe_psql('postgres',
		'DELETE FROM taskq.runs; DELETE FROM taskq.tasks; TRUNCATE public.prop_err, public.prop_seen, public.prop_effects');
}

# no internal error anywhere in the server's log
my $log = slurp_file($node->logfile);
unlike($log, qr/ERROR:  XX000|TRAP:|server process .* was terminated/,
	'the server logged no internal error and no crash');

$node->stop;
done_testing();
