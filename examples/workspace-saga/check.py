#!/usr/bin/env python3
"""check.py: the end check of the workspace saga; exits 1 on any violation.

Every run ended succeeded, failed or cancelled (exactly one cancelled: the one
the producer cancelled; none dismal or unfinished), and:

  * a succeeded workspace is whole: its name is held by its run, its
    directory has workspace.json naming its run, its schema exists (with its
    run in the schema's comment and its items table), and the catalogue has
    it with that directory and schema;
  * a failed or cancelled workspace left nothing behind: no name, no
    catalogue entry, no directory and no schema of its run; and nothing is
    under the root or among the ws_data_* schemas that does not belong to a
    succeeded run;
  * every do took effect at most once per step, a succeeded run's four
    exactly once and nothing of it undone; in a failed or cancelled run every
    started step (taskq.saga_steps: its do succeeded or failed) was undone
    exactly once, and no step that did not start was.

Then it prints the run_graph (Mermaid) of a failed run: the one that undid
most, else the cancelled one.
"""

import argparse
import json
import os
import sys
from collections import Counter

from common import UNDO, connect, db_schema, ws_dir


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--graph", default="mermaid", choices=["mermaid", "dot"])
    args = ap.parse_args()
    conn = connect("workspace-saga check")
    cur = conn.cursor()
    bad = []

    cur.execute("SELECT q.run, q.name, r.status, r.error FROM ws_demo.requests q"
                " LEFT JOIN taskq.runs r ON r.id = q.run")
    runs = {run: (name, status, error) for run, name, status, error in cur.fetchall()}
    cur.execute("SELECT name, run FROM ws_demo.names")
    names = dict(cur.fetchall())
    cur.execute("SELECT run, name, dir, db_schema FROM ws_demo.catalogue")
    catalogue = {run: (name, d, s) for run, name, d, s in cur.fetchall()}
    cur.execute("SELECT nspname, obj_description(oid, 'pg_namespace'),"
                "       to_regclass(quote_ident(nspname) || '.items') IS NOT NULL"
                "  FROM pg_namespace WHERE nspname LIKE 'ws\\_data\\_%'")
    schemas = {s: (owner, items) for s, owner, items in cur.fetchall()}
    cur.execute("SELECT run FROM ws_demo.cancellations")
    cancelled = [r for (r,) in cur.fetchall()]
    cur.execute("SELECT run, step, do_state, undo_state FROM taskq.saga_steps"
                " WHERE run IN (SELECT run FROM ws_demo.requests)")
    steps = {(run, step): (ds, us) for run, step, ds, us in cur.fetchall()}
    cur.execute("SELECT run, step, direction, count(*) FILTER (WHERE outcome = 'success'),"
                "       count(*) FROM ws_demo.executions GROUP BY 1, 2, 3")
    ran = {(run, step, d): (ok, n) for run, step, d, ok, n in cur.fetchall()}
    conn.commit()

    dirs = {}
    for entry in sorted(os.listdir(args.root)):
        try:
            with open(os.path.join(args.root, entry, "workspace.json")) as f:
                dirs[entry] = json.load(f).get("run")
        except (OSError, ValueError):
            dirs[entry] = None              # half made: belongs to nobody
    succeeded = {r for r, (_, st, _) in runs.items() if st == "succeeded"}

    statuses = Counter(st for _, st, _ in runs.values())
    for run, (name, status, error) in sorted(runs.items()):
        if status not in ("succeeded", "failed", "cancelled"):
            bad.append(f"run {run} is {status} ({error})")
        if (status == "cancelled") != (run in cancelled):
            bad.append(f"run {run} is {status}, cancelled by the producer: {run in cancelled}")
    if len(cancelled) != 1:
        bad.append(f"{len(cancelled)} runs were cancelled, not 1")

    for run, (name, status, _) in sorted(runs.items()):
        schema, path = db_schema(name), ws_dir(args.root, name)
        if status == "succeeded":
            if names.get(name) != run:
                bad.append(f"{run} succeeded but name {name!r} is held by {names.get(name)}")
            if dirs.get(name) != run:
                bad.append(f"{run} succeeded but {path} is {dirs.get(name, 'missing')!r}")
            if schemas.get(schema) != (run, True):
                bad.append(f"{run} succeeded but schema {schema} is {schemas.get(schema)}")
            if catalogue.get(run) != (name, path, schema):
                bad.append(f"{run} succeeded but its catalogue entry is {catalogue.get(run)}")
            for step in UNDO:
                ok, _ = ran.get((run, step, "do"), (0, 0))
                if ok != 1:
                    bad.append(f"{run} succeeded but its step {step} took effect {ok} times")
                if (run, step, "undo") in ran:
                    bad.append(f"{run} succeeded but its step {step} was undone")
        else:
            left = []
            if names.get(name) == run:
                left.append(f"name {name!r}")
            if run in catalogue:
                left.append("catalogue entry")
            left += [f"directory {d}" for d, owner in dirs.items() if owner == run]
            left += [f"schema {s}" for s, (owner, _) in schemas.items() if owner == run]
            if left:
                bad.append(f"{run} is {status} but left behind: {', '.join(left)}")
            for step in UNDO:
                do_state = steps.get((run, step), (None, None))[0]
                started = do_state in ("succeeded", "failed")
                ok_do, _ = ran.get((run, step, "do"), (0, 0))
                ok_undo, _ = ran.get((run, step, "undo"), (0, 0))
                if ok_do > 1:
                    bad.append(f"{run}: step {step} took effect {ok_do} times")
                if ok_undo != (1 if started else 0):
                    bad.append(f"{run}: step {step} (do {do_state}) undone {ok_undo} times")
    for d, owner in dirs.items():
        if owner not in succeeded:
            bad.append(f"directory {os.path.join(args.root, d)} belongs to no succeeded run"
                       f" ({owner})")
    for s, (owner, _) in schemas.items():
        if owner not in succeeded:
            bad.append(f"schema {s} belongs to no succeeded run ({owner})")

    print("runs: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())))
    failed = [r for r, (_, st, _) in runs.items() if st == "failed"]
    if failed:
        undos = {r: sum(ran.get((r, s, "undo"), (0, 0))[0] for s in UNDO) for r in failed}
        show = max(sorted(failed), key=lambda r: undos[r])
    else:
        show = cancelled[0] if cancelled else None
    if show:
        print(f"--- run_graph('{show}', '{args.graph}'): {runs[show][1]}, {runs[show][2]}")
        cur.execute("SELECT taskq.run_graph(%s, %s)", (show, args.graph))
        print(cur.fetchone()[0].rstrip())
        conn.commit()

    if bad:
        print(f"workspace-saga: FAILED, {len(bad)} violation(s):")
        for line in bad[:50]:
            print("  " + line)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
