# Which commits skip the WAL flush (taskq.async_claims): only a transaction
# that wrote nothing but claims, outside a transaction block.  A return,
# an insert or any other logged write in the same transaction (one
# statement holding both, a writable CTE) must keep its durability.  The
# decision is read from the DEBUG1 line taskq gives at such a commit; then
# a SIGKILL of the postmaster right after a return made together with a
# claim shows that the return survived.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;

my $node = taskq_node('claim_commit', conf => "taskq.background_worker = off\n");

$node->safe_psql('postgres',
	json_insert_sql(map { { id => "c$_", action => 'c' } } 1 .. 40));
$node->safe_psql('postgres', 'CREATE TABLE public.kept (id text, token uuid)');

my $ASYNC = qr/wrote only claims: its commit does not wait for the WAL flush/;

# Run $sql with client_min_messages = debug1; return how many commits
# were made asynchronous, and die on an error.
sub async_commits
{
	my ($sql) = @_;
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET client_min_messages = debug1;\n$sql",
		on_error_stop => 1);
	die "psql failed: $err" if $ret != 0;
	my $n = () = $err =~ /$ASYNC/g;
	return $n;
}

is(async_commits("SELECT count(*) FROM taskq.own_tasks('w', 2, '{c}')"),
	1, 'a claim alone in its statement commits asynchronously');
is(async_commits("SELECT count(*) FROM taskq.own_tasks('w', 2, '{none}')"),
	0, 'a claim that got nothing wrote nothing: nothing to say');
is( async_commits(
		"SELECT count(*) FROM (SELECT id FROM taskq.own_tasks('w', 1, '{c}')"
		  . " UNION ALL SELECT id FROM taskq.own_tasks('w', 1, '{c}')) AS two"),
	1,
	'two claims in one statement: still only claims');
is( async_commits(
		"CREATE TEMP TABLE t (id text);\n"
		  . "INSERT INTO t SELECT id FROM taskq.own_tasks('w', 1, '{c}');"),
	1,
	'a claim kept in a temporary table (no WAL, gone after a crash anyway)');

# The claims the next statements return.
$node->safe_psql('postgres',
	"BEGIN; INSERT INTO public.kept SELECT id, token FROM taskq.own_tasks('w', 4, '{c}'); COMMIT");
my @kept = split /\n/, $node->safe_psql('postgres', 'SELECT id FROM public.kept ORDER BY id');
is(scalar @kept, 4, 'four tasks held for the returns below');

is( async_commits(
		"SELECT taskq.return_task(id, token, 'done', 'completed'),"
		  . " (SELECT count(*) FROM taskq.own_tasks('w', 1, '{c}'))"
		  . " FROM public.kept WHERE id = '$kept[0]'"),
	0,
	'a return and a claim in one statement: the return stays durable');
is( async_commits(
		"SELECT count(*) FROM public.kept AS k, LATERAL taskq.return_and_own(ARRAY[k.id],"
		  . " ARRAY[k.token], NULL, ARRAY['completed']::taskq.status[], 'w', 1, '{c}')"
		  . " WHERE k.id = '$kept[2]'"),
	0,
	'return_and_own with something to return: the return stays durable');
is( async_commits(
		"SELECT count(*) FROM taskq.return_and_own('{}', '{}', NULL, '{}', 'w', 1, '{c}')"),
	1,
	'return_and_own with nothing to return is a claim alone');
is( async_commits(
		"SELECT (SELECT count(*) FROM taskq.own_tasks('w', 1, '{c}')),"
		  . " taskq.insert_tasks('[{\"id\": \"n1\", \"action\": \"c\"}]')"),
	0,
	'an insert and a claim in one statement: the insert stays durable');
is( async_commits(
		"WITH c AS (SELECT id, token FROM taskq.own_tasks('w', 1, '{c}'))"
		  . " INSERT INTO public.kept SELECT id, token FROM c"),
	0,
	'a writable CTE that keeps the claims in a table commits as the session says');
is( async_commits(
		"BEGIN;\nSELECT count(*) FROM taskq.own_tasks('w', 1, '{c}');\nCOMMIT;"),
	0,
	'a claim in a transaction block keeps the session setting');
is( async_commits(
		"SET taskq.async_claims = off;\nSELECT count(*) FROM taskq.own_tasks('w', 1, '{c}');"),
	0,
	'with taskq.async_claims off no claim commits asynchronously');
is( async_commits(
		"BEGIN;\nSELECT count(*) FROM taskq.own_tasks('w', 1, '{c}');\nROLLBACK;\n"
		  . "SELECT count(*) FROM taskq.own_tasks('w', 1, '{c}');"),
	1,
	'a rolled-back claim leaves nothing behind for the next transaction');

# A return made in the same statement as a claim survives a SIGKILL of the
# postmaster at once after its reply.  (Such a statement used to commit
# asynchronously: the return was lost whenever its commit record was still
# in the WAL buffers.)
$node->safe_psql('postgres',
	"SELECT taskq.return_task(id, token, 'done', 'completed'),"
	  . " (SELECT count(*) FROM taskq.own_tasks('w', 1, '{c}'))"
	  . " FROM public.kept WHERE id = '$kept[1]'");
is(kill9_and_wait($node), 0, 'every server process left after the SIGKILL');
$node->start;
is( $node->safe_psql('postgres',
		"SELECT status_code FROM taskq.tasks WHERE id = '$kept[1]'"),
	'completed',
	'that return survived the SIGKILL right after it');

done_testing();
