#!/usr/bin/env python3
"""worker.py: a taskq worker for the site-manager story (the status-driven seed).

The loop: own one ready task of our actions with a lease (own_tasks), do the
step's work (sleep a little), then in one transaction:

  1. lock the site's status row (FOR NO KEY UPDATE) and read its state;
  2. state not 'creating' (the site is being deleted): return the task
     'aborted', record nothing;
  3. otherwise, with FAIL_RATE chance (only before the last try: the faults
     are transient) the step fails: record a 'failed' execution and return
     'pending' (the action policy retries it after 0.2 s, 0.4 s, 0.8 s ...);
  4. otherwise set the step's flag (mark-running: state 'running'), record
     an 'ok' execution and return 'completed'.

Each return is return_and_own, which claims the next task in the same call
and commits with the return (taskq_worker.Worker.give_back).

The deletion updates the same row in the transaction that calls
cancel_workflow, so a step either commits before the deletion or sees
'deleting' and does nothing; and taskq never hands out a task of a
cancelled workflow again.  The seed's status check and taskq's cancellation
both say no; either alone would do here.
"""

import argparse
import random
import time

from common import ACTIONS, Worker, detail, log, once, transaction

LEASE = 5.0                 # seconds of ownership granted by own_tasks
MAX_TRIES = 8               # as in the action policy (schema.sql)
FLAG = {"save-metadata": "metadata_ready", "create-fs": "fs_ready", "create-db": "db_ready",
        "bootstrap": "bootstrapped"}


class SiteWorker(Worker):
    def __init__(self, name, fail_rate):
        super().__init__(name, f"site-manager {name}", ACTIONS, LEASE)
        self.fail_rate = fail_rate

    def handle(self, task):
        site = task.body["site"]
        time.sleep(random.uniform(0.1, 0.3))          # the step's work
        fails = task.tries < MAX_TRIES and random.random() < self.fail_rate

        def txn(cur):
            cur.execute("SELECT state FROM site_demo.sites WHERE site_id = %s FOR NO KEY UPDATE",
                        (site,))
            state = cur.fetchone()[0]
            if state != "creating":
                self.give_back(cur, task, f"site is {state}", "aborted")
                return f"skipped ({state})"
            if fails:
                outcome, code, status = "failed", "pending", f"try {task.tries} failed"
            else:
                outcome, code, status = "ok", "completed", "done"
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
            self.give_back(cur, task, status, code)
            cur.execute("INSERT INTO site_demo.executions"
                        " (site_id, task_id, action, outcome, try, actor)"
                        " VALUES (%s, %s, %s, %s, %s, %s)",
                        (site, task.id, task.action, outcome, task.tries, self.actor))
            return outcome
        outcome = transaction(self.conn, txn)
        if outcome.startswith("skipped"):
            log(self.name, f"{task.id} try {task.tries}: {outcome}: returned it 'aborted',"
                           " did nothing")
        elif outcome == "failed":
            if once("retried"):
                log(self.name, f"{task.id} try {task.tries} failed: returned 'pending'")
                log(self.name, "  the action policy retries it after 0.2 s, 0.4 s, 0.8 s ...;"
                               " the summary line counts the retries")
            else:
                detail(self.name, f"{task.id} try {task.tries} failed: returned 'pending'")
        elif task.action == "mark-running":
            log(self.name, f"{site} is running: {task.id}, the join, ran last, after"
                           " its 4 steps")
        self.stats[outcome] += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="worker")
    ap.add_argument("--fail-rate", type=float, default=0.3,
                    help="chance that a try fails (default 0.3)")
    args = ap.parse_args()
    SiteWorker(args.name, args.fail_rate).run()


if __name__ == "__main__":
    main()
