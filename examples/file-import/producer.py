#!/usr/bin/env python3
"""producer.py: "upload" a few files and start one import job per file.

Each file is stored in import_demo.file_rows (the upload service);
in the same transaction taskq.create_job makes the job and its first task,
create-job, whose body names the file.  The job id is the workflow key of
every task of the job.  A web page would now poll
taskq.job_states: see monitor.py.
"""

import argparse
import random
import time

from psycopg2.extras import Json, execute_values

from common import connect, create_id, detail, transaction


def upload_and_start(cur, job, rows, rnd):
    file_name = f"customers-{job}.csv"
    cur.execute("INSERT INTO import_demo.files (job_id, file_name, row_count) VALUES (%s, %s, %s)",
                (job, file_name, rows))
    execute_values(cur, "INSERT INTO import_demo.file_rows (job_id, line_no, content) VALUES %s",
                   [(job, i, f"customer-{rnd.getrandbits(24):06x},{rnd.randint(18, 90)}")
                    for i in range(1, rows + 1)])
    cur.execute("SELECT taskq.create_job(%s, %s)", (job, Json([{
        "id": create_id(job), "action": "create-job",
        "body": {"job": job, "file": file_name},
    }])))
    return file_name


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3)
    ap.add_argument("--min-rows", type=int, default=200)
    ap.add_argument("--max-rows", type=int, default=600)
    ap.add_argument("--gap", type=float, default=1.0, help="seconds between jobs")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()

    rnd = random.Random(args.seed)
    conn = connect("file-import producer")
    for i in range(1, args.jobs + 1):
        job = f"import-{i}"
        rows = rnd.randint(args.min_rows, args.max_rows)
        file_name = transaction(conn, lambda cur: upload_and_start(cur, job, rows, rnd))
        detail("producer", f"uploaded {file_name} ({rows} rows), created job {job}")
        if i < args.jobs:
            time.sleep(args.gap)
    conn.close()


if __name__ == "__main__":
    main()
