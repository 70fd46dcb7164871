#!/usr/bin/env python3
"""producer.py: simulate commits on a few branches and queue their exports.

Each commit is made under the branch's commit lock (an advisory transaction
lock here), and in the same transaction (the export's step 1):

  1. replace the task next-export-{branch} by one exporting *this* commit;
  2. add the dependency done-export-{branch} -> next-export-{branch}, so that
     the new export starts only after the running one is done.  That may
     fail, which is safe:
       23503  done-export-{branch} does not exist: no export yet, start now;
       55000  done-export-{branch} was aborted: start now.
     (A done-export that completed is simply "already satisfied": 0 added.)

replace_tasks refuses (55000) while next-export-{branch} is itself being
handled by a worker, for the instant that takes: then we retry the commit.
A next-export that is still waiting is replaced, so commits that arrive
during a long export are coalesced: only the newest one gets exported.
"""

import argparse
import random
import time

import psycopg2
from psycopg2.extras import Json, execute_values

from common import (FOREIGN_KEY_VIOLATION, NOT_IN_PREREQUISITE_STATE, connect, detail,
                    done_export_id, log, next_export_id, once, transaction)


def first_content(branch, rnd):
    """Objects of a branch's first commit: {path: (etag, size_mb)}."""
    objects = {"README.md": (etag(rnd), 1)}
    for day in (1, 2, 3):
        for part in range(rnd.randint(2, 4)):
            objects[f"tables/events/date=2024-05-0{day}/part-{part:04d}.parquet"] = (
                etag(rnd), rnd.randint(5, 40))
    for part in range(3):
        objects[f"tables/users/part-{part:04d}.parquet"] = (etag(rnd), rnd.randint(1, 20))
    if branch == "main":
        # One big object: copying it takes longer than a lease, the worker
        # keeps it with extend_ownership heartbeats.
        objects["tables/clicks/big-0000.parquet"] = (etag(rnd), 600)
    return objects


def next_content(previous, rnd):
    """The objects of a new commit: some changed, a new day, maybe the oldest day dropped."""
    objects = {}
    for path, (tag, size) in previous.items():
        objects[path] = (etag(rnd), size) if rnd.random() < 0.25 else (tag, size)
    days = sorted({p.split("/")[2] for p in objects if p.startswith("tables/events/")})
    last = int(days[-1][-2:]) if days else 0
    for part in range(rnd.randint(1, 3)):
        objects[f"tables/events/date=2024-05-{last + 1:02d}/part-{part:04d}.parquet"] = (
            etag(rnd), rnd.randint(5, 40))
    if len(days) > 2 and rnd.random() < 0.5:           # retention: the oldest day goes away
        for path in [p for p in objects if f"/{days[0]}/" in p]:
            del objects[path]
    users = sorted(p for p in objects if p.startswith("tables/users/"))
    if len(users) > 1 and rnd.random() < 0.3:           # and sometimes a single file
        del objects[rnd.choice(users)]
    return objects


def etag(rnd):
    return f"{rnd.getrandbits(32):08x}"


def commit(cur, branch, producer, rnd):
    """One commit on branch and the queueing of its export.

    Returns (commit id, what add_dependencies said, number of objects, the
    commit whose export this one replaced before it began, or None)."""
    # The branch's commit lock: commits on one branch are serialized, so the
    # last replace of next-export-{branch} is always for the newest commit.
    cur.execute("SELECT pg_advisory_xact_lock(hashtext('export_demo commit ' || %s))", (branch,))
    cur.execute("SELECT commit_id, seq FROM export_demo.commits WHERE branch = %s"
                " ORDER BY seq DESC LIMIT 1", (branch,))
    row = cur.fetchone()
    if row is None:
        seq, objects = 1, first_content(branch, rnd)
    else:
        cur.execute("SELECT path, etag, size_mb FROM export_demo.commit_objects"
                    " WHERE commit_id = %s", (row[0],))
        seq = row[1] + 1
        objects = next_content({p: (e, s) for p, e, s in cur.fetchall()}, rnd)
    commit_id = f"{branch}-c{seq}"
    cur.execute("INSERT INTO export_demo.commits (commit_id, branch, seq, producer, export_wait)"
                " VALUES (%s, %s, %s, %s, '')", (commit_id, branch, seq, producer))
    execute_values(cur, "INSERT INTO export_demo.commit_objects (commit_id, path, etag, size_mb)"
                   " VALUES %s", [(commit_id, p, e, s) for p, (e, s) in sorted(objects.items())])

    # Step 1 of the story.  (A next-export still pending is for an older
    # commit whose export has not begun: it is replaced, that commit is
    # never exported on its own.  Only read to say so.)
    cur.execute("SELECT body->>'commit' FROM taskq.tasks WHERE id = %s AND status_code = 'pending'",
                (next_export_id(branch),))
    row = cur.fetchone()
    coalesced = row[0] if row else None
    cur.execute("SELECT taskq.replace_tasks(%s)", (Json([{
        "id": next_export_id(branch),
        "action": "next-export",
        "body": {"branch": branch, "commit": commit_id},
        "priority": 5,
    }]),))
    cur.execute("SAVEPOINT wait_for_export")
    try:
        cur.execute("SELECT taskq.add_dependencies(ARRAY[%s], ARRAY[%s])",
                    (done_export_id(branch), next_export_id(branch)))
        added = cur.fetchone()[0]
        wait = "waits for done-export" if added else "previous export done"
    except psycopg2.Error as e:
        cur.execute("ROLLBACK TO SAVEPOINT wait_for_export")
        if e.pgcode == FOREIGN_KEY_VIOLATION:
            wait = "first export"
        elif e.pgcode == NOT_IN_PREREQUISITE_STATE:
            wait = "previous export aborted"
        else:
            raise
    cur.execute("UPDATE export_demo.commits SET export_wait = %s WHERE commit_id = %s",
                (wait, commit_id))
    return commit_id, wait, len(objects), coalesced


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="producer")
    ap.add_argument("--branches", default="main,dev,feature")
    ap.add_argument("--commits", type=int, default=6, help="commits to make (default 6)")
    ap.add_argument("--gap", type=float, default=1.0, help="mean seconds between commits")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()

    rnd = random.Random(args.seed)
    branches = args.branches.split(",")
    offset = rnd.randrange(len(branches))
    conn = connect(f"branch-export {args.name}")
    for i in range(args.commits):
        time.sleep(rnd.uniform(0.3, 1.7) * args.gap)
        # Every branch once first, then at random.
        branch = branches[(i + offset) % len(branches)] if i < len(branches) else rnd.choice(branches)
        while True:
            try:
                commit_id, wait, n, coalesced = transaction(
                    conn, lambda cur: commit(cur, branch, args.name, rnd))
                break
            except psycopg2.Error as e:
                if e.pgcode != NOT_IN_PREREQUISITE_STATE:
                    raise
                # next-export-{branch} is owned by a worker right now.
                time.sleep(0.05)
        line = f"commit {commit_id} ({n} objects): next-export-{branch} {wait}"
        if coalesced:
            line = (f"commit {commit_id} ({n} objects): replaced next-export-{branch}, which had"
                    f" not begun exporting {coalesced}")
        if coalesced and once("coalesced"):
            log(args.name, line)
            log(args.name, f"  {coalesced} is not exported on its own: {commit_id} contains it"
                           " (commits made before their export begins are coalesced)")
        elif wait == "waits for done-export" and once("waits"):
            log(args.name, line)
            log(args.name, f"  a dependency: it starts once done-export-{branch}, the export"
                           " running now, is done")
        else:
            detail(args.name, line)
    conn.close()


if __name__ == "__main__":
    main()
