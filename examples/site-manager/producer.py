#!/usr/bin/env python3
"""producer.py: the site-manager's API: create sites, and delete one mid-way.

Create (a status-driven workflow):
  1. validate the request synchronously: a bad request is refused at once,
     nothing is queued;
  2. in one transaction: the site status row (state 'creating', every flag
     false) and the creation tasks, each with "workflow": the site id:
        save-metadata ─┐
        create-fs ─────┼──> mark-running      (the join)
        create-db ─> bootstrap ─┘
     queued with insert_tasks_if_absent, so a retried request queues nothing
     twice.

Delete (the "worst case": the front end gave up and deletes the site
while it is being created): in one transaction, set the state to 'deleting'
and taskq.cancel_workflow(site id).  Pending tasks are aborted at once; a task
a worker holds ends aborted whatever the worker returns, and is never retried.
"""

import argparse
import re
import time

import psycopg2
from psycopg2.extras import Json

from common import connect, log, transaction

DOMAIN = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.we-host\.example$")

REQUESTS = [
    ("site-1", "Alice's bakery", "alices-bakery.we-host.example"),
    ("site-2", "Bob's bikes", "bobs-bikes.we-host.example"),
    ("site-3", "Carol's cats", "carols-cats.we-host.example"),
    ("site-4", "Dave's diner", "daves-diner.we-host.example"),
    ("site-5", "Eve's", "-eve-.we-host.example"),                    # invalid domain
    ("site-6", "Bob's bikes again", "bobs-bikes.we-host.example"),   # domain taken
    ("site-2", "Bob's bikes", "bobs-bikes.we-host.example"),         # a retried request
]


def site_tasks(site, name, domain):
    def task(action, after):
        return {"id": f"{action}-{site}", "action": action, "workflow": site,
                "body": {"site": site, "name": name, "domain": domain},
                "to_signal_after": [f"{a}-{site}" for a in after]}
    return [task("save-metadata", ["mark-running"]),
            task("create-fs", ["mark-running"]),
            task("create-db", ["bootstrap"]),
            task("bootstrap", ["mark-running"]),
            task("mark-running", [])]


def validate(cur, site, name, domain):
    """The synchronous part: an error message, or None."""
    if not name.strip():
        return "empty name"
    if not DOMAIN.match(domain):
        return f"invalid domain {domain!r}"
    cur.execute("SELECT site_id FROM site_demo.sites WHERE domain = %s", (domain,))
    row = cur.fetchone()
    if row and row[0] != site:
        return f"domain {domain} is taken by {row[0]}"
    return None


def create(cur, site, name, domain):
    error = validate(cur, site, name, domain)
    if error:
        return f"refused: {error}"
    cur.execute("INSERT INTO site_demo.sites (site_id, name, domain) VALUES (%s, %s, %s)"
                " ON CONFLICT (site_id) DO NOTHING", (site, name, domain))
    cur.execute("SELECT count(*) FILTER (WHERE inserted)"
                "  FROM taskq.insert_tasks_if_absent(%s)", (Json(site_tasks(site, name, domain)),))
    n = cur.fetchone()[0]
    return f"accepted: {n} tasks queued" if n else "accepted again: already queued, nothing added"


def delete(cur, site):
    cur.execute("UPDATE site_demo.sites SET state = 'deleting' WHERE site_id = %s", (site,))
    cur.execute("SELECT taskq.cancel_workflow(%s)", (site,))
    n = cur.fetchone()[0]
    # Last statement before the commit: every execution of the site that
    # committed before the deletion has an earlier timestamp.
    cur.execute("INSERT INTO site_demo.cancellations (site_id, tasks, cancel_at)"
                " VALUES (%s, %s, clock_timestamp())", (site, n))
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delete", default="site-3", help="the site deleted mid-way")
    ap.add_argument("--gap", type=float, default=0.2, help="seconds between requests")
    args = ap.parse_args()

    conn = connect("site-manager producer")
    deleted = False

    def under_way(cur):
        cur.execute("SELECT metadata_ready OR fs_ready OR db_ready"
                    "  FROM site_demo.sites WHERE site_id = %s", (args.delete,))
        row = cur.fetchone()
        return bool(row and row[0])

    def wait(seconds):
        """Sleep, and delete args.delete as soon as its first step is done."""
        nonlocal deleted
        end = time.monotonic() + (seconds if seconds >= 0 else 20)
        while time.monotonic() < end and not (seconds < 0 and deleted):
            if not deleted and transaction(conn, under_way):
                n = transaction(conn, lambda cur: delete(cur, args.delete))
                transaction(conn, lambda cur: cur.execute(
                    "UPDATE site_demo.cancellations SET committed_seen = clock_timestamp()"
                    " WHERE site_id = %s", (args.delete,)))
                deleted = True
                log("api", f"delete {args.delete}: state 'deleting', cancel_workflow cancelled"
                           f" {n} tasks")
            time.sleep(0.02)

    for site, name, domain in REQUESTS:
        outcome = transaction(conn, lambda cur: create(cur, site, name, domain))
        log("api", f"create {site} {domain}: {outcome}")
        wait(args.gap)
    wait(-1)                  # until the deletion is done (20 s at most)
    if not deleted:
        raise SystemExit(f"producer: {args.delete} made no progress, not deleted")
    conn.close()


if __name__ == "__main__":
    try:
        main()
    except psycopg2.Error as e:
        raise SystemExit(f"producer: {e}")
