# Shared helpers of taskq's Perl TAP tests (test/t/*.pl).
#
# Nodes with taskq preloaded, SQLSTATE capture, LISTEN sessions, the
# background worker's process, a crash-safe client load whose acknowledged
# operations are logged client-side, and the invariants checked after every
# crash or failover.
package TaskqTAP;

use strict;
use warnings;

use Exporter 'import';
use IPC::Run;
use POSIX qw(WNOHANG);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);

our @EXPORT = qw(
  taskq_node sqlstate_of worker_pids launcher_pids wait_for_worker
  listen_session drain_notifications payloads_in wait_for_notification count_payload
  kill9_and_wait start_load stop_load check_acks check_invariants
  json_tasks json_insert_sql create_held taskq_worker_bin slurp
  spawn_logged wait_exit stop_process run_psql_workers
);

# Waits here are for moments, not minutes: a failing poll should not eat
# the whole per-file budget (PG_TEST_TIMEOUT_DEFAULT still overrides).
$PostgreSQL::Test::Utils::timeout_default = 60
  unless $ENV{PG_TEST_TIMEOUT_DEFAULT};

# A file's whole content, or '' when it cannot be read (a log not yet
# written).
sub slurp
{
	my ($file) = @_;
	open(my $f, '<', $file) or return '';
	local $/;
	my $s = <$f>;
	close $f;
	return $s;
}

# The taskq-worker binary: the installed one (PostgreSQL's bindir is first
# in make test's PATH), else the one built in the tree; bails out if neither.
sub taskq_worker_bin
{
	my $bin;
	for my $d (split /:/, $ENV{PATH} // '')
	{
		if (-x "$d/taskq-worker") { $bin = "$d/taskq-worker"; last; }
	}
	my $built = ($ENV{TESTDIR} // '.') . '/tools/taskq-worker/taskq-worker';
	$bin //= $built if -x $built;
	ok(defined $bin, 'taskq-worker is installed or built') or BAIL_OUT('no taskq-worker binary');
	return $bin;
}

# Start @cmd (a program such as taskq-worker) with its standard output and
# error appended to $log and its input from /dev/null; returns its pid.
sub spawn_logged
{
	my ($log, @cmd) = @_;
	my $pid = fork();
	die "fork: $!" unless defined $pid;
	if ($pid == 0)
	{
		open(STDIN, '<', '/dev/null');
		open(STDOUT, '>>', $log);
		open(STDERR, '>>', $log);
		exec(@cmd) or POSIX::_exit(127);
	}
	return $pid;
}

# Wait up to $timeout s for $pid to exit: (its exit status, or undef if it
# did not; the seconds waited).
sub wait_exit
{
	my ($pid, $timeout) = @_;
	my $t0 = time;
	while (time - $t0 < $timeout)
	{
		return ($? >> 8, time - $t0) if waitpid($pid, WNOHANG) == $pid;
		usleep(20_000);
	}
	return (undef, time - $t0);
}

# Run each SQL command of @sql in a psql of its own against $node's
# database postgres, all at once (racing workers of a property test), and
# wait up to $timeout s for them: how many failed, each failure's standard
# error shown with diag.
sub run_psql_workers
{
	my ($node, $timeout, @sql) = @_;
	my $dir = PostgreSQL::Test::Utils::tempdir();
	my @h;
	for my $w (1 .. @sql)
	{
		local %ENV = $node->_get_env();
		push @h, IPC::Run::start(
			[ 'psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
			  '-c', $sql[ $w - 1 ] ],
			'<', \undef, '>', "$dir/w$w.out", '2>', "$dir/w$w.err",
			IPC::Run::timeout($timeout));
	}
	my $failed = 0;
	for my $w (1 .. @sql)
	{
		$h[ $w - 1 ]->finish;
		next if $h[ $w - 1 ]->result == 0;
		$failed++;
		diag("worker $w ($sql[$w - 1]) failed: " . slurp_file("$dir/w$w.err"));
	}
	return $failed;
}

# SIGTERM to $pid, then wait_exit up to $timeout s (10); past it, SIGKILL.
sub stop_process
{
	my ($pid, $timeout) = @_;
	kill 'TERM', $pid;
	my ($rc, $took) = wait_exit($pid, $timeout // 10);
	if (!defined $rc) { kill 'KILL', $pid; waitpid($pid, 0); }
	return ($rc, $took);
}

# A node with taskq preloaded and created in database postgres.
#   allows_streaming => 1, conf => "extra lines\n", no_extension => 1
sub taskq_node
{
	my ($name, %opt) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(allows_streaming => $opt{allows_streaming} ? 1 : 0);
	$node->append_conf('postgresql.conf',
		"shared_preload_libraries = 'taskq'\n"
		  . "max_worker_processes = 16\n"
		  . "restart_after_crash = on\n"
		  . ($opt{conf} // ''));
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION taskq')
	  unless $opt{no_extension};
	return $node;
}

# Run $sql; return (sqlstate, stdout): '' when it succeeded, else the
# SQLSTATE of the first error.
sub sqlstate_of
{
	my ($node, $sql, $db) = @_;
	my ($ret, $out, $err) = $node->psql(
		$db // 'postgres',
		"\\set VERBOSITY verbose\n$sql",
		on_error_stop => 1);
	return ('', $out) if $ret == 0;
	return ($1, $out) if $err =~ /ERROR:\s+([0-9A-Z]{5}):/;
	return ("psql exit $ret: $err", $out);
}

# Pids of the taskq workers (optionally of one database) / launchers.
sub worker_pids
{
	my ($node, $db) = @_;
	my $cond = defined $db ? " AND datname = '$db'" : '';
	my $r = $node->safe_psql('postgres',
		    "SELECT string_agg(pid::text, ',' ORDER BY pid) FROM pg_stat_activity"
		  . " WHERE backend_type = 'taskq worker'$cond");
	return grep { $_ ne '' } split /,/, $r;
}

sub launcher_pids
{
	my ($node) = @_;
	my $r = $node->safe_psql('postgres',
		"SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'taskq launcher'"
	);
	return grep { $_ ne '' } split /,/, $r;
}

# Wait until database $db has a taskq worker; returns its pid (or undef).
sub wait_for_worker
{
	my ($node, $db, $timeout) = @_;
	my $until = time + ($timeout // 30);
	while (time < $until)
	{
		my @p = worker_pids($node, $db);
		return $p[0] if @p;
		usleep(50_000);
	}
	return undef;
}

# A session that LISTENs on channel taskq.
sub listen_session
{
	my ($node, $db) = @_;
	my $s = $node->background_psql($db // 'postgres', on_error_stop => 0);
	$s->query_safe('LISTEN taskq');
	return $s;
}

# Let psql read what arrived; return the payloads received since last time.
sub drain_notifications
{
	my ($s, $query) = @_;
	return payloads_in($s->query($query // 'SELECT 1'));
}

# The payloads of the notifications psql printed in $out.
sub payloads_in
{
	my ($out) = @_;
	my @p;
	while ($out =~ /Asynchronous notification "taskq" with payload "([^"]*)" received/g)
	{
		push @p, $1;
	}
	return @p;
}

# Wait up to $timeout seconds for a notification with payload $payload.
# Returns (found, seconds waited, all payloads seen meanwhile).
sub wait_for_notification
{
	my ($s, $payload, $timeout) = @_;
	my $t0 = time;
	my @seen;
	while (time - $t0 < ($timeout // 30))
	{
		my @p = drain_notifications($s);
		push @seen, @p;
		return (1, time - $t0, @seen) if grep { $_ eq $payload } @p;
		usleep(20_000);
	}
	return (0, time - $t0, @seen);
}

sub count_payload
{
	my ($payload, @p) = @_;
	return scalar grep { $_ eq $payload } @p;
}

# Processes whose parent is $ppid (Linux /proc).
sub children_of
{
	my ($ppid) = @_;
	my @kids;
	opendir(my $d, '/proc') or return ();
	for my $p (grep { /^\d+$/ } readdir $d)
	{
		open(my $f, '<', "/proc/$p/stat") or next;
		my $stat = <$f>;
		close $f;
		next unless defined $stat && $stat =~ /\)\s+\S+\s+(\d+)/;
		push @kids, $p if $1 == $ppid;
	}
	closedir $d;
	return @kids;
}

# SIGKILL the postmaster and wait for its children to notice and leave, so
# that the node can be started again.
sub kill9_and_wait
{
	my ($node) = @_;
	my $pm = $node->{_pid};
	my @kids = children_of($pm);
	$node->kill9;
	my $until = time + 60;
	while (time < $until)
	{
		@kids = grep { kill(0, $_) } @kids;
		last unless @kids;
		usleep(20_000);
	}
	return scalar @kids;
}

sub json_tasks
{
	my (@t) = @_;
	my @o;
	for my $t (@t)
	{
		push @o,
		  '{' . join(',',
			map { my $v = $t->{$_}; "\"$_\":" . (ref $v eq 'ARRAY' ? '[' . join(',', map { "\"$_\"" } @$v) . ']' : $v =~ /^(?:-?\d+|true|false|null)$/ ? $v : "\"$v\"") }
			sort keys %$t) . '}';
	}
	return '[' . join(',', @o) . ']';
}

# ---------------------------------------------------------------------
# Client load with client-side log of acknowledged operations.
#
# Each client is one psql running a generated script with ON_ERROR_STOP
# off; a line is printed only after the statement returned (so after its
# commit), so every "ins"/"ret" line in its output is an acknowledged
# operation.  Producers insert singles, chains, chords with a spontaneous
# join, tasks that signal stored "held" tasks, and delayed tasks; workers
# own with short leases and return completed, aborted or pending (some
# through return_tasks, some after extend_ownership).  Actions a and b
# are worked; action held is never owned.
# ---------------------------------------------------------------------

# Held tasks: pending, never owned, so producers may name them as
# successors of new tasks (their num_signals then counts those).
sub create_held
{
	my ($node, $db, $n) = @_;
	$node->safe_psql($db,
		json_insert_sql(map { { id => "held-$_", action => 'held' } } 1 .. $n));
}

sub json_insert_sql
{
	my (@t) = @_;
	return "SELECT taskq.insert_tasks('" . json_tasks(@t) . "')";
}

sub producer_script
{
	my ($tag, $n, $nheld) = @_;
	my $s = '';
	for my $k (1 .. $n)
	{
		my $x = "$tag-$k";
		my $type = $k % 6;
		my @t;
		if ($type == 0 || $type == 5)
		{
			@t = ({ id => $x, action => 'a' });
		}
		elsif ($type == 1)
		{
			@t = (
				{ id => "$x.1", action => 'a', to_signal_after => ["$x.2"] },
				{ id => "$x.2", action => 'b', to_signal_after => ["$x.3"], max_tries => 2 },
				{ id => "$x.3", action => 'a' });
		}
		elsif ($type == 2)
		{
			@t = (
				{ id => "$x.1", action => 'b', to_signal_after => ["$x.j"] },
				{ id => "$x.2", action => 'a', to_signal_after => ["$x.j"] },
				{ id => "$x.3", action => 'a', to_signal_after => ["$x.j", "$x.j"] },
				{ id => "$x.j", action => 'a', spontaneous => 'true' });
		}
		elsif ($type == 3)
		{
			my $h = 1 + ($k * 7) % $nheld;
			@t = ({ id => $x, action => 'b', to_signal_after => ["held-$h"], max_tries => 3 });
		}
		elsif ($type == 4)
		{
			# delayed by half a second, built in SQL
			$s .= "SELECT 'ins $x ' || taskq.insert_tasks(jsonb_build_array(jsonb_build_object("
			  . "'id', '$x', 'action', 'a', 'not_before', now() + interval '0.5 s')));\n";
			next;
		}
		my $ids = join(',', map { $_->{id} } @t);
		$s .= "SELECT 'ins $ids ' || taskq.insert_tasks('" . json_tasks(@t) . "');\n";
	}
	return $s;
}

sub worker_script
{
	my ($actor, $n) = @_;
	my $s = '';
	for my $k (1 .. $n)
	{
		if ($k % 5 == 0)
		{
			# several at once, returned together
			$s .= "\\unset ids\n\\unset toks\n"
			  . "SELECT array_agg(id) AS ids, array_agg(token) AS toks FROM taskq.own_tasks('$actor', 3, '{a,b}', '1 s') \\gset\n"
			  . "SELECT 'rets ' || array_to_string(:'ids'::text[], ',') || ' ' || array_to_string(:'toks'::uuid[], ',') || ' '"
			  . " || taskq.return_tasks(:'ids'::text[], :'toks'::uuid[], NULL,"
			  . " array_fill('completed'::taskq.status, ARRAY[cardinality(:'ids'::text[])]));\n";
			next;
		}
		my $code =
		    $k % 11 == 0 ? 'aborted'
		  : $k % 7 == 0 ? 'pending'
		  : 'completed';
		$s .= "\\unset id\n\\unset tok\n"
		  . "SELECT id, token AS tok, num_tries AS nt FROM taskq.own_tasks('$actor', 1, '{a,b}', '1 s') \\gset\n"
		  . "\\echo own :id :tok :nt\n";
		$s .= "SELECT 'ext ' || :'id' || ' ' || owned FROM taskq.extend_ownership('$actor', ARRAY[:'id'], ARRAY[:'tok']::uuid[], '2 s');\n"
		  if $k % 3 == 0;
		$s .= "SELECT 'ret ' || :'id' || ' ' || :'tok' || ' $code' FROM taskq.return_task(:'id', :'tok', 'by $actor', '$code') AS r;\n";
	}
	return $s;
}

# Start producers and workers against $node; returns a load handle.
sub start_load
{
	my ($node, $tag, %opt) = @_;
	my $db = $opt{db} // 'postgres';
	my $nprod = $opt{producers} // 2;
	my $nwork = $opt{workers} // 2;
	my $n = $opt{statements} // 3000;
	my $nheld = $opt{held} // 20;
	my $dir = PostgreSQL::Test::Utils::tempdir();
	my @clients;

	my @scripts;
	push @scripts, [ "p$_", producer_script("$tag-p$_", $n, $nheld) ] for 1 .. $nprod;
	push @scripts, [ "w$_", worker_script("$tag-w$_", $n) ] for 1 .. $nwork;
	for my $sc (@scripts)
	{
		my ($name, $text) = @$sc;
		my $in = "$dir/$name.sql";
		open(my $f, '>', $in) or die "$in: $!";
		print $f $text;
		close $f;
		local %ENV = $node->_get_env();
		my $h = IPC::Run::start(
			[
				'psql', '-XAtq', '-v', 'ON_ERROR_STOP=0',
				'-d', $node->connstr($db), '-f', $in
			],
			'<', \undef, '>', "$dir/$name.out", '2>', "$dir/$name.err",
			IPC::Run::timeout(300));
		push @clients, { name => $name, h => $h, out => "$dir/$name.out", err => "$dir/$name.err" };
	}
	return { clients => \@clients, dir => $dir };
}

# Wait for the clients to end (after a crash they end by themselves) and
# merge their acknowledgements into %$acks:
#   ins{id} = 1, done{id} = [code, token], own{id} = max num_tries seen,
#   pend{id}{token} = 1.
sub stop_load
{
	my ($load, $acks, %opt) = @_;
	my $n = 0;
	for my $c (@{ $load->{clients} })
	{
		$c->{h}->kill_kill if $opt{kill};
		eval { $c->{h}->finish; };
		open(my $f, '<', $c->{out}) or next;
		while (my $l = <$f>)
		{
			chomp $l;
			if ($l =~ /^ins (\S+) (\d+)$/)
			{
				my @ids = split /,/, $1;
				die "bad insert count in '$l'" unless @ids == $2;
				$acks->{ins}{$_} = 1 for @ids;
				$n++;
			}
			elsif ($l =~ /^ret (\S+) (\S+) (completed|aborted|pending)$/)
			{
				if ($3 eq 'pending')
				{
					$acks->{pend}{$1}{$2} = 1;
				}
				else
				{
					$acks->{done}{$1} = [ $3, $2 ];
				}
				$n++;
			}
			elsif ($l =~ /^rets (\S+) (\S+) (\d+)$/)
			{
				my @ids = split /,/, $1;
				my @toks = split /,/, $2;
				die "bad return_tasks count in '$l'" unless @ids == $3 && @toks == $3;
				$acks->{done}{ $ids[$_] } = [ 'completed', $toks[$_] ] for 0 .. $#ids;
				$n++;
			}
			elsif ($l =~ /^own (\S+) ([0-9a-f-]{36}) (\d+)$/)
			{
				$acks->{own}{$1} = $3
				  if !defined $acks->{own}{$1} || $acks->{own}{$1} < $3;
				$n++;
			}
		}
		close $f;
	}
	return $n;
}

# Every acknowledged operation is in the table.  Returns the number of
# violations (and reports them with diag).
sub check_acks
{
	my ($node, $acks, $label, $db) = @_;
	$db //= 'postgres';
	my %row;
	my $dump = $node->safe_psql($db,
		"SELECT id, status_code, coalesce(performance_token::text, '-'), num_tries FROM taskq.tasks");
	for my $l (split /\n/, $dump)
	{
		my ($id, $code, $tok, $nt) = split /\|/, $l;
		$row{$id} = [ $code, $tok, $nt ];
	}
	my @bad;
	for my $id (sort keys %{ $acks->{ins} })
	{
		push @bad, "acknowledged insert $id missing" unless $row{$id};
	}
	for my $id (sort keys %{ $acks->{done} })
	{
		my ($code, $tok) = @{ $acks->{done}{$id} };
		my $r = $row{$id};
		push @bad, "acknowledged return of $id ($code) missing: "
		  . ($r ? "$r->[0] $r->[1]" : 'no row')
		  unless $r && $r->[0] eq $code && $r->[1] eq $tok;
	}
	for my $id (sort keys %{ $acks->{pend} })
	{
		my $r = $row{$id};
		for my $tok (keys %{ $acks->{pend}{$id} })
		{
			push @bad, "acknowledged pending return of $id lost (still in progress with its token)"
			  if !$r || ($r->[0] eq 'in_progress' && $r->[1] eq $tok);
		}
	}
	# A claim made alone in its transaction may commit asynchronously
	# (taskq.async_claims): a crash may lose it, which only hands the task
	# out again.  Then lost claims are counted, not failed.
	my $async = $node->safe_psql($db,
		"SELECT coalesce(current_setting('taskq.async_claims', true), 'off')") eq 'on';
	my $lost_claims = 0;
	for my $id (sort keys %{ $acks->{own} })
	{
		my $r = $row{$id};
		next if $r && $r->[2] >= $acks->{own}{$id};
		$lost_claims++;
		push @bad, "acknowledged own of $id (try $acks->{own}{$id}) lost: num_tries "
		  . ($r ? $r->[2] : 'no row')
		  unless $async && $r;
	}
	note "$label: $lost_claims acknowledged asynchronous claims were lost (allowed)"
	  if $lost_claims && $async;
	diag($_) for @bad[ 0 .. ($#bad < 9 ? $#bad : 9) ];
	is(scalar @bad, 0,
		"$label: every acknowledged operation is present ("
		  . scalar(keys %{ $acks->{ins} }) . " inserted, "
		  . scalar(keys %{ $acks->{done} }) . " finished by return)");
	return scalar @bad;
}

# The table's invariants: leases only on unfinished tasks, finished tasks
# carry finished_at, dependency counters exact.
sub check_invariants
{
	my ($node, $label, $db) = @_;
	$db //= 'postgres';
	my $r = $node->safe_psql($db, q{
SELECT count(*) FILTER (WHERE status_code >= 'completed'
                          AND (action_deadline IS NOT NULL OR finished_at IS NULL)),
       count(*) FILTER (WHERE status_code = 'in_progress'
                          AND (performance_token IS NULL OR actor_id IS NULL)),
       count(*) FILTER (WHERE status_code < 'completed' AND finished_at IS NOT NULL),
       count(*) FILTER (WHERE status_code = 'pending' AND performance_token IS NULL
                          AND action_deadline IS NOT NULL)
  FROM taskq.tasks});
	is($r, '0|0|0|0', "$label: nothing is both finished and leased; finished_at iff finished");

	# Signals a completion deferred (finish.c) are not in num_signals until
	# the worker adds them, within milliseconds: wait for that first.
	ok($node->poll_query_until($db,
			"SELECT NOT EXISTS (SELECT FROM taskq.deferred_signals WHERE signals > 0)"),
		"$label: the worker added every deferred signal");
	my $sig = $node->safe_psql($db, q{
WITH e AS (
  SELECT s.id, count(*) AS live
    FROM taskq.tasks AS p, unnest(p.to_signal_after) AS s(id)
   WHERE p.status_code < 'completed'
   GROUP BY s.id)
SELECT t.id || ' ' || t.status_code || ' num_signals=' || t.num_signals || ' live=' || coalesce(e.live, 0)
  FROM taskq.tasks AS t LEFT JOIN e ON e.id = t.id
 WHERE t.num_signals <> coalesce(e.live, 0)
 ORDER BY t.status_code, t.id LIMIT 10});
	my $unfinished = join("\n", grep { /(pending|in_progress) num_signals/ } split /\n/, $sig);
	is($unfinished, '',
		"$label: every unfinished task's num_signals = its unfinished predecessors");
	is($sig, '', "$label: every finished task's num_signals = its unfinished predecessors");

	my $tot = $node->safe_psql($db, q{
WITH e AS (
  SELECT s.id, count(*) AS n
    FROM taskq.tasks AS p, unnest(p.to_signal_after) AS s(id)
   GROUP BY s.id)
SELECT count(*) FROM taskq.tasks AS t LEFT JOIN e ON e.id = t.id
 WHERE t.total_dependencies <> coalesce(e.n, 0)});
	is($tot, '0', "$label: total_dependencies = number of predecessors naming the task");

	my $spont = $node->safe_psql($db, q{
SELECT count(*) FROM taskq.tasks
 WHERE spontaneous AND num_signals = 0 AND status_code <> 'completed'
   AND status_code <> 'aborted'});
	is($spont, '0', "$label: no spontaneous task left waiting with all signals in");
	return;
}

1;
