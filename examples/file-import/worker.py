#!/usr/bin/env python3
"""worker.py: a taskq worker for the file-import story (jobs with progress).

A taskq.Worker (clients/python, set up by ../demo.py) runs one task of our
actions at a time with a lease and dispatches on its action; each handler
writes on task.conn, in the transaction that returns the task.  While idle,
it waits for a NOTIFY on channel "taskq" (or half a second).

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

from common import ACTIONS, completed_id, item_id, log, worker

from psycopg.types.json import Jsonb

LEASE = 5.0                 # seconds of ownership granted by own_tasks


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="worker")
    ap.add_argument("--work-ms", type=float, default=20.0,
                    help="mean milliseconds of work per row (default 20)")
    args = ap.parse_args()
    name = args.name
    w = worker(name, f"file-import {name}", LEASE)

    # ---- the handlers ---------------------------------------------------------

    @w.task("create-job")
    def create_job(task):
        job = task.body["job"]
        cur = task.conn.cursor()
        cur.execute("SELECT line_no FROM import_demo.file_rows WHERE job_id = %s"
                    " ORDER BY line_no", (job,))
        lines = [r[0] for r in cur.fetchall()]
        cur.execute("SELECT taskq.set_job_item_count(%s, %s, %s)",
                    (task.id, task.token, len(lines)))
        items = [{"id": item_id(job, n), "action": "process-item", "workflow": job,
                  "body": {"job": job, "line": n}} for n in lines]
        join = {"id": completed_id(job), "action": "job-completed", "workflow": job,
                "body": {"job": job}}
        cur.execute("SELECT taskq.chord(%s, %s)", (Jsonb(items), Jsonb(join)))
        w.counts[task.action] += 1
        log(name, f"{job}: queued {len(lines)} process-item tasks (one per row of"
                  f" {task.body['file']}) + {completed_id(job)}, the join")
        return f"{len(lines)} items queued"

    @w.task("process-item")
    def process_item(task):
        job, line = task.body["job"], task.body["line"]
        cur = task.conn.cursor()
        cur.execute("SELECT content FROM import_demo.file_rows"
                    " WHERE job_id = %s AND line_no = %s", (job, line))
        content = cur.fetchone()[0]
        time.sleep(args.work_ms / 1000 * random.uniform(0.5, 1.5))   # "import" the row
        cur.execute("INSERT INTO import_demo.processed (job_id, line_no, actor)"
                    " VALUES (%s, %s, %s)", (job, line, w.actor))
        cur.execute("SELECT taskq.report_progress(%s, %s)", (task.id, task.token))
        w.counts[task.action] += 1
        return f"imported {content.split(',')[0]}"

    @w.task("job-completed")
    def job_completed(task):
        job = task.body["job"]
        cur = task.conn.cursor()
        cur.execute("INSERT INTO import_demo.jobs_done (job_id, actor) VALUES (%s, %s)",
                    (job, w.actor))
        cur.execute("SELECT count(*) FROM import_demo.processed WHERE job_id = %s", (job,))
        rows = cur.fetchone()[0]
        w.counts[task.action] += 1
        log(name, f"{job}: {task.id}, the join, ran last: after all {rows} process-item"
                  " tasks; job done")
        return "job done"

    assert sorted(w.actions) == sorted(ACTIONS)
    w.run()


if __name__ == "__main__":
    main()
