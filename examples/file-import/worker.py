#!/usr/bin/env python3
"""worker.py: a taskq worker for the file-import story (the job-progress seed).

The loop: own one ready task of our actions with a lease (own_tasks), dispatch
on its action, and return it in the same transaction as the task's own writes,
with return_and_own, which claims the next task in the same call
(taskq_worker.Worker.give_back).  While idle, sleep until a NOTIFY on channel "taskq" (or
half a second).

  create-job      read the file's row count, set_job_item_count, then insert
                  one process-item per row plus the job-completed join with
                  taskq.chord (every task carries "workflow": the job id)
  process-item    "import" the row (a tiny bit of work), record it in
                  import_demo.processed, report_progress, return completed
  job-completed   runs once every process-item completed (the chord's join):
                  marks the job done in import_demo.jobs_done

A worker whose lease was taken over gets TQ001 from the return and its
transaction rolls back: the row is not recorded, the progress not counted.
So every row is processed exactly once, and item_progress is exact.
"""

import argparse
import random
import time

from psycopg2.extras import Json

from common import ACTIONS, Worker, completed_id, item_id, log, transaction

LEASE = 5.0                 # seconds of ownership granted by own_tasks


class ImportWorker(Worker):
    def __init__(self, name, work_ms):
        super().__init__(name, f"file-import {name}", ACTIONS, LEASE)
        self.work_ms = work_ms
        self.handlers = {"create-job": self.create_job, "process-item": self.process_item,
                         "job-completed": self.job_completed}

    def handle(self, task):
        self.handlers[task.action](task)
        self.stats[task.action] += 1

    def complete(self, cur, task, status="done"):
        self.give_back(cur, task, status, "completed")

    # ---- the seed's handlers ---------------------------------------------------

    def create_job(self, task):
        job = task.body["job"]

        def txn(cur):
            cur.execute("SELECT line_no FROM import_demo.file_rows WHERE job_id = %s"
                        " ORDER BY line_no", (job,))
            lines = [r[0] for r in cur.fetchall()]
            cur.execute("SELECT taskq.set_job_item_count(%s, %s, %s)",
                        (task.id, task.token, len(lines)))
            items = [{"id": item_id(job, n), "action": "process-item", "workflow": job,
                      "body": {"job": job, "line": n}} for n in lines]
            join = {"id": completed_id(job), "action": "job-completed", "workflow": job,
                    "body": {"job": job}}
            cur.execute("SELECT taskq.chord(%s, %s)", (Json(items), Json(join)))
            self.complete(cur, task, f"{len(lines)} items queued")
            return len(lines)
        n = transaction(self.conn, txn)
        log(self.name, f"{job}: queued {n} process-item tasks (one per row of {task.body['file']})"
                       f" + {completed_id(job)}, the join")

    def process_item(self, task):
        job, line = task.body["job"], task.body["line"]

        def txn(cur):
            cur.execute("SELECT content FROM import_demo.file_rows"
                        " WHERE job_id = %s AND line_no = %s", (job, line))
            content = cur.fetchone()[0]
            time.sleep(self.work_ms / 1000 * random.uniform(0.5, 1.5))   # "import" the row
            cur.execute("INSERT INTO import_demo.processed (job_id, line_no, actor)"
                        " VALUES (%s, %s, %s)", (job, line, self.actor))
            cur.execute("SELECT taskq.report_progress(%s, %s)", (task.id, task.token))
            self.complete(cur, task, f"imported {content.split(',')[0]}")
        transaction(self.conn, txn)

    def job_completed(self, task):
        job = task.body["job"]

        def txn(cur):
            cur.execute("INSERT INTO import_demo.jobs_done (job_id, actor) VALUES (%s, %s)",
                        (job, self.actor))
            cur.execute("SELECT count(*) FROM import_demo.processed WHERE job_id = %s", (job,))
            rows = cur.fetchone()[0]
            self.complete(cur, task, "job done")
            return rows
        rows = transaction(self.conn, txn)
        log(self.name, f"{job}: {task.id}, the join, ran last: after all {rows} process-item"
                       " tasks; job done")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="worker")
    ap.add_argument("--work-ms", type=float, default=20.0,
                    help="mean milliseconds of work per row (default 20)")
    args = ap.parse_args()
    ImportWorker(args.name, args.work_ms).run()


if __name__ == "__main__":
    main()
