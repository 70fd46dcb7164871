# Deferred signals (finish.c): with the background worker running, a
# completion does not wait for a successor's row that another transaction
# holds, and always leaves the signals of a wide join (more than 64
# predecessors) to the worker, which adds them to num_signals within
# milliseconds.  Checked: the second completion of a narrow join does not
# block behind the first one's open transaction; the join becomes ready
# exactly once, its count exact; wide joins (one plain, one spontaneous)
# are ready or completed after their last member with nothing left over;
# a stray deferred row for a vanished task is dropped, one claiming more
# signals than a task waits for is dropped with a warning, and the worker
# goes on folding.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use TaskqTAP;

my $node = taskq_node('deferred');

# Claim every task of an action as actor w, return them one call each.
sub own_all
{
	my ($action) = @_;
	my $rows = $node->safe_psql('postgres',
		"SELECT string_agg(id || '=' || token, ' ' ORDER BY id)"
		  . " FROM taskq.own_tasks('w', 1000, '{$action}', '1 hour')");
	return map { [ split /=/ ] } split / /, $rows;
}

sub ret_sql
{
	my ($id, $token) = @_;
	return "SELECT taskq.return_task('$id', '$token', NULL, 'completed')";
}

# Poll (at most 30 s) until the query returns 't'.
sub eventually
{
	my ($sql) = @_;
	my $t0 = time;
	while (time - $t0 < 30)
	{
		return time - $t0 if $node->safe_psql('postgres', $sql) eq 't';
		usleep(20_000);
	}
	return undef;
}

sub state_of
{
	my ($id) = @_;
	return $node->safe_psql('postgres',
		"SELECT status_code || '/' || num_signals FROM taskq.tasks WHERE id = '$id'");
}

my $pending_deferred =
  "SELECT coalesce(sum(signals), 0) FROM taskq.deferred_signals";

# --- a narrow join whose row another transaction holds --------------------
$node->safe_psql('postgres', json_insert_sql(
		{ id => 'n1', action => 'narrow', to_signal_after => ['nj'] },
		{ id => 'n2', action => 'narrow', to_signal_after => ['nj'] },
		{ id => 'nj', action => 'narrow-join' }));
ok(defined wait_for_worker($node, 'postgres', 30), 'the database has a worker');
my %tok = map { $_->[0] => $_->[1] } own_all('narrow');

my $first = $node->background_psql('postgres');
$first->query_safe('BEGIN');
$first->query_safe(ret_sql('n1', $tok{n1}));    # holds nj's row until COMMIT

my $t0 = time;
my $second = $node->background_psql('postgres', timeout => 20);
$second->query_safe(ret_sql('n2', $tok{n2}));
my $took = time - $t0;
cmp_ok($took, '<', 10,
	sprintf('the second completion does not wait for the first transaction (%.2f s)', $took));
is(state_of('nj'), 'pending/2', 'nj: neither signal is added yet (the first is not committed, the second deferred)');
is($node->safe_psql('postgres', $pending_deferred), '1', 'one deferred signal recorded');

$first->query_safe('COMMIT');
my $w = eventually("SELECT num_signals = 0 FROM taskq.tasks WHERE id = 'nj'");
ok(defined $w, sprintf('the worker adds the deferred signal (%.3f s)', $w // -1));
is(state_of('nj'), 'pending/0', 'nj is ready, its count exact');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM taskq.own_tasks('w', 10, '{narrow-join}')"),
	'1', 'and owned exactly once');
is($node->safe_psql('postgres', $pending_deferred), '0', 'nothing left deferred');
$first->quit;
$second->quit;

# --- wide joins: a plain one and a spontaneous one with a successor ------
$node->safe_psql('postgres', json_insert_sql(
		(map { { id => "g$_", action => 'member', to_signal_after => ['wj', 'sj'] } } 1 .. 100),
		{ id => 'wj', action => 'wide-join' },
		{ id => 'sj', action => 'spont', spontaneous => 'true', to_signal_after => ['after-sj'] },
		{ id => 'after-sj', action => 'after' }));
my @members = own_all('member');
is(scalar(@members), 100, '100 members owned');
# Two sessions return them concurrently.
my @s = map { $node->background_psql('postgres') } 1 .. 2;
for my $i (0 .. $#members)
{
	$s[ $i % 2 ]->query_safe(ret_sql(@{ $members[$i] }));
}
$_->quit for @s;
like(state_of('wj'), qr{^pending/}, 'wj is still pending right after its last member');
$w = eventually("SELECT num_signals = 0 FROM taskq.tasks WHERE id = 'wj'");
ok(defined $w, sprintf('wj has all 100 signals (%.3f s)', $w // -1));
is(state_of('wj'), 'pending/0', 'wj ready, count exact');
is(state_of('sj'), 'completed/0', 'the spontaneous wide join completed');
is(state_of('after-sj'), 'pending/0', 'and signalled its successor');
is($node->safe_psql('postgres',
		"SELECT string_agg(id, ',' ORDER BY id) FROM taskq.own_tasks('w', 10, '{wide-join,after}')"),
	'after-sj,wj', 'both ready tasks owned once');
ok(defined eventually("SELECT count(*) = 0 FROM taskq.deferred_signals"),
	'the worker drops the emptied counters');

# --- a wide join's counter added to inside one transaction ------------------
# The first return learns that the join is wide and creates this backend's
# counter; the next ones add to it without the executor (signal_counter.c),
# finding the row this transaction wrote (the worker skips a counter an open
# transaction holds).  Committed, every signal arrives once.
$node->safe_psql('postgres', json_insert_sql(
		(map { { id => "t$_", action => 'tmember', to_signal_after => ['tj'] } } 1 .. 70),
		{ id => 'tj', action => 'tx-join' }));
my @t = own_all('tmember');
my $tx = $node->background_psql('postgres');
$tx->query_safe('BEGIN');
$tx->query_safe(ret_sql(@{ $t[$_] })) for 0 .. 9;
is($tx->query_safe("SELECT sum(signals) FROM taskq.deferred_signals WHERE task_id = 'tj'"),
	'10', 'ten signals in the open transaction\'s counter');
$tx->query_safe('COMMIT');
$tx->query_safe(ret_sql(@{ $t[$_] })) for 10 .. 69;
$tx->quit;
$w = eventually("SELECT num_signals = 0 FROM taskq.tasks WHERE id = 'tj'");
ok(defined $w, sprintf('tj has all 70 signals (%.3f s)', $w // -1));
is(state_of('tj'), 'pending/0', 'tj ready, count exact');
ok(defined eventually("SELECT count(*) = 0 FROM taskq.deferred_signals WHERE signals > 0"),
	'nothing left deferred');

# --- stray deferred rows ----------------------------------------------------------
$node->safe_psql('postgres', json_insert_sql(
		{ id => 'p', action => 'x', to_signal_after => ['j2'] },
		{ id => 'j2', action => 'j2' }));
my $offset = -s $node->logfile;
$node->safe_psql('postgres', q{
	INSERT INTO taskq.deferred_signals VALUES ('vanished', 1, 3), ('j2', 2, 5)});
ok(defined eventually("SELECT count(*) = 0 FROM taskq.deferred_signals WHERE signals > 0"),
	'stray deferred signals are taken');
is(state_of('j2'), 'pending/1', 'a count that cannot take them is left alone');
ok($node->wait_for_log(qr/dropped 5 deferred signals for task "j2"/, $offset),
	'and the worker says so');
my %p = map { $_->[0] => $_->[1] } own_all('x');
$node->safe_psql('postgres', ret_sql('p', $p{p}));
is(state_of('j2'), 'pending/0', 'later signals still arrive (narrow, unlocked: at once)');
ok(scalar(worker_pids($node, 'postgres')) == 1, 'the worker kept running');

done_testing();
