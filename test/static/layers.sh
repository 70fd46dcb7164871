#!/usr/bin/env bash
# test/static/layers.sh — the layer rule of src/ (src/README.md), checked
# on the includes of every .c and .h file:
#   - every C file lives in one layer folder (common ipc queue workflow api
#     worker), except src/taskq.c, the module entry, which may include all;
#   - a file includes project headers by their layer path ("queue/queue.h"),
#     and only of its own layer or the layers below it:
#         common <- ipc <- queue <- workflow <- api
#         worker uses common, ipc and queue;
#   - project headers include each other without a circle;
#   - SQL entry points (PG_FUNCTION_INFO_V1) live in api/ only: the other
#     layers are engines that api/ calls.
# The checker first proves on bad trees that it catches each kind of
# violation, then runs on src/.
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
my (@files, %inc, @v);
find({ no_chdir => 1, wanted => sub { push @files, $File::Find::name if /\.[ch]$/ } }, $root);
for my $f (sort @files) {
    (my $rel = $f) =~ s{^\Q$root\E/}{};
    open(my $fh, "<", $f) or die "$f: $!";
    while (my $l = <$fh>) {
        push @v, "$rel: an SQL entry point outside api/ ($1)"
            if $l =~ /^\s*PG_FUNCTION_INFO_V1\((\w+)\)/ && $rel !~ m{^api/};
        next unless $l =~ /^\s*#\s*include\s+"([^"]+)"/;
        push @{ $inc{$rel} }, $1;
    }
    close $fh;
}
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
        next if $layer eq "*";
        push @v, "$rel: layer $layer includes \"$h\" of layer $hl (may include: @{$may{$layer}})"
            unless grep { $_ eq $hl } @{ $may{$layer} };
    }
}
# circles among project headers
my %state;
my @stack;
sub visit {
    my $h = shift;
    return if ($state{$h} // 0) == 2;
    if (($state{$h} // 0) == 1) {
        my @cyc = (@stack[(grep { $stack[$_] eq $h } 0..$#stack)[0] .. $#stack], $h);
        push @v, "include circle: " . join(" -> ", @cyc);
        return;
    }
    $state{$h} = 1;
    push @stack, $h;
    visit($_) for grep { exists $inc{$_} || -e "$root/$_" } @{ $inc{$h} || [] };
    pop @stack;
    $state{$h} = 2;
}
visit($_) for sort grep { /\.h$/ } keys %inc;
print "$_\n" for @v;
' "$1"
}

# Self-test: each bad tree must give at least one violation.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() {   # bad NAME: a tree in $tmp/NAME from the here-doc lines "path|content"
    local name=$1 line path
    mkdir -p "$tmp/$name"
    while IFS= read -r line; do
        path=${line%%|*}
        mkdir -p "$tmp/$name/$(dirname "$path")"
        printf '%b\n' "${line#*|}" >>"$tmp/$name/$path"
    done
    if [[ -z $(check "$tmp/$name") ]]; then
        echo "layers.sh self-test: the violation in tree '$name' was not caught" >&2
        exit 1
    fi
}
bad upward <<'T'
queue/a.h|#include "common/b.h"
common/b.h|/* ok */
queue/x.c|#include "api/y.h"
api/y.h|/* api */
T
bad worker_uses_api <<'T'
worker/w.c|#include "api/y.h"
api/y.h|/* api */
T
bad no_layer <<'T'
misc/z.c|#include "common/b.h"
common/b.h|/* ok */
T
bad top_level <<'T'
stray.c|/* a file outside every layer */
T
bad circle <<'T'
queue/a.h|#include "queue/b.h"
queue/b.h|#include "queue/a.h"
T
bad bare_name <<'T'
queue/a.h|/* a */
queue/x.c|#include "a.h"
T
bad sql_face_in_queue <<'T'
queue/x.c|PG_FUNCTION_INFO_V1(taskq_x);
T

out=$(check src)
if [[ -n $out ]]; then
    echo "$out"
    exit 1
fi
echo "layers: every include of src/ keeps the layer rule; SQL entry points only in api/"
