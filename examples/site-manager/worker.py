#!/usr/bin/env python3
"""worker.py: a taskq worker for the site-manager story (a status-driven workflow).

A taskq.Worker (clients/python, set up by ../demo.py) runs one task of our
actions at a time with a lease; the handler does the step's work (sleep a
little), then, on task.conn, in the transaction that returns the task:

  1. lock the site's status row (FOR NO KEY UPDATE) and read its state;
  2. state not 'creating' (the site is being deleted): return the task
     'aborted' (raise Abort), record nothing;
  3. otherwise, with FAIL_RATE chance (only before the last try: the faults
     are transient) the step fails: record a 'failed' execution and return
     'pending' (raise Retry, committing the record; the action policy
     retries it after 0.2 s, 0.4 s, 0.8 s ...);
  4. otherwise set the step's flag (mark-running: state 'running'), record
     an 'ok' execution and return 'completed'.

The deletion updates the same row in the transaction that calls
cancel_workflow, so a step either commits before the deletion or sees
'deleting' and does nothing; and taskq never hands out a task of a
cancelled workflow again.  The status check and taskq's cancellation
both say no; either alone would do here.
"""

import argparse
import random
import time

from common import ACTIONS, detail, log, once, worker

from taskq import Abort, Retry

LEASE = 5.0                 # seconds of ownership granted by own_tasks
MAX_TRIES = 8               # as in the action policy (schema.sql)
FLAG = {"save-metadata": "metadata_ready", "create-fs": "fs_ready", "create-db": "db_ready",
        "bootstrap": "bootstrapped"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="worker")
    ap.add_argument("--fail-rate", type=float, default=0.3,
                    help="chance that a try fails (default 0.3)")
    args = ap.parse_args()
    name = args.name
    w = worker(name, f"site-manager {name}", LEASE)

    def handle(task):
        site = task.body["site"]
        time.sleep(random.uniform(0.1, 0.3))          # the step's work
        fails = task.tries < MAX_TRIES and random.random() < args.fail_rate
        cur = task.conn.cursor()
        cur.execute("SELECT state FROM site_demo.sites WHERE site_id = %s FOR NO KEY UPDATE",
                    (site,))
        state = cur.fetchone()[0]
        if state != "creating":
            w.counts[f"skipped ({state})"] += 1
            log(name, f"{task.id} try {task.tries}: skipped ({state}): returned it 'aborted',"
                      " did nothing")
            raise Abort(f"site is {state}")
        outcome = "failed" if fails else "ok"
        if not fails:
            if task.action == "mark-running":
                cur.execute("UPDATE site_demo.sites SET state = 'running',"
                            " running_at = clock_timestamp() WHERE site_id = %s"
                            " AND metadata_ready AND fs_ready AND db_ready AND bootstrapped",
                            (site,))
                if cur.rowcount != 1:
                    raise RuntimeError(f"{task.id}: a step is not done")
            else:
                cur.execute(f"UPDATE site_demo.sites SET {FLAG[task.action]} = true"
                            " WHERE site_id = %s", (site,))
        cur.execute("INSERT INTO site_demo.executions"
                    " (site_id, task_id, action, outcome, try, actor)"
                    " VALUES (%s, %s, %s, %s, %s, %s)",
                    (site, task.id, task.action, outcome, task.tries, w.actor))
        w.counts[outcome] += 1
        if fails:
            if once("retried"):
                log(name, f"{task.id} try {task.tries} failed: returned 'pending'")
                log(name, "  the action policy retries it after 0.2 s, 0.4 s, 0.8 s ...;"
                          " the summary line counts the retries")
            else:
                detail(name, f"{task.id} try {task.tries} failed: returned 'pending'")
            raise Retry(status=f"try {task.tries} failed", commit=True)
        if task.action == "mark-running":
            log(name, f"{site} is running: {task.id}, the join, ran last, after its 4 steps")
        return "done"

    for action in ACTIONS:
        w.task(action)(handle)
    w.run()


if __name__ == "__main__":
    main()
