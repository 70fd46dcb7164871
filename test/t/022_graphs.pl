# Graphs: every definition_graph and run_graph (machines, sagas when the
# server has them, and task_graph when it exists) renders with Graphviz's
# `dot -Tsvg`, and the Mermaid form has the structure of its diagram kind,
# also for names full of characters that DOT and Mermaid read as syntax.
use strict;
use warnings;

use FindBin;
use lib $FindBin::RealBin;

use IPC::Run qw(run);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use TaskqTAP;

# Graphviz is installed by test/bin/deps.sh: missing, the test fails.
my ($dot) = grep { -x $_ } map { "$_/dot" } (split(/:/, $ENV{PATH}), '/usr/bin', '/usr/local/bin');
BAIL_OUT('Graphviz (dot) is not installed: apt-get install graphviz') unless $dot;

my $node = taskq_node('graphs');
my $sql = sub { $node->safe_psql('postgres', $_[0]) };

# A machine whose names need quoting, run down several paths.
my $odd = q{He said "hi"; <b>{x}</b> | a:b -> [c] # \ end};
my $wait = q{Wait "here"};
$sql->(qq{SELECT taskq.define_machine('odd', jsonb_build_object('states', jsonb_build_array(
    jsonb_build_object('name', \$n\$$odd\$n\$, 'action', 'a', 'initial', true, 'continuation', true,
        'transitions', jsonb_build_array(jsonb_build_object('event', 'go -> on', 'to', \$n\$$wait\$n\$),
                                         jsonb_build_object('event', 'count', 'to', 'Fan'))),
    jsonb_build_object('name', \$n\$$wait\$n\$, 'action', NULL,
        'transitions', jsonb_build_array(jsonb_build_object('event', 'resume', 'to', \$n\$$odd\$n\$))),
    jsonb_build_object('name', 'Fan', 'action', 'f', 'final', true, 'fan_in', 1))))});
$sql->(q{SELECT taskq.start_machine('odd', 'r1'), taskq.start_machine('odd', 'r2')});
my ($id, $token) = split /\|/, $sql->(q{SELECT id, token FROM taskq.own_tasks('w', 1, '{a}')});
$sql->(qq{SELECT taskq.transition('$id', '$token', 'go -> on')});
$sql->(q{SELECT taskq.send_event('r1', 'resume')});

# A saga over a DAG with a quoted step name, run up to its undo.
$sql->(qq{SELECT taskq.define_saga('odd saga', jsonb_build_object('steps', jsonb_build_array(
    jsonb_build_object('name', \$n\$$odd\$n\$, 'do', 'sa', 'undo', 'su', 'after', jsonb_build_array()),
    jsonb_build_object('name', 'b', 'do', 'sb', 'undo', NULL, 'after', jsonb_build_array()),
    jsonb_build_object('name', 'join', 'do', 'sj', 'after', jsonb_build_array(\$n\$$odd\$n\$, 'b')))))});
$sql->(q{SELECT taskq.start_saga('odd saga', 's1')});
for my $action ('sa', 'sb')
{
	my ($sid, $stoken) = split /\|/, $sql->(qq{SELECT id, token FROM taskq.own_tasks('w', 1, '{$action}')});
	$sql->(qq{SELECT taskq.return_step('$sid', '$stoken', } . ($action eq 'sa' ? q{'success')} : q{'fatal')}));
}

my @graphs;
for my $name (split /\n/, $sql->(q{SELECT name FROM taskq.definitions GROUP BY name}))
{
	push @graphs, ["definition $name", "SELECT taskq.definition_graph('$name', '%s')", 'definition'];
}
for my $run (split /\n/, $sql->(q{SELECT id FROM taskq.runs}))
{
	push @graphs, ["run $run", "SELECT taskq.run_graph('$run', '%s')", 'run'];
}
my $has_task_graph = $sql->(q{SELECT count(*) FROM pg_proc WHERE proname = 'task_graph'
                               AND pronamespace = 'taskq'::regnamespace});
push @graphs, ['tasks of r1', "SELECT taskq.task_graph('r1', '%s')", 'tasks'] if $has_task_graph;

for my $g (@graphs)
{
	my ($what, $query, $kind) = @$g;
	my $text = $sql->(sprintf($query, 'dot'));
	my ($out, $err) = ('', '');
	my $ok = run([ $dot, '-Tsvg' ], '<', \$text, '>', \$out, '2>', \$err);
	ok($ok && $out =~ /<svg/ && $err eq '', "dot -Tsvg renders $what")
	  or diag("dot said: $err\n$text");

	my $m = $sql->(sprintf($query, 'mermaid'));
	my $machine = $m =~ /\AstateDiagram-v2\n/;
	ok($machine || $m =~ /\Aflowchart LR\n/, "$what in Mermaid starts with its diagram kind");
	my @bad = grep {
		!(/^\s*$/
		  || /^  state "[^"\n]*" as n\d+$/
		  || /^  \[\*\] --> n\d+$/ || /^  n\d+ --> \[\*\]$/
		  || /^  n\d+ --> n\d+( : [^:\n]+)?$/
		  || /^  n\d+\["[^"\n]*"\]$/
		  || /^  n\d+ -->(\|"[^"\n]*"\|)? n\d+$/
		  || /^  classDef cn\d+ fill:\w+$/ || /^  class n\d+ cn\d+$/
		  || /^  style n\d+ fill:\w+$/
		  # task_graph: nodes t1, t2, ... with a class per status, edges with the rule
		  || /^  t\d+\["[^"\n]*"\](:::\w+)?$/
		  || /^  t\d+ -->(\|[\w"]+\|)? t\d+$/
		  || /^  classDef \w+ fill:#[0-9a-f]{6}(,stroke:#[0-9a-f]{3,6})?(,color:#[0-9a-f]{3,6})?$/)
	} (split /\n/, $m)[1 .. scalar(split /\n/, $m) - 1];
	is_deeply(\@bad, [], "every line of $what in Mermaid is a node, an edge or a style");
}

my ($state) = sqlstate_of($node, q{SELECT taskq.run_graph('r1', 'png')});
is($state, '22023', 'an unknown format: 22023');

$node->stop;
done_testing();
