#!/usr/bin/env bash
# test/static/compat.sh — the differences between PostgreSQL's major
# versions live in one header, src/common/pg_compat.h:
#   - no other file of src/ names PG_VERSION_NUM or PG_MAJORVERSION_NUM
#     (a version test elsewhere is a difference the header does not own);
#   - no other file calls, outside comments, what the header wraps, whose
#     form changed between 15 and 18: table_tuple_update,
#     ExecInsertIndexTuples, ExecInitRangeTable, index_beginscan,
#     _bt_search, LockHeldByMe, MyBackendId, MyProcNumber,
#     pg_database_aclcheck, object_aclcheck, RelationGetPrimaryKeyIndex,
#     pg_attribute_noreturn, pg_noreturn, the fields PGPROC.lxid,
#     PGPROC.pgprocno and ResultRelInfo.ri_ConstraintExprs (as ->x); nor
#     includes storage/backendid.h or
#     storage/procnumber.h.  Such a call builds on the 15 that make test
#     uses and breaks on 17 or 18.
# The checker first proves on planted trees that it catches each kind of
# violation, and that a good tree passes, then runs on src/.
# Exit 0 when all hold; otherwise print each violation and exit 1.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

# check DIR: print one line per violation under DIR (a tree shaped as src/).
check() {
    # shellcheck disable=SC2016  # perl code, not shell
    perl -e '
use strict;
use warnings;
use File::Find;

my $root = shift;
my $header = "common/pg_compat.h";
my @wrapped = qw(table_tuple_update ExecInsertIndexTuples ExecInitRangeTable
                 index_beginscan _bt_search LockHeldByMe MyBackendId MyProcNumber
                 pg_database_aclcheck object_aclcheck RelationGetPrimaryKeyIndex
                 pg_attribute_noreturn pg_noreturn);
my @members = qw(lxid pgprocno ri_ConstraintExprs ri_CheckConstraintExprs);    # as p->x
my @headers = qw(storage/backendid.h storage/procnumber.h);
my @files;

find({ no_chdir => 1, wanted => sub { push @files, $File::Find::name if /\.[ch]$/ } }, $root);
for my $f (sort @files) {
    (my $rel = $f) =~ s{^\Q$root\E/}{};
    next if $rel eq $header;
    open(my $fh, "<", $f) or die "$f: $!";
    local $/;
    my $text = <$fh>;
    close $fh;
    my $n = 0;
    for my $l (split /\n/, $text, -1) {
        $n++;
        for my $h (@headers) {
            print "$rel:$n: includes $h (its name changed in 17: $header includes it)\n"
                if $l =~ /^\s*#\s*include\s+[<"]\Q$h\E[>"]/;
        }
    }
    # comments and string literals blanked, their newlines kept (line numbers hold)
    $text =~ s{(/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"|\x27(?:[^\x27\\\n]|\\.)*\x27)}{
        (my $t = $1) =~ s/[^\n]/ /g;
        $t
    }gse;
    $n = 0;
    for my $l (split /\n/, $text, -1) {
        $n++;
        print "$rel:$n: tests $1 (only $header may)\n"
            while $l =~ /\b(PG_VERSION_NUM|PG_MAJORVERSION_NUM)\b/g;
        for my $w (@wrapped) {
            print "$rel:$n: uses $w directly (call its wrapper in $header)\n"
                if $l =~ /(?<![\w.>])\Q$w\E\b/;
        }
        for my $m (@members) {
            print "$rel:$n: uses ->$m directly (call its wrapper in $header)\n"
                if $l =~ /->\s*\Q$m\E\b/;
        }
    }
}
' "$1"
}

# Self-test: each bad tree must give at least one violation, of the kind it
# plants (the line must match the pattern given), and the good tree none.
# shellcheck source=test/bin/planted.sh
source test/bin/planted.sh   # the scripts run from the top of the tree (cd above)
bad version_test '^queue/a.c:2: tests PG_VERSION_NUM' <<'T'
queue/a.c|/* a */\n#if PG_VERSION_NUM >= 170000\n#endif
T
bad major_test '^worker/w.h:1: tests PG_MAJORVERSION_NUM' <<'T'
worker/w.h|#if PG_MAJORVERSION_NUM > 15
T
bad version_in_code '^api/x.c:1: tests PG_VERSION_NUM' <<'T'
api/x.c|static int v = PG_VERSION_NUM;
T
bad raw_update '^queue/u.c:2: uses table_tuple_update directly' <<'T'
queue/u.c|/* table_tuple_update in a comment is fine */\n\tr = table_tuple_update(rel, tid, slot, cid, snap, InvalidSnapshot,\n\t\ttrue, &tmfd, &mode, &u);
T
bad raw_entries '^workflow/r.c:1: uses ExecInsertIndexTuples directly' <<'T'
workflow/r.c|list_free(ExecInsertIndexTuples(rri, slot, estate, true, false, NULL, NIL));
T
bad raw_range_table '^common/d.c:1: uses ExecInitRangeTable directly' <<'T'
common/d.c|ExecInitRangeTable(estate, list_make1(rte));
T
bad raw_beginscan '^queue/c.c:1: uses index_beginscan directly' <<'T'
queue/c.c|scan = index_beginscan(rel, idx, snap, 1, 0);
T
bad raw_backend_id '^queue/s.c:1: uses MyBackendId directly' <<'T'
queue/s.c|args[2] = Int32GetDatum(MyBackendId);
T
bad raw_proc_number '^queue/s.c:1: uses MyProcNumber directly' <<'T'
queue/s.c|int n = MyProcNumber;
T
bad raw_bt_search '^queue/w.c:1: uses _bt_search directly' <<'T'
queue/w.c|stack = _bt_search(idx, skey, &buf, BT_READ, snap);
T
bad raw_lock_held '^queue/g.c:1: uses LockHeldByMe directly' <<'T'
queue/g.c|if (LockHeldByMe(&tag, ExclusiveLock))
T
bad raw_lxid '^queue/l.c:2: uses ->lxid directly' <<'T'
queue/l.c|static LocalTransactionId my_lxid;\nif (my_lxid != MyProc->lxid)
T
bad raw_pgprocno '^queue/w.c:1: uses ->pgprocno directly' <<'T'
queue/w.c|q = proclist_contains(&cv->wakeup, MyProc->pgprocno, cvWaitLink);
T
bad raw_noreturn '^workflow/d.h:1: uses pg_attribute_noreturn directly' <<'T'
workflow/d.h|extern void taskq_bad(const char *msg) pg_attribute_noreturn();
T
bad raw_pkey '^queue/r.c:1: uses RelationGetPrimaryKeyIndex directly' <<'T'
queue/r.c|Oid pk = RelationGetPrimaryKeyIndex(rel);
T
bad raw_checks '^queue/i.c:1: uses ->ri_ConstraintExprs directly' <<'T'
queue/i.c|d.rri->ri_ConstraintExprs = states;
T
bad raw_aclcheck '^worker/r.c:1: uses pg_database_aclcheck directly' <<'T'
worker/r.c|ok = pg_database_aclcheck(db, role, ACL_CONNECT) == ACLCHECK_OK;
T
bad raw_object_aclcheck '^worker/r.c:1: uses object_aclcheck directly' <<'T'
worker/r.c|ok = object_aclcheck(DatabaseRelationId, db, role, ACL_CONNECT) == ACLCHECK_OK;
T
bad backendid_header '^queue/r.c:2: includes storage/backendid.h' <<'T'
queue/r.c|#include "postgres.h"\n#include "storage/backendid.h"
T
bad procnumber_header '^queue/r.c:1: includes storage/procnumber.h' <<'T'
queue/r.c|# include "storage/procnumber.h"
T

# The good tree: the header may do all of it; the others call its names,
# and name the wrapped calls in comments and strings only.
plant good <<'T'
common/pg_compat.h|#if PG_VERSION_NUM >= 170000\n#include "storage/procnumber.h"\n#define TASKQ_PROC_NUMBER MyProcNumber\n#else\n#include "storage/backendid.h"\n#define TASKQ_PROC_NUMBER (MyBackendId - 1)\n#endif\nstatic inline IndexScanDesc\ntaskq_index_beginscan(Relation h, Relation i, Snapshot s, int n, int o)\n{\n\treturn index_beginscan(h, i, s, n, o);\n}
queue/a.c|#include "common/pg_compat.h"\n/* as table_tuple_update does; PG_VERSION_NUM 150000 */\nscan = taskq_index_beginscan(rel, idx, snap, 1, 0);\nr = taskq_tuple_update(rel, tid, slot, cid, snap, InvalidSnapshot, true, &tmfd, &m, &u);
queue/l.c|static LocalTransactionId finished_lxid;\nif (finished_lxid != TASKQ_MY_LXID)\n\tstack = taskq_bt_search(idx, heap, skey, &buf, BT_READ, snap);\nint n = d->pgprocno_count;
queue/b.c|// MyBackendId in a line comment\nstatic const char *m = "MyBackendId, ExecInitRangeTable(";\nint s = TASKQ_PROC_NUMBER + 1;\nint t = d->index_beginscan_count;
workflow/d.h|extern TASKQ_NORETURN void taskq_bad(const char *msg);\nOid pk = taskq_primary_key_index(rel);\ntaskq_set_check_exprs(d.rri, states);
worker/r.c|ok = taskq_database_aclcheck(db, role, ACL_CONNECT) == ACLCHECK_OK;\n/*\n * index_beginscan and\n * ExecInsertIndexTuples across lines\n */
T
good_then_src "compat: only src/common/pg_compat.h tests the PostgreSQL version or uses what changed between 15 and 18"
