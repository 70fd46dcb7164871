# Concurrency limits, by property: 8 racing workers claim tasks of an action
# limited to 4 in progress and 2 per concurrency key (keys K1..K6, and tasks
# without a key), hold them a moment, then complete them or release them.
# Each claim and each end is logged in its own transaction, whose commit
# time (track_commit_timestamp) is the instant the lease began or ended.
# An oracle written here, independently of the C code, sweeps those
# instants and requires that at no instant more tasks held a lease than the
# limits allow, in all and per key; and that every task was completed in
# the end (nothing starves).  Run once with the claim walk and once with
# the SQL claim (an admin's trigger on taskq.tasks turns the walk off), with
# waiting claims (woken by the ends that free slots) and plain ones.
#
# A rate limit, by property too: no window holds more claims than it allows,
# and the claims cannot go faster.
#
# Then the limits survive a crash exactly: they are read from the task
# rows, so after kill -9 and restart the two leases still held fill the
# limit of 2, and one freed lets exactly one more start.
#
# TASKQ_FLOW_SEED sets the random seed (printed, to replay a failure).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;
use Time::HiRes qw(usleep);

my $seed = $ENV{TASKQ_FLOW_SEED} // int(rand(1_000_000));
my $nworkers = 8;
my $ntasks = 240;
my ($max_running, $max_per_key) = (4, 2);
note "seed: $seed (TASKQ_FLOW_SEED=$seed replays it)";
srand($seed);

# (the background worker looks at the queue only when told, or once a minute)
my $node = taskq_node('flow',
	conf => "max_connections = 40\ntrack_commit_timestamp = on\ntaskq.worker_naptime = '1min'\n");

$node->safe_psql('postgres', q{
CREATE TABLE flow_log (n bigserial PRIMARY KEY, round int, id text, key text,
                       claim_xid bigint, end_xid bigint, released boolean);
CREATE FUNCTION flow_xid(x bigint) RETURNS xid LANGUAGE sql AS
  $$ SELECT (x % 4294967296)::text::xid $$;
CREATE PROCEDURE flow_worker(r int, w int, seed float8) LANGUAGE plpgsql AS $$
DECLARE
    t record;
    ln bigint;
    rel boolean;
    deadline timestamptz := clock_timestamp() + interval '240 s';
BEGIN
    PERFORM setseed(seed);
    LOOP
        -- half the workers wait for a freed slot, half look again
        SELECT o.id, o.token, k.concurrency_key AS key INTO t
          FROM taskq.own_tasks('w' || w, 1, ARRAY['lim'], interval '1 hour',
                               CASE WHEN w % 2 = 0 THEN interval '50 ms' END) AS o
          JOIN taskq.tasks AS k ON k.id = o.id;
        IF t.id IS NULL THEN
            COMMIT;
            EXIT WHEN NOT EXISTS (SELECT FROM taskq.tasks AS x
                                   WHERE x.action = 'lim' AND x.status_code < 'completed');
            EXIT WHEN clock_timestamp() > deadline;
            PERFORM pg_sleep(0.001);
            CONTINUE;
        END IF;
        IF random() < 0.1 THEN
            ROLLBACK;   -- a claim that rolls back held nothing
            CONTINUE;
        END IF;
        INSERT INTO flow_log (round, id, key, claim_xid) VALUES (r, t.id, t.key, txid_current())
          RETURNING n INTO ln;
        COMMIT;     -- the lease begins
        PERFORM pg_sleep(random() * 0.008);
        rel := random() < 0.2;
        UPDATE flow_log SET end_xid = txid_current(), released = rel WHERE n = ln;
        IF rel THEN
            PERFORM taskq.release_task(t.id, t.token);
        ELSE
            PERFORM taskq.return_task(t.id, t.token, NULL, 'completed');
        END IF;
        COMMIT;     -- the lease ends
    END LOOP;
END $$;
SELECT taskq.set_concurrency_limit('lim', 4, 2);
});

# One round: ntasks tasks, nworkers workers, the oracle over the log.
sub round_once
{
	my ($round) = @_;
	my @tasks;
	for my $i (1 .. $ntasks)
	{
		my $k = int(rand(7));
		push @tasks, { id => "r$round.$i", action => 'lim', priority => int(rand(3)),
			($k ? (concurrency_key => "K$k") : ()) };
	}
	$node->safe_psql('postgres', json_insert_sql(@tasks));
	my $t0 = time;
	my %r;
	$r{failed} = run_psql_workers($node, 300,
		map {
			sprintf('CALL flow_worker(%d, %d, %.6f)', $round, $_,
				(($seed * 7919 + $_ * 104729 + $round) % 1_000_000) / 1_000_000)
		} 1 .. $nworkers);
	$r{seconds} = time - $t0;

	# ---------------------------------------------------------------- the oracle
	# Events (instant, +1/-1, key); at one instant the ends come first (a
	# claim that counted a return committed after it).
	my @ev;
	$r{claims} = 0;
	for my $line (split /\n/, $node->safe_psql('postgres', qq{
			SELECT pg_xact_commit_timestamp(flow_xid(claim_xid)) - 'epoch'::timestamptz,
			       pg_xact_commit_timestamp(flow_xid(end_xid)) - 'epoch'::timestamptz,
			       coalesce(key, '')
			  FROM flow_log WHERE round = $round}))
	{
		my ($c, $e, $k) = split /\|/, $line;
		$r{claims}++;
		push @ev, [ interval_us($c), 1, $k ];
		push @ev, [ interval_us($e), -1, $k ] if $e ne '';
	}
	@ev = sort { $a->[0] <=> $b->[0] || $a->[1] <=> $b->[1] } @ev;
	my ($all, %per, %max_per, @over) = (0);
	my $max_all = 0;
	for my $e (@ev)
	{
		my ($at, $d, $k) = @$e;
		$all += $d;
		$per{$k} += $d if $k ne '';
		$max_all = $all if $all > $max_all;
		if ($k ne '')
		{
			$max_per{$k} = $per{$k} if $per{$k} > ($max_per{$k} // 0);
			push @over, "key $k: $per{$k} at $at" if defined $max_per_key && $per{$k} > $max_per_key;
		}
		push @over, "all: $all at $at" if defined $max_running && $all > $max_running;
	}
	@r{qw(max_all max_per over)} = ($max_all, \%max_per, \@over);
	$r{reached} = (!defined $max_running || $max_all == $max_running)
	  && (!defined $max_per_key || grep({ $_ == $max_per_key } values %max_per));
	$r{completed} = $node->safe_psql('postgres', qq{
			SELECT count(*) FILTER (WHERE status_code = 'completed') || '/' || count(*)
			  FROM taskq.tasks WHERE id LIKE 'r$round.%'});
	$r{unended} = $node->safe_psql('postgres',
		"SELECT count(*) FROM flow_log WHERE round = $round AND end_xid IS NULL");
	return \%r;
}

# A round, repeated (as rounds round + 10, + 20) while its workers never
# reached the limits: on a busy machine they may not overlap enough in a
# second, and a round that never reaches a limit could not see a breach.
# Every try is checked.
sub run_round
{
	my ($round, $label) = @_;
	my ($failed, $seconds, @over, $reached, @bad_completed, $unended) = (0, 0);
	for my $try (0 .. 2)
	{
		my $r = round_once($round + 10 * $try);
		$failed += $r->{failed};
		$seconds += $r->{seconds};
		push @over, @{ $r->{over} };
		push @bad_completed, $r->{completed} unless $r->{completed} eq "$ntasks/$ntasks";
		$unended += $r->{unended};
		note sprintf('%s (try %d): %d claims; most at once: %d in all, per key: %s', $label, $try + 1,
			$r->{claims}, $r->{max_all},
			join(' ', map { "$_=$r->{max_per}{$_}" } sort keys %{ $r->{max_per} }));
		$reached = $r->{reached};
		last if $reached;
	}
	is($failed, 0, sprintf('%s: %d workers ran (%d s)', $label, $nworkers, $seconds));
	is(scalar(@over), 0, sprintf('%s: at no instant more than %s leases, %s per key', $label,
			$max_running // 'any number of', $max_per_key // 'any number'))
	  or diag(join("\n", @over[ 0 .. ($#over < 20 ? $#over : 20) ]));
	ok($reached, "$label: the limits were reached (the test can see a breach)");
	is(join(',', @bad_completed), '', "$label: every task completed (none starved)");
	is($unended, 0, "$label: every claim ended");
}

# an interval as "HH:MM:SS.ffffff" or "N days HH:MM:SS.ffffff": microseconds
sub interval_us
{
	my ($s) = @_;
	my $days = $s =~ s/^(\d+) days? // ? $1 : 0;
	my ($h, $m, $sec) = split /:/, $s;
	return (($days * 24 + $h) * 3600 + $m * 60) * 1_000_000 + int($sec * 1_000_000 + 0.5);
}

run_round(1, 'claim walk');
$node->safe_psql('postgres', q{
CREATE FUNCTION flow_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$;
CREATE TRIGGER flow_noop BEFORE UPDATE ON taskq.tasks FOR EACH ROW EXECUTE FUNCTION flow_noop();
});
run_round(2, 'SQL claim');
$node->safe_psql('postgres', 'DROP TRIGGER flow_noop ON taskq.tasks');

# a limit per key only: a claim counts each key's running tasks when it
# first meets the key, not every running task of the action
$node->safe_psql('postgres', "SELECT taskq.set_concurrency_limit('lim', NULL, $max_per_key)");
$max_running = undef;
run_round(3, 'claim walk, a limit per key only');

# a limit in all only: claims take their slots in the action's slot book
# (shared memory) without the limiter lock; the book is rebuilt from the
# rows under the lock when it is full; rolled back claims leave it
$node->safe_psql('postgres', "SELECT taskq.set_concurrency_limit('lim', 4)");
($max_running, $max_per_key) = (4, undef);
run_round(4, 'claim walk, a limit in all only');
$node->safe_psql('postgres', 'CREATE TRIGGER flow_noop BEFORE UPDATE ON taskq.tasks FOR EACH ROW EXECUTE FUNCTION flow_noop()');
run_round(5, 'SQL claim, a limit in all only');
$node->safe_psql('postgres', 'DROP TRIGGER flow_noop ON taskq.tasks');

# ---------------------------------------------------------------- rate
# 5 claims per 300 ms, 60 tasks, the 8 workers again (half waiting, woken
# by the background worker when a window reopens).  Each claim is logged
# with the clock before and after own_tasks: its true instant lies between.
# A breach is certain where 6 claims' intervals all lie within less than
# 300 ms; that none does is checked.  And the claims cannot have gone
# faster than the limit: 60 claims take at least 11 windows.
my ($rate_max, $rate_ms, $nrate) = (5, 300, 60);
ok(defined wait_for_worker($node, 'postgres', 30), 'the database has a background worker');
$node->safe_psql('postgres', qq{
CREATE TABLE rate_log (id text, t0 timestamptz, t1 timestamptz);
CREATE PROCEDURE rate_worker(w int) LANGUAGE plpgsql AS \$\$
DECLARE
    t record;
    t0 timestamptz;
    deadline timestamptz := clock_timestamp() + interval '120 s';
BEGIN
    LOOP
        t0 := clock_timestamp();
        SELECT o.id, o.token INTO t
          FROM taskq.own_tasks('r' || w, 1, ARRAY['rl'], interval '1 hour',
                               CASE WHEN w % 2 = 0 THEN interval '2 s' END) AS o;
        IF t.id IS NULL THEN
            COMMIT;
            EXIT WHEN NOT EXISTS (SELECT FROM taskq.tasks AS x
                                   WHERE x.action = 'rl' AND x.status_code < 'completed');
            EXIT WHEN clock_timestamp() > deadline;
            PERFORM pg_sleep(0.002);
            CONTINUE;
        END IF;
        INSERT INTO rate_log VALUES (t.id, t0, clock_timestamp());
        PERFORM taskq.return_task(t.id, t.token, NULL, 'completed');
        COMMIT;
    END LOOP;
END \$\$;
SELECT taskq.set_rate_limit('rl', $rate_max, '$rate_ms ms');
});
$node->safe_psql('postgres',
	json_insert_sql(map { { id => "rl.$_", action => 'rl' } } 1 .. $nrate));
{
	my $failed = run_psql_workers($node, 200, map { "CALL rate_worker($_)" } 1 .. $nworkers);
	is($failed, 0, 'rate: 8 workers ran');
}
my @claims = map { [ map { interval_us($_) } split /\|/ ] } split /\n/, $node->safe_psql('postgres', q{
	SELECT t0 - 'epoch'::timestamptz, t1 - 'epoch'::timestamptz FROM rate_log ORDER BY t0});
is(scalar(@claims), $nrate, 'rate: every task claimed once (none starved)');
my @breach;
for my $i (0 .. $#claims)
{
	my $from = $claims[$i][0];
	my $inside = grep { $_->[0] >= $from && $_->[1] < $from + $rate_ms * 1000 } @claims;
	push @breach, sprintf('%d claims within %d ms from %d', $inside, $rate_ms, $from)
	  if $inside > $rate_max;
}
is(scalar(@breach), 0, "rate: no window of $rate_ms ms held more than $rate_max claims")
  or diag(join("\n", @breach[ 0 .. ($#breach < 10 ? $#breach : 10) ]));
my $span = $claims[-1][1] - $claims[0][0];
my $min_span = (int(($nrate + $rate_max - 1) / $rate_max) - 1) * $rate_ms * 1000;
note sprintf('rate: %d claims in %.3f s', scalar(@claims), $span / 1e6);
ok($span >= $min_span, sprintf('rate: the claims took at least %d windows (the test can see a breach)',
		$min_span / ($rate_ms * 1000)));
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.tasks WHERE action = 'rl' AND status_code <> 'completed'"),
	'0', 'rate: every task completed');

# A claim waiting at the rate limit is woken when the window reopens (the
# background worker wakes then): 1 claim per 2 s, and a claim that waits
# 6 s gets the second task after about 2 s (without the wake it would look
# again only after 10 s, past its wait).
$node->safe_psql('postgres', q{
SELECT taskq.set_rate_limit('rw', 1, '2 s');
SELECT taskq.insert_tasks('[{"id": "rw1", "action": "rw"}, {"id": "rw2", "action": "rw"}]');
});
usleep(300_000);    # the worker has looked at the insert and sleeps again
$node->safe_psql('postgres', "SELECT count(*) FROM taskq.own_tasks('w', 1, '{rw}')");
my ($got, $secs) = split /\|/, $node->safe_psql('postgres', q{
	SELECT count(o.id), extract(epoch FROM clock_timestamp() - statement_timestamp())
	  FROM taskq.own_tasks('w', 1, '{rw}', NULL, '6 s') AS o});
ok($got == 1 && $secs < 4.5, "a claim waiting at the rate limit is woken when the window reopens ($got after $secs s)");

# A slot of an action limited by max_running alone is left a moment to the
# session that let it go (it nearly always claims again at once); if it
# does not, the background worker wakes the claim waiting for the slot, a
# few ms after the commit: the waiting claim gets the next task well inside
# its wait (without the wake it would look again only after 10 s). Run
# again at the end with no worker: the return then wakes it itself.
sub slot_wake_secs
{
	my ($label) = @_;
	my $out = PostgreSQL::Test::Utils::tempdir() . "/wait.out";
	$node->safe_psql('postgres', qq{
DELETE FROM taskq.tasks WHERE action = 'sl';
SELECT taskq.set_concurrency_limit('sl', 1);
SELECT taskq.insert_tasks('[{"id": "sl1", "action": "sl", "priority": 1}, {"id": "sl2", "action": "sl"}]');
DROP TABLE IF EXISTS sl_tok;
CREATE TABLE sl_tok AS SELECT id, token FROM taskq.own_tasks('w', 1, '{sl}', '1 hour');
});
	local %ENV = $node->_get_env();
	my $h = IPC::Run::start(
		[ 'psql', '-XAtq', '-d', $node->connstr('postgres') . ' application_name=sl_wait', '-c',
		  "SELECT count(o.id) || '|' || extract(epoch FROM clock_timestamp() - statement_timestamp())"
		  . " FROM taskq.own_tasks('x', 1, '{sl}', NULL, '8 s') AS o" ],
		'<', \undef, '>', $out, '2>', "$out.err", IPC::Run::timeout(30));
	ok( $node->poll_query_until('postgres', q{
		SELECT count(*) = 1 FROM pg_stat_activity
		 WHERE application_name = 'sl_wait' AND wait_event_type = 'Extension'}),
		"$label: the claim waits at the limit");
	my $t0 = Time::HiRes::time();
	$node->safe_psql('postgres',
		"SELECT taskq.return_task(id, token, NULL, 'completed') FROM sl_tok");
	$h->finish;
	my ($got, $secs) = split /\|/, slurp_file($out);
	is($got, 1, "$label: the waiting claim gets the task");
	return Time::HiRes::time() - $t0;
}
my $woken = slot_wake_secs('worker wakes');
ok($woken < 2, sprintf('a slot let go and not taken again wakes the waiting claim (%.3f s after the return)', $woken));

# ---------------------------------------------------------------- a crash
$node->safe_psql('postgres', q{
SELECT taskq.set_concurrency_limit('crash', 2);
SELECT taskq.insert_tasks('[{"id": "c1", "action": "crash"}, {"id": "c2", "action": "crash"},
                            {"id": "c3", "action": "crash"}, {"id": "c4", "action": "crash"}]');
CREATE TABLE crash_tok AS SELECT id, token FROM taskq.own_tasks('w', 10, '{crash}', '1 hour');
});
is($node->safe_psql('postgres', 'SELECT count(*) FROM crash_tok'), '2', 'two of four claimed under a limit of 2');
kill9_and_wait($node);
$node->start;
is($node->safe_psql('postgres', "SELECT running FROM taskq.limits WHERE action = 'crash'"),
	'2', 'after kill -9 and restart the two leases still count');
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.own_tasks('w', 10, '{crash}')"),
	'0', 'nothing more starts');
$node->safe_psql('postgres', q{
SELECT taskq.return_task(id, token, NULL, 'completed') FROM crash_tok ORDER BY id LIMIT 1;
});
is($node->safe_psql('postgres', "SELECT count(*) FROM taskq.own_tasks('w', 10, '{crash}', '1 hour')"),
	'1', 'one return lets exactly one more start');

# The slot's wake with no background worker: the return wakes the claim.
$node->append_conf('postgresql.conf', "taskq.background_worker = off\n");
$node->restart;
is(scalar(worker_pids($node, 'postgres')), 0, 'no worker now');
$woken = slot_wake_secs('no worker');
ok($woken < 2, sprintf('with no worker the return wakes the waiting claim itself (%.3f s after it)', $woken));

done_testing();
