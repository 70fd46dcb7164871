# Random queries against a database with taskq, as roles that are not
# superusers.  Two phases, both with a fixed seed and a time bound:
#   1. sqlsmith (Debian package) as role "smith" (producer, worker and
#      monitor): random SQL over every table, view and function it finds,
#      taskq's among them;
#   2. a taskq-only fuzzer as role "fuzzer" (also taskq_admin, to read the
#      tokens it hands back): random calls of taskq's functions with
#      arguments drawn from the queue's ids, tokens and actions and from bad
#      values, the queue's state carried from call to call.
# Then: no server crash, no assertion failure (TRAP), no internal error
# (XX000) from a statement that names taskq, and the queue's invariants
# hold.  Longer runs: TASKQ_SQLSMITH_SECONDS, TASKQ_FUZZ_SECONDS,
# TASKQ_SQLSMITH_SEED (and TASKQ_FILE_TIMEOUT for make test).
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;

my $smith_seconds = $ENV{TASKQ_SQLSMITH_SECONDS} // 60;
my $fuzz_seconds = $ENV{TASKQ_FUZZ_SECONDS} // 20;
my $seed = $ENV{TASKQ_SQLSMITH_SEED} // 4242;

my $sqlsmith = '/usr/bin/sqlsmith';
ok(-x $sqlsmith, 'sqlsmith is installed (test/bin/deps.sh)') or BAIL_OUT('no sqlsmith');

# The SQLSTATE in every log line; the context, source location and
# statement of every error.
my $node = taskq_node('smith',
	conf => "log_line_prefix = '%m [%p] %e %q%a '\n"
	  . "log_min_error_statement = error\n"
	  . "log_error_verbosity = verbose\n"
	  . "taskq.worker_naptime = '100ms'\n");
my $offset = -s $node->logfile;

$node->safe_psql('postgres', q{
CREATE ROLE smith LOGIN IN ROLE taskq_producer, taskq_worker, taskq_monitor;
ALTER ROLE smith SET statement_timeout = '1s';
CREATE ROLE fuzzer LOGIN IN ROLE taskq_producer, taskq_worker, taskq_monitor, taskq_admin;
});
# A queue with work in every state.
$node->safe_psql('postgres', q{
SELECT taskq.insert_tasks(jsonb_agg(jsonb_build_object(
           'id', 's' || i, 'action', (ARRAY['a', 'b', 'c'])[1 + i % 3],
           'body', jsonb_build_object('n', i), 'priority', i % 4,
           'max_tries', CASE WHEN i % 5 = 0 THEN 1 END,
           'to_signal_after', CASE WHEN i % 4 = 0 AND i < 60 THEN jsonb_build_array('s' || (i + 1)) END,
           'spontaneous', i % 7 = 0)))
  FROM generate_series(1, 60) AS i;
SELECT count(taskq.return_task(id, token, 'done', 'completed')) FROM taskq.own_tasks('seed', 10, '{a}');
SELECT count(taskq.return_task(id, token, 'no', 'aborted')) FROM taskq.own_tasks('seed', 5, '{b}');
SELECT count(*) FROM taskq.own_tasks('seed', 5, '{c}', '1 hour');
});

# --- phase 1: sqlsmith ----------------------------------------------------
my $out = PostgreSQL::Test::Utils::tempdir() . '/sqlsmith.out';
my $target = $node->connstr('postgres') . ' user=smith';
my $t0 = time;
system("timeout -s INT -k 10 $smith_seconds $sqlsmith --target=\"$target\" --seed=$seed"
	  . " --max-queries=1000000 --verbose >\"$out\" 2>&1");
my $smith_log = slurp_file($out);
my @counts = $smith_log =~ /queries: (\d+)/g;
my $queries = @counts ? $counts[-1] : 0;
note "sqlsmith ran " . (time - $t0) . " s, seed $seed: $queries queries";
note join("\n", grep { /^\s*\d+\s+ERROR/ } split /\n/, $smith_log);
ok($queries > 0, "sqlsmith sent queries ($queries)");
ok($node->poll_query_until('postgres', 'SELECT true'), 'the server still accepts connections');

# --- phase 2: random calls of taskq's functions -----------------------------
my ($ret, $fuzz_out, $fuzz_err) = $node->psql('postgres', <<"SQL", extra_params => [ '-U', 'fuzzer' ]);
SET statement_timeout = 0;
SELECT setseed(0.4242);
CREATE TEMP TABLE fuzz (n int, fn text, sqlstate text, message text);
DO \$fuzz\$
DECLARE
    fns record;
    f record;
    n int := 0;
    stop timestamptz := clock_timestamp() + interval '$fuzz_seconds s';
    ids text[] := ARRAY(SELECT 's' || i FROM generate_series(1, 70) AS i);
    args text;
    call text;
    t text;
    v text;
    tok text;
    pick int;
BEGIN
    WHILE clock_timestamp() < stop LOOP
        n := n + 1;
        SELECT p.oid::regproc AS fn, p.proname,
               ARRAY(SELECT unnest(p.proargtypes)::regtype) AS types INTO f
          FROM pg_proc AS p
         WHERE p.pronamespace = 'taskq'::regnamespace AND p.proname !~ '^_'
           -- purging finished tasks changes what total_dependencies is
           -- checked against below (as the worker's retention does)
           AND p.proname <> 'purge_finished'
           AND p.prorettype <> 'trigger'::regtype
           AND has_function_privilege(p.oid, 'EXECUTE')
         ORDER BY random() LIMIT 1;
        args := '';
        FOR i IN 1 .. coalesce(array_length(f.types, 1), 0) LOOP
            t := f.types[i]::text;
            pick := floor(random() * 8)::int;
            SELECT coalesce(quote_literal(performance_token::text), 'NULL') INTO tok
              FROM taskq.tasks ORDER BY random() LIMIT 1;
            v := CASE
                -- never a long wait (own_tasks: its wait, and so its lease too)
                WHEN f.proname IN ('wait_for_task', 'own_tasks') AND t = 'interval'
                    THEN (ARRAY['''0 s''', '''1 ms''', '''-1 s'''])[1 + floor(random() * 3)]
                WHEN pick = 0 THEN 'NULL'
                WHEN t = 'text' THEN (ARRAY[quote_literal(ids[1 + floor(random() * 70)]),
                                           quote_literal(ids[1 + floor(random() * 70)]), '''a''', '''''',
                                           'repeat(''x'', 300)', '''w'''])[1 + floor(random() * 6)]
                WHEN t = 'text[]' THEN (ARRAY[
                        quote_literal(ARRAY[ids[1 + floor(random() * 70)]]::text),
                        quote_literal(ARRAY[ids[1 + floor(random() * 70)], ids[1 + floor(random() * 70)]]::text),
                        '''{a,b}''', '''{}''', '''{NULL}''', '''{a,c}'''])[1 + floor(random() * 6)]
                WHEN t = 'uuid' THEN (ARRAY[tok, tok, 'gen_random_uuid()'])[1 + floor(random() * 3)]
                WHEN t = 'uuid[]' THEN (ARRAY['ARRAY[' || tok || ']::uuid[]',
                        'ARRAY[' || tok || ', ' || tok || ']::uuid[]', '''{}'''])[1 + floor(random() * 3)]
                WHEN t = 'jsonb' THEN (ARRAY[
                        quote_literal(jsonb_build_array(jsonb_build_object(
                            'id', ids[1 + floor(random() * 70)], 'action', (ARRAY['a', 'b', 'c'])[1 + floor(random() * 3)],
                            'to_signal_after', (ARRAY[NULL, jsonb_build_array(ids[1 + floor(random() * 70)])])[1 + floor(random() * 2)],
                            'max_tries', (ARRAY[NULL, 1, 2, -1])[1 + floor(random() * 4)],
                            'spontaneous', random() < 0.2))::text),
                        quote_literal(jsonb_build_object('id', 'j' || n, 'action', 'a')::text),
                        '''[]''', '''{}''', '''"x"''', '''[1, null]''',
                        '''{"delay": "1 s", "factor": 2}'''])[1 + floor(random() * 7)]
                WHEN t IN ('integer', 'bigint') THEN (ARRAY['0', '1', '3', '-1', '2147483647'])[1 + floor(random() * 5)]
                WHEN t = 'interval' THEN (ARRAY['''0 s''', '''1 ms''', '''-1 s''', '''1 hour''', '''100000 years'''])[1 + floor(random() * 5)]
                WHEN t = 'taskq.status' THEN (ARRAY['''pending''', '''in_progress''', '''completed''', '''aborted'''])[1 + floor(random() * 4)]
                WHEN t = 'taskq.status[]' THEN (ARRAY['''{completed}''', '''{completed,aborted}''', '''{pending}''', '''{}'''])[1 + floor(random() * 4)]
                ELSE 'NULL' END;
            args := args || CASE WHEN i > 1 THEN ', ' ELSE '' END || v || '::' || t;
        END LOOP;
        call := format('SELECT count(*) FROM (SELECT %s(%s)) AS r', f.fn, args);
        BEGIN
            EXECUTE call;
            INSERT INTO fuzz VALUES (n, f.proname, 'ok', NULL);
        EXCEPTION WHEN OTHERS THEN
            INSERT INTO fuzz VALUES (n, f.proname, SQLSTATE, SQLERRM || ' / ' || call);
        END;
        -- now and then a worker's round: claim and return what it got
        IF n % 10 = 0 THEN
            BEGIN
                PERFORM taskq.return_task(o.id, o.token, 'fuzzed',
                            (ARRAY['completed', 'aborted', 'pending'])[1 + floor(random() * 3)]::taskq.status)
                   FROM taskq.own_tasks('fuzzer', 3, NULL, '1 hour') AS o;
            EXCEPTION WHEN OTHERS THEN
                INSERT INTO fuzz VALUES (n, 'own+return', SQLSTATE, SQLERRM);
            END;
        END IF;
    END LOOP;
END
\$fuzz\$;
SELECT 'calls ' || count(*) || ', ok ' || count(*) FILTER (WHERE sqlstate = 'ok')
       || ', functions ' || count(DISTINCT fn) FROM fuzz;
SELECT 'states ' || string_agg(sqlstate || '=' || c, ' ' ORDER BY sqlstate)
  FROM (SELECT sqlstate, count(*) AS c FROM fuzz GROUP BY 1) AS s;
SELECT 'internal ' || sqlstate || ' ' || message FROM fuzz WHERE sqlstate ~ '^(XX|58)';
SQL
is($ret, 0, 'the taskq fuzzer ran') or diag $fuzz_err;
note $fuzz_out;
like($fuzz_out, qr/^calls \d+/m, 'it made calls');
unlike($fuzz_out, qr/^internal /m, 'no call of a taskq function raised an internal error');

# --- the server log ----------------------------------------------------------
# Entries start with a timestamp.  An internal error (XX000) is taskq's if
# it was raised in taskq's source (LOCATION) or inside a taskq function or
# one of its SQL statements (CONTEXT); an internal error of PostgreSQL's
# own in a random query that merely reads a taskq view is not.
my %ours = map { (m{([^/]+\.c)$})[0] => 1 } glob("$ENV{TESTDIR}/src/*.c");
my $log = slurp_file($node->logfile, $offset);
my @entries = split /^(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[\d+\] )/m, $log;
my ($internal, $internal_taskq) = (0, 0);
my @bad;
for my $i (0 .. $#entries)
{
	next unless $entries[$i] =~ /^\S+ \S+ \S+ \[(\d+)\] XX\d{3} .*?ERROR:/;
	my $pid = $1;
	my $e = $entries[$i];
	for my $k ($i + 1 .. $#entries)
	{
		last unless $entries[$k] =~ /\[$pid\] .*?(DETAIL|HINT|CONTEXT|LOCATION|STATEMENT):/;
		$e .= $entries[$k];
	}
	$internal++;
	my ($file) = $e =~ /LOCATION:\s+\S+, (\S+\.c):\d+/;
	my ($context) = $e =~ /CONTEXT:(.*?)(?=^\S+ \S+ \S+ \[\d+\] |\z)/ms;
	if ((defined $file && $ours{$file}) || ($context // '') =~ /taskq/)
	{
		$internal_taskq++;
		push @bad, $e;
	}
}
note "internal errors (XX000) from any statement: $internal";
is($internal_taskq, 0, 'no internal error (XX000) from a statement that names taskq')
  or diag join("\n", @bad[ 0 .. ($#bad < 4 ? $#bad : 4) ]);
unlike($log, qr/terminated by signal|was terminated|PANIC/, 'no server process crashed');
unlike($log, qr/TRAP:/, 'no assertion failed');

# The queue's invariants that hold whatever the calls were (not the count
# of predecessors naming a task, which replace_tasks and purging change).
is( $node->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE status_code >= 'completed'
                          AND (action_deadline IS NOT NULL OR finished_at IS NULL))
     + count(*) FILTER (WHERE status_code = 'in_progress'
                          AND (performance_token IS NULL OR actor_id IS NULL))
     + count(*) FILTER (WHERE status_code < 'completed' AND finished_at IS NOT NULL)
  FROM taskq.tasks}),
	'0', 'afterwards no task is both finished and leased; finished_at iff finished');
is( $node->safe_psql('postgres', q{
WITH e AS (
  SELECT s.id, count(*) AS live
    FROM taskq.tasks AS p, unnest(p.to_signal_after) AS s(id)
   WHERE p.status_code < 'completed'
   GROUP BY s.id)
SELECT count(*) FROM taskq.tasks AS t LEFT JOIN e ON e.id = t.id
 WHERE t.num_signals <> coalesce(e.live, 0)}),
	'0', "and every task's num_signals is the number of its unfinished predecessors");
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM taskq.tasks
 WHERE spontaneous AND num_signals = 0 AND status_code < 'completed'}),
	'0', 'and no spontaneous task is left waiting with all its signals in');

$node->stop;
done_testing();
