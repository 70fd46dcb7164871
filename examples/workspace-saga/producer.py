#!/usr/bin/env python3
"""producer.py: asks for the workspaces (one saga run each) and cancels one
of them mid-way.

Each request is a row in ws_demo.requests and taskq.start_saga('workspace',
'ws-<n>', {"name": ...}), in one transaction.  Two requests ask for the same
name: one of them fails at its first step.  Then it cancels the run --cancel
(or, when that one has already failed or finished, the next one still
running) as soon as its name is reserved and its directory or its database
made: taskq.cancel_run, in the transaction that records the cancellation.  The steps in progress finish and
everything the run did is undone.
"""

import argparse
import sys
import time

import psycopg2
from psycopg2.extras import Json

from common import SAGA, connect, log, transaction

NAMES = ["analytics", "billing", "search", "mobile", "etl", "reports", "ml", "web",
         "analytics", "crm", "docs", "auth", "media", "ops", "chat", "maps"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=len(NAMES))
    ap.add_argument("--cancel", type=int, default=6, help="the run to cancel: ws-<n>")
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args()
    conn = connect("workspace-saga producer")

    runs = []
    for i in range(1, args.count + 1):
        run, name = f"ws-{i}", NAMES[(i - 1) % len(NAMES)]

        def start(cur, run=run, name=name):
            cur.execute("INSERT INTO ws_demo.requests (run, name) VALUES (%s, %s)", (run, name))
            cur.execute("SELECT taskq.start_saga(%s, %s, %s)", (SAGA, run, Json({"name": name})))
        transaction(conn, start)
        runs.append(run)
        time.sleep(0.03)
    log("producer", f"started {len(runs)} workspace sagas (ws-1 .. ws-{len(runs)});"
                    " 'analytics' is asked for twice")

    # The cancellation: the first run from --cancel on that is still running
    # with two steps done (the name, and the directory or the database): the
    # other of the two is in progress or about to be.
    deadline = time.monotonic() + args.timeout
    candidates = runs[args.cancel - 1:] + runs[:args.cancel - 1]
    for run in candidates:
        while time.monotonic() < deadline:
            with conn.cursor() as cur:
                cur.execute("SELECT r.status, (SELECT count(*) FROM taskq.saga_steps s"
                            "                   WHERE s.run = r.id AND s.do_state = 'succeeded')"
                            "  FROM taskq.runs r WHERE r.id = %s", (run,))
                status, succeeded = cur.fetchone()
            conn.commit()
            if status != "running" or succeeded >= 2:
                break
            time.sleep(0.01)
        if status != "running" or succeeded < 2:
            continue

        def cancel(cur, run=run):
            cur.execute("SELECT taskq.cancel_run(%s)", (run,))
            new = cur.fetchone()[0]
            cur.execute("INSERT INTO ws_demo.cancellations (run, status) VALUES (%s, %s)",
                        (run, new))
            return new
        try:
            new = transaction(conn, cancel)
        except psycopg2.Error as e:
            if e.pgcode == "55000":         # it failed or finished meanwhile: the next one
                continue
            raise
        log("producer", f"cancel_run('{run}') after {succeeded} step(s) succeeded: {new};"
                        " what it did is undone")
        return 0
    log("producer", "no run was left to cancel")
    return 1


if __name__ == "__main__":
    sys.exit(main())
