#!/usr/bin/env bash
# test/static/layers.sh — the layer rule of src/ (src/README.md), checked
# on the includes and string literals of every .c and .h file:
#   - every C file lives in one layer folder (common ipc queue workflow api
#     worker), except src/taskq.c, the module entry, which may include all;
#   - a file includes project headers by their layer path ("queue/queue.h"),
#     and only of its own layer or the layers below it:
#         common <- ipc <- queue <- workflow <- api
#         worker uses common, ipc and queue;
#   - above the queue (workflow/, api/, worker/) the one header of queue/
#     a file includes is queue/queue.h, the queue's C API: the queue's
#     other headers are its insides;
#   - project headers include each other without a circle;
#   - nor do the files of one folder, a .c file and its .h counted as one
#     (a.c includes b.h and b.c includes a.h is a circle of a and b);
#   - SQL entry points (PG_FUNCTION_INFO_V1) live in api/ only: the other
#     layers are engines that api/ calls;
#   - only queue/ names the table taskq.tasks in a string literal (SQL):
#     every other layer reaches the task rows through queue/queue.h
#     (comments do not count; taskq.tasks_written is another name);
#   - only worker/ names the workers registry's table taskq.worker_registry
#     in a string literal (its retention; the install script's functions
#     write the rows);
#   - no string literal of C names a taskq._check_* function: those are the
#     install script's checks, and C checks with its own functions.
# The checker first proves on bad trees that it catches each kind of
# violation, and that a good tree passes, then runs on src/.
# Exit 0 when all hold; otherwise print each violation and exit 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# check DIR: print one line per violation.
check() {
    perl -e '
use strict;
use warnings;
use File::Find;

my $root = shift;
my %may = (
    common   => [qw(common)],
    ipc      => [qw(common ipc)],
    queue    => [qw(common ipc queue)],
    workflow => [qw(common ipc queue workflow)],
    api      => [qw(common ipc queue workflow api)],
    worker   => [qw(common ipc queue worker)],
);
my (@files, %inc, %text, @v);

# v KEY, MESSAGE: a violation (KEY, "RULE PATH", names it for a reader).
sub v {
    my ($key, $msg) = @_;
    push @v, $msg;
}

# The string literals of C text, as [line, contents]; comments and
# character constants skipped (a quote inside either opens no literal).
sub literals {
    my $s = shift;
    my ($line, @lits) = (1);
    while ($s =~ m{\G(?:(/\*.*?\*/)|(//[^\n]*)|("(?:[^"\\\n]|\\.)*")|(\x27(?:[^\x27\\\n]|\\.)*\x27)|([^"\x27/]+|.))}gs) {
        my $tok = $+;
        push @lits, [$line, substr($3, 1, -1)] if defined $3;
        $line += ($tok =~ tr/\n//);
    }
    return @lits;
}

find({ no_chdir => 1, wanted => sub { push @files, $File::Find::name if /\.[ch]$/ } }, $root);
for my $f (sort @files) {
    (my $rel = $f) =~ s{^\Q$root\E/}{};
    open(my $fh, "<", $f) or die "$f: $!";
    local $/;
    $text{$rel} = <$fh>;
    close $fh;
    for my $l (split /\n/, $text{$rel}) {
        push @v, "$rel: an SQL entry point outside api/ ($1)"
            if $l =~ /^\s*PG_FUNCTION_INFO_V1\((\w+)\)/ && $rel !~ m{^api/};
        next unless $l =~ /^\s*#\s*include\s+"([^"]+)"/;
        push @{ $inc{$rel} }, $1;
    }
    for my $lit (literals($text{$rel})) {
        my ($n, $s) = @$lit;
        v("tasks-table $rel", "$rel:$n: names taskq.tasks in a string literal (only queue/ may: reach the tasks through queue/queue.h)")
            if $rel !~ m{^queue/} && $s =~ /(?<!\w)taskq\.tasks(?!\w)/i;
        v("registry-table $rel", "$rel:$n: names taskq.worker_registry in a string literal (only worker/ may)")
            if $rel !~ m{^worker/} && $s =~ /(?<!\w)taskq\.worker_registry(?!\w)/i;
        v("check-call $rel", "$rel:$n: calls a taskq._check_* function of the install script (check in C)")
            if $s =~ /taskq\._check_/i;
    }
}
my %unit_inc;    # folder/name (a .c and its .h) -> the units of its folder it includes
for my $rel (sort keys %inc, grep { !$inc{$_} } map { (my $r = $_) =~ s{^\Q$root\E/}{}; $r } @files) {
    my ($layer) = $rel =~ m{^([^/]+)/[^/]+$};
    if ($rel eq "taskq.c") { $layer = "*"; }
    elsif (!defined $layer || !$may{$layer}) {
        push @v, "$rel: not in a layer folder (" . join(" ", sort keys %may) . ")";
        next;
    }
    for my $h (@{ $inc{$rel} || [] }) {
        my ($hl) = $h =~ m{^([^/]+)/[^/]+\.h$};
        if (!defined $hl) {
            # a bare name: a PostgreSQL header, unless the project has one so named
            push @v, "$rel: includes \"$h\" by a bare name (write its layer: \"layer/$h\")"
                if grep { m{(^|/)\Q$h\E$} } keys %inc, map { (my $r = $_) =~ s{^\Q$root\E/}{}; $r } @files;
            next;
        }
        # a path: a project header only if the file is in the tree
        next unless -e "$root/$h";
        next unless $may{$hl};
        (my $u = $rel) =~ s/\.[ch]$//;
        (my $hu = $h) =~ s/\.h$//;
        $unit_inc{$u}{$hu} = 1 if $hl eq $layer && $hu ne $u;
        next if $layer eq "*";
        push @v, "$rel: layer $layer includes \"$h\" of layer $hl (may include: @{$may{$layer}})"
            unless grep { $_ eq $hl } @{ $may{$layer} };
        v("queue-header $rel", "$rel: layer $layer includes \"$h\" (above the queue, only \"queue/queue.h\")")
            if $hl eq "queue" && $h ne "queue/queue.h" && $layer =~ /^(workflow|api|worker)$/;
    }
}

# circles(EDGES, REPORT): each circle of the graph (a hash of hashes),
# found once from the first of its nodes in sorted order.
sub circles {
    my ($edges, $report) = @_;
    my (%state, @stack);
    my $visit;
    $visit = sub {
        my $n = shift;
        return if ($state{$n} // 0) == 2;
        if (($state{$n} // 0) == 1) {
            $report->(@stack[(grep { $stack[$_] eq $n } 0..$#stack)[0] .. $#stack], $n);
            return;
        }
        $state{$n} = 1;
        push @stack, $n;
        $visit->($_) for sort keys %{ $edges->{$n} || {} };
        pop @stack;
        $state{$n} = 2;
    };
    $visit->($_) for sort keys %$edges;
}

# circles among project headers
my %hdr_inc;
for my $h (grep { /\.h$/ } keys %inc) {
    $hdr_inc{$h}{$_} = 1 for grep { exists $inc{$_} || -e "$root/$_" } @{ $inc{$h} };
}
circles(\%hdr_inc, sub { push @v, "include circle: " . join(" -> ", @_) });

# circles among the files of one folder, a .c and its .h as one
circles(\%unit_inc, sub {
    my %seen;
    my $key = join(" ", sort grep { !$seen{$_}++ } @_);
    v("file-circle $key", "include circle of files (a .c with its .h as one): " . join(" -> ", @_));
});

print "$_\n" for @v;
' "$1"
}

# Self-test: each bad tree must give at least one violation, of the kind it
# plants (the line must match the pattern given), and the good tree none.
# shellcheck source=test/bin/planted.sh
source test/bin/planted.sh   # the scripts run from the top of the tree (cd above)
bad upward 'includes "api/y.h" of layer api' <<'T'
queue/a.h|#include "common/b.h"
common/b.h|/* ok */
queue/x.c|#include "api/y.h"
api/y.h|/* api */
T
bad worker_uses_api 'includes "api/y.h" of layer api' <<'T'
worker/w.c|#include "api/y.h"
api/y.h|/* api */
T
bad no_layer 'not in a layer folder' <<'T'
misc/z.c|#include "common/b.h"
common/b.h|/* ok */
T
bad top_level 'stray.c: not in a layer folder' <<'T'
stray.c|/* a file outside every layer */
T
bad circle '^include circle: queue/a.h -> queue/b.h -> queue/a.h' <<'T'
queue/a.h|#include "queue/b.h"
queue/b.h|#include "queue/a.h"
T
bad bare_name 'by a bare name' <<'T'
queue/a.h|/* a */
queue/x.c|#include "a.h"
T
bad sql_face_in_queue 'SQL entry point outside api/' <<'T'
queue/x.c|PG_FUNCTION_INFO_V1(taskq_x);
T
bad queue_insides_in_workflow 'workflow/w.c: layer workflow includes "queue/relation.h"' <<'T'
queue/queue.h|/* the API */
queue/relation.h|/* the insides */
workflow/w.c|#include "queue/queue.h"\n#include "queue/relation.h"
T
bad queue_insides_in_api 'api/a.h: layer api includes "queue/task.h"' <<'T'
queue/task.h|/* the insides */
api/a.h|#include "queue/task.h"
T
bad queue_insides_in_worker 'worker/w.c: layer worker includes "queue/claim_start.h"' <<'T'
queue/claim_start.h|/* the insides */
worker/w.c|#include "queue/claim_start.h"
T
bad tasks_in_workflow '^workflow/w.c:2: names taskq.tasks' <<'T'
workflow/w.c|/* a comment may name taskq.tasks */\nstatic const char *q = "SELECT 1 FROM taskq.tasks"
T
bad tasks_in_literal_tail '^api/a.c:4: names taskq.tasks' <<'T'
api/a.c|static const char *q =\n\t"SELECT \\"x\\" FROM taskq.runs"\n\t" JOIN "\n\t"taskq.tasks AS t ON true";
T
bad tasks_in_worker '^worker/w.c:1: names taskq.tasks' <<'T'
worker/w.c|static const char *q = "DELETE FROM taskq.tasks";
T
bad tasks_at_top '^taskq.c:1: names taskq.tasks' <<'T'
taskq.c|static const char *q = "UPDATE taskq.tasks SET x = 1";
T
bad registry_in_queue '^queue/q.c:2: names taskq.worker_registry' <<'T'
queue/q.c|/* taskq.worker_registry in a comment */\nstatic const char *q = "DELETE FROM taskq.worker_registry";
T
bad check_call '^workflow/w.c:1: calls a taskq._check_' <<'T'
workflow/w.c|static const char *q = "SELECT taskq._check_retry($1)";
T
bad check_call_in_queue '^queue/q.c:2: calls a taskq._check_' <<'T'
queue/q.c|/* "taskq._check_x" in a comment is no call */\nstatic const char *q = "SELECT taskq._check_x($1)";
T
bad file_circle '^include circle of files .*: queue/a -> queue/b -> queue/a$' <<'T'
queue/a.h|/* a */
queue/b.h|/* b */
queue/a.c|#include "queue/a.h"\n#include "queue/b.h"
queue/b.c|#include "queue/b.h"\n#include "queue/a.h"
T
bad file_circle_header_and_c '^include circle of files .*: ipc/a -> ipc/b -> ipc/a$' <<'T'
ipc/a.h|#include "ipc/b.h"
ipc/b.h|/* b */
ipc/b.c|#include "ipc/a.h"
T
bad file_circle_three '^include circle of files .*: queue/a -> queue/b -> queue/c -> queue/a$' <<'T'
queue/a.h|/* a */
queue/b.h|/* b */
queue/c.h|/* c */
queue/a.c|#include "queue/b.h"
queue/b.c|#include "queue/c.h"
queue/c.c|#include "queue/a.h"
T

# The good tree: the same kinds of file, each keeping the rules.
plant good <<'T'
common/plan.h|/* plan */
queue/queue.h|#include "common/plan.h"\n#include "queue/task.h"
queue/task.h|/* the status */
queue/relation.h|#include "queue/queue.h"
queue/relation.c|#include "queue/relation.h"\n/* taskq.tasks, "quoted" in a comment */\nstatic const char *q = "SELECT 1 FROM taskq.tasks";
queue/claim.c|#include "queue/relation.h"\n#include "queue/queue.h"\nstatic const char *m = "a taskq.tasks row";
workflow/workflow.h|#include "queue/queue.h"
workflow/run.c|#include "workflow/workflow.h"\n/* no call of taskq._check_retry, "SELECT taskq.tasks" */\nstatic const char *q = "SELECT taskq.tasks_written()";\nstatic const char c = \x27"\x27;\nstatic const char *r = "SELECT 1 FROM taskq.runs";
api/api.c|#include "queue/queue.h"\n#include "workflow/workflow.h"\nPG_FUNCTION_INFO_V1(taskq_x);\nstatic const char *s = "taskq.tasks_written";
worker/loop.c|#include "queue/queue.h"\n// "taskq.tasks" in a line comment\nstatic const char *q = "SELECT 1 FROM taskq.runs";\nstatic const char *r = "DELETE FROM taskq.worker_registry";
taskq.c|#include "queue/relation.h"\n#include "api/api.h"
api/api.h|#include "workflow/workflow.h"
T
good_then_src "layers: every include of src/ keeps the layer rule; only queue/queue.h above the queue; no circles of headers or of files; SQL entry points only in api/; taskq.tasks named in SQL only by queue/, taskq.worker_registry only by worker/; no call of taskq._check_*"
