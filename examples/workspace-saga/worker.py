#!/usr/bin/env python3
"""worker.py: a taskq worker for the workspace saga (do and undo of each step).

A taskq.Worker (clients/python, set up by ../demo.py) claims the saga's do and
undo tasks like any others.  A task's body says the run, the step, the
direction, the saga's inputs ({"name": ...}) and the working map as it was
when the step became ready.  The handler does the step's work and returns
taskq.Step("success", working={...}) (return_step: the keys are merged into
the run's working map), or fails:

  * transient (--fail-rate of the tries): the work is half done (the
    directory is made, the database writes are rolled back), then it raises
    Retry: the step is tried again after 0.1 s, 0.2 s; a do step has 3 tries,
    after which the saga fails as if the step were fatal;
  * fatal (--fatal-rate of the do tries): the work is done and committed,
    then a check "fails": Step("fatal", error=...).  The saga switches to
    undoing, and the failed step is undone too, so its undo must clean up.

Undos fail transiently too (--undo-fail-rate, after doing their work) and are
tried until they succeed.  Every do and undo is idempotent: run twice it
leaves what running it once leaves.  The database writes of a step commit in
the transaction of its return_step, with a row in ws_demo.executions; the
directory is not transactional, which is why a retried create-dir and every
remove-dir check what is there.

--sabotage ACTION makes that undo do nothing and report success, to show
that the end check (check.py) catches what it leaves behind.
"""

import argparse
import json
import os
import random
import shutil
import time

from common import ACTIONS, db_schema, detail, log, once, worker, ws_dir

import taskq
from taskq import Retry

LEASE = 5.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="worker")
    ap.add_argument("--root", required=True, help="where workspaces' directories go")
    ap.add_argument("--fail-rate", type=float, default=0.2)
    ap.add_argument("--fatal-rate", type=float, default=0.05)
    ap.add_argument("--undo-fail-rate", type=float, default=0.2)
    ap.add_argument("--sabotage", default="", help="an undo action that does nothing")
    args = ap.parse_args()
    name = args.name
    w = worker(name, f"workspace-saga {name}", LEASE)

    def record(task, outcome):
        b = task.body
        task.conn.execute(
            "INSERT INTO ws_demo.executions (run, step, direction, outcome, try, actor)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            (b["run"], b["step"], b["direction"], outcome, task.tries, w.actor))

    def transient(task, what):
        w.counts[f"{task.body['direction']} retried"] += 1
        msg = f"{task.body['run']} {task.action} try {task.tries}: {what}"
        if once(f"transient-{task.body['direction']}"):
            log(name, msg + ": raised Retry, the step is tried again")
        else:
            detail(name, msg)
        raise Retry(status=what)

    def done(task, working):
        """The do's work is done (in task.conn's transaction, not committed):
        success, or by chance a fatal failure that keeps the work."""
        b = task.body
        if random.random() < args.fatal_rate:
            error = f"{b['step']} failed its check"
            record(task, "fatal")
            w.counts["do fatal"] += 1
            log(name, f"{b['run']} {task.action}: fatal ({error}); the saga undoes what it did")
            return taskq.Step("fatal", working=working, error=error)
        record(task, "success")
        w.counts["do ok"] += 1
        detail(name, f"{b['run']} {task.action} try {task.tries}: ok {working}")
        return taskq.Step("success", working=working)

    def undone(task):
        if random.random() < args.undo_fail_rate:
            transient(task, "undo failed for now")
        record(task, "success")
        w.counts["undo ok"] += 1
        detail(name, f"{task.body['run']} {task.action} try {task.tries}: undone")
        return taskq.Step("success")

    def work():
        time.sleep(random.uniform(0.05, 0.2))

    def flaky(task, what):
        if random.random() < args.fail_rate:
            transient(task, what)

    # ---- do ---------------------------------------------------------------
    @w.task("reserve-name")
    def reserve_name(task):
        run, ws = task.body["run"], task.body["inputs"]["name"]
        work()
        cur = task.conn.execute(
            "INSERT INTO ws_demo.names (name, run) VALUES (%s, %s)"
            " ON CONFLICT (name) DO UPDATE SET run = ws_demo.names.run RETURNING run", (ws, run))
        holder = cur.fetchone()[0]
        if holder != run:
            # Not ours: nothing was written; the saga fails at its first step.
            w.counts["name taken"] += 1
            log(name, f"{run} reserve-name: {ws!r} is taken by {holder}: fatal")
            return taskq.Step("fatal", error=f"name {ws!r} is taken by {holder}")
        flaky(task, "name service busy")
        return done(task, {"name": ws})

    @w.task("create-dir")
    def create_dir(task):
        run, ws = task.body["run"], task.body["working"]["name"]
        path = ws_dir(args.root, ws)
        work()
        os.makedirs(path, exist_ok=True)            # a retry finds it there
        flaky(task, "disk busy after mkdir")
        with open(os.path.join(path, "workspace.json"), "w") as f:
            json.dump({"run": run, "name": ws}, f)
        return done(task, {"dir": path})

    @w.task("create-db")
    def create_db(task):
        run, ws = task.body["run"], task.body["working"]["name"]
        schema = db_schema(ws)
        work()
        flaky(task, "database busy")                # before any write: nothing to roll back
        c = task.conn
        c.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        c.execute(f'COMMENT ON SCHEMA "{schema}" IS ' + quote(run))
        c.execute(f'CREATE TABLE IF NOT EXISTS "{schema}".items (id serial PRIMARY KEY, note text)')
        c.execute(f'INSERT INTO "{schema}".items (note) VALUES (%s)', (f"created by {run}",))
        return done(task, {"db_schema": schema})

    @w.task("register")
    def register(task):
        run, wk = task.body["run"], task.body["working"]
        work()
        if not os.path.isfile(os.path.join(wk["dir"], "workspace.json")):
            raise RuntimeError(f"{wk['dir']} is not there")
        if task.conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s",
                             (wk["db_schema"],)).fetchone() is None:
            raise RuntimeError(f"schema {wk['db_schema']} is not there")
        flaky(task, "catalogue busy")
        task.conn.execute(
            "INSERT INTO ws_demo.catalogue (name, run, dir, db_schema) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT DO NOTHING", (wk["name"], run, wk["dir"], wk["db_schema"]))
        return done(task, {"registered": True})

    # ---- undo -------------------------------------------------------------
    # The name is released last (reverse topological order), so while any
    # other undo of the run runs, the name, and so the directory and the
    # schema named after it, are still this run's.
    @w.task("release-name")
    def release_name(task):
        run, ws = task.body["run"], task.body["inputs"]["name"]
        work()
        if args.sabotage != "release-name":
            task.conn.execute("DELETE FROM ws_demo.names WHERE name = %s AND run = %s", (ws, run))
        return undone(task)

    @w.task("remove-dir")
    def remove_dir(task):
        run, ws = task.body["run"], task.body["inputs"]["name"]
        path = ws_dir(args.root, ws)
        work()
        if args.sabotage != "remove-dir" and os.path.isdir(path):
            shutil.rmtree(path)
        return undone(task)

    @w.task("drop-db")
    def drop_db(task):
        ws = task.body["inputs"]["name"]
        work()
        if args.sabotage != "drop-db":
            task.conn.execute(f'DROP SCHEMA IF EXISTS "{db_schema(ws)}" CASCADE')
        return undone(task)

    @w.task("unregister")
    def unregister(task):
        run, ws = task.body["run"], task.body["inputs"]["name"]
        work()
        if args.sabotage != "unregister":
            task.conn.execute("DELETE FROM ws_demo.catalogue WHERE name = %s AND run = %s",
                              (ws, run))
        return undone(task)

    assert sorted(w.actions) == sorted(ACTIONS)
    w.run()


def quote(text):
    return "'" + text.replace("'", "''") + "'"


if __name__ == "__main__":
    main()
