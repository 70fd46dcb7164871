# Map states of state machines, by property and under kill -9.
#
# max_parallel by property: 6 racing workers claim the items of two runs
# whose map state allows 3 items at once, hold each a moment, then
# complete it (some abort it: the next item still starts).  Each claim and
# each end is logged in its own transaction, whose commit time
# (track_commit_timestamp) is the instant the lease began or ended; an
# oracle written here sweeps those instants per run and requires that at
# no instant more than 3 items of a run held a lease, that 3 was reached
# (the test can see a breach), that every item finished, and that each run
# moved exactly once with its results in item order.
#
# kill -9: a map of 100 items (more than 64, so the items' signals to the
# hidden join are deferred and folded by the background worker).  Items
# are completed one transaction each, the last just before the
# postmaster's SIGKILL; after the restart the rest are completed: the run
# moves once, every item counted exactly once (the join's counts), the
# results complete and in item order.
#
# TASKQ_MAP_SEED sets the random seed (printed, to replay a failure).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;
use Time::HiRes qw(time usleep);

my $seed = $ENV{TASKQ_MAP_SEED} // int(rand(1_000_000));
note "seed: $seed (TASKQ_MAP_SEED=$seed replays it)";
srand($seed);
my ($nworkers, $nitems, $window) = (6, 60, 3);

my $node = taskq_node('map',
	conf => "max_connections = 40\ntrack_commit_timestamp = on\ntaskq.worker_naptime = '100ms'\n");

$node->safe_psql('postgres', q{
CREATE TABLE map_log (n bigserial PRIMARY KEY, run text, id text,
                      claim_xid bigint, end_xid bigint, aborted boolean);
CREATE FUNCTION map_xid(x bigint) RETURNS xid LANGUAGE sql AS
  $$ SELECT (x % 4294967296)::text::xid $$;
CREATE PROCEDURE map_worker(w int, seed float8) LANGUAGE plpgsql AS $$
DECLARE
    t record;
    ln bigint;
    ab boolean;
    deadline timestamptz := clock_timestamp() + interval '240 s';
BEGIN
    PERFORM setseed(seed);
    LOOP
        SELECT o.id, o.token, o.body INTO t
          FROM taskq.own_tasks('w' || w, 1, ARRAY['pitem'], interval '1 hour') AS o;
        IF t.id IS NULL THEN
            COMMIT;
            EXIT WHEN NOT EXISTS (SELECT FROM taskq.tasks AS x
                                   WHERE x.action = 'pitem' AND x.status_code < 'completed');
            EXIT WHEN clock_timestamp() > deadline;
            PERFORM pg_sleep(0.001);
            CONTINUE;
        END IF;
        INSERT INTO map_log (run, id, claim_xid) VALUES (t.body->>'run', t.id, txid_current())
          RETURNING n INTO ln;
        COMMIT;     -- the lease begins
        PERFORM pg_sleep(0.004 + random() * 0.012);
        ab := (t.body->>'item')::int % 11 = 5;
        UPDATE map_log SET end_xid = txid_current(), aborted = ab WHERE n = ln;
        IF ab THEN
            PERFORM taskq.return_task(t.id, t.token, 'bad item', 'aborted');
        ELSE
            PERFORM taskq.return_task(t.id, t.token, NULL, 'completed', NULL,
                                      to_jsonb((t.body->>'item')::int * 2));
        END IF;
        COMMIT;     -- the lease ends
    END LOOP;
END $$;
SELECT taskq.define_machine('pmap', jsonb_build_object('states', jsonb_build_array(
  jsonb_build_object('name', 'M', 'action', null, 'initial', true, 'max_tries', 1,
    'map', jsonb_build_object('items', 'xs', 'action', 'pitem', 'max_parallel', 3),
    'transitions', jsonb_build_array(jsonb_build_object('event', 'mapped', 'to', 'E'),
                                     jsonb_build_object('event', 'map_failed', 'to', 'F'))),
  jsonb_build_object('name', 'E', 'action', 'pend', 'final', true),
  jsonb_build_object('name', 'F', 'action', 'pend', 'final', true))));
});

for my $r (1 .. 2)
{
	$node->safe_psql('postgres', qq{
		SELECT taskq.start_machine('pmap', 'p$r',
		  jsonb_build_object('xs', (SELECT jsonb_agg(i ORDER BY i) FROM generate_series(1, $nitems) AS i)))});
}
my $t0 = time;
my $failed = run_psql_workers($node, 300,
	map { sprintf('CALL map_worker(%d, %.6f)', $_, (($seed * 7919 + $_ * 104729) % 1_000_000) / 1_000_000) }
	  1 .. $nworkers);
is($failed, 0, sprintf('%d workers ran (%d s)', $nworkers, time - $t0));

# ---------------------------------------------------------------- the oracle
# an interval as "HH:MM:SS.ffffff" or "N days HH:MM:SS.ffffff": microseconds
sub interval_us
{
	my ($s) = @_;
	my $days = $s =~ s/^(\d+) days? // ? $1 : 0;
	my ($h, $m, $sec) = split /:/, $s;
	return (($days * 24 + $h) * 3600 + $m * 60) * 1_000_000 + int($sec * 1_000_000 + 0.5);
}

my %most_of;
for my $r (1 .. 2)
{
	my @ev;
	for my $line (split /\n/, $node->safe_psql('postgres', qq{
			SELECT pg_xact_commit_timestamp(map_xid(claim_xid)) - 'epoch'::timestamptz,
			       pg_xact_commit_timestamp(map_xid(end_xid)) - 'epoch'::timestamptz
			  FROM map_log WHERE run = 'p$r'}))
	{
		my ($c, $e) = split /\|/, $line;
		push @ev, [ interval_us($c), 1 ];
		push @ev, [ interval_us($e), -1 ] if defined $e && $e ne '';
	}
	# at one instant the ends come first
	@ev = sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } @ev;
	my ($held, $most, @over) = (0, 0);
	for my $e (@ev)
	{
		$held += $e->[1];
		$most = $held if $held > $most;
		push @over, "$held at $e->[0]" if $held > $window;
	}
	is(scalar(@over), 0, "run p$r: at no instant more than $window items held a lease")
	  or diag(join("\n", @over[ 0 .. ($#over < 20 ? $#over : 20) ]));
	$most_of{$r} = $most;
	is($node->safe_psql('postgres', qq{SELECT count(*) FROM map_log WHERE run = 'p$r'}),
		$nitems, "run p$r: every item claimed once");

	my $expect = join(',', map { $_ % 11 == 5 ? 'null' : $_ * 2 } 1 .. $nitems);
	my ($status, $state, $results, $next) = split /\|/, $node->safe_psql('postgres', qq{
		SELECT r.status, r.state, replace(r.context->>'results', ' ', ''),
		       (SELECT count(*) FROM taskq.tasks AS t WHERE t.workflow = r.id AND t.action = 'pend')
		  FROM taskq.runs AS r WHERE r.id = 'p$r'});
	is("$status $state $next", 'running F 1', "run p$r: moved once, on map_failed (some items aborted)");
	is($results, "[$expect]", "run p$r: the results in item order, null for the aborted");
}

ok(grep({ $_ == $window } values %most_of),
	"$window items of a run were held at once (the test can see a breach): "
	  . join(' ', map { "p$_=$most_of{$_}" } sort keys %most_of));

# ---------------------------------------------------------------- kill -9
my $n = 100;
$node->safe_psql('postgres', q{
CREATE TABLE crash_tok (id text PRIMARY KEY, token uuid);
SELECT taskq.define_machine('cmap', jsonb_build_object('states', jsonb_build_array(
  jsonb_build_object('name', 'M', 'action', null, 'initial', true,
    'map', jsonb_build_object('items', 'xs', 'action', 'citem'),
    'transitions', jsonb_build_array(jsonb_build_object('event', 'mapped', 'to', 'E'))),
  jsonb_build_object('name', 'E', 'action', 'cend', 'final', true))));
} . qq{
SELECT taskq.start_machine('cmap', 'c1',
  jsonb_build_object('xs', (SELECT jsonb_agg(i ORDER BY i) FROM generate_series(1, $n) AS i)));
INSERT INTO crash_tok SELECT o.id, o.token FROM taskq.own_tasks('cw', $n, ARRAY['citem'], interval '1 hour') AS o;
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM crash_tok'), $n, "the $n items are owned");

# half the items completed, each in its own transaction; the last right
# before the crash
my $done_sql = sub {
	my ($i) = @_;
	my $id = 'c1/' . ($i + 1);
	return qq{SELECT taskq.return_task('$id', (SELECT token FROM crash_tok WHERE id = '$id'),
	                 NULL, 'completed', NULL, to_jsonb($i * 3))};
};
$node->safe_psql('postgres', $done_sql->($_)) for 1 .. $n / 2;
my $left = kill9_and_wait($node);
is($left, 0, "every server process left after the postmaster's SIGKILL");
$node->start;
ok(defined wait_for_worker($node, 'postgres', 30), 'the background worker is back');
$node->safe_psql('postgres', $done_sql->($_)) for $n / 2 + 1 .. $n;

my $moved = 0;
for (1 .. 300)
{
	$moved = $node->safe_psql('postgres', q{SELECT state = 'E' FROM taskq.runs WHERE id = 'c1'}) eq 't';
	last if $moved;
	usleep(100_000);
}
ok($moved, 'the run moved on after the restart (the deferred signals folded)');
is($node->safe_psql('postgres', q{
	SELECT status_code || ' ' || num_completed || ' ' || num_failed || ' ' || num_signals
	  FROM taskq.tasks WHERE id = 'c1/1'}), "completed $n 0 0",
	'the join counted every item exactly once');
is($node->safe_psql('postgres', q{SELECT count(*) FROM taskq.tasks WHERE workflow = 'c1' AND action = 'cend'}),
	'1', 'the run moved exactly once');
is($node->safe_psql('postgres', q{SELECT replace(context->>'results', ' ', '') FROM taskq.runs WHERE id = 'c1'}),
	'[' . join(',', map { $_ * 3 } 1 .. $n) . ']', 'the results complete and in item order');

done_testing();
