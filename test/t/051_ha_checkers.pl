# The checkers of make ha-test can fail.  test/ha/selftest.sh runs
# test/ha/haload.py's load against four databases of this node as the
# shards (calls routed by the client's own hash rule, as the proxy routes
# them), checks that L1-L5 hold on the clean run, then plants one fault for
# each check (an acknowledged insert deleted and another copied to a second
# shard, a wrong token, a wrong signal count, a stranded task, an unknown call
# never retried) and checks that each check fails naming it.  The
# failover scenarios themselves need pg_auto_failover: make ha-test.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;

my $root = "$FindBin::RealBin/../..";
if (system('/usr/bin/python3 -c "import psycopg" 2>/dev/null') != 0)
{
	plan skip_all => 'no psycopg for /usr/bin/python3 (Debian python3-psycopg)';
}

my $node = taskq_node('haload', no_extension => 1);
my $user = $node->safe_psql('postgres', 'SELECT current_user');

local $ENV{HA_SELFTEST_HOST} = $node->host;
local $ENV{HA_SELFTEST_PORT} = $node->port;
local $ENV{HA_SELFTEST_USER} = $user;
local $ENV{HA_SELFTEST_SECONDS} = 4;
my ($out, $err) = ('', '');
my $ok = IPC::Run::run([ 'bash', "$root/test/ha/selftest.sh" ],
	'>', \$out, '2>', \$err);
note $out;
note $err unless $ok;

like($out, qr/^selftest: check of the clean run/m, 'the load ran');
like($out, qr/^ok   L$_ /m, "L$_ holds on the clean run") for 1 .. 5;
like($out, qr/^FAIL L$_ /m, "L$_ fails on its planted fault") for 1 .. 5;
is(scalar(() = $out =~ /^selftest: L\d reports /mg),
	6, 'every planted fault named by its check');
ok($ok, 'selftest.sh passed');

$node->stop;
done_testing();
