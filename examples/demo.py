"""demo.py: what the examples share (examples/*/common.py re-export it).

  connect(name)          a psycopg2 connection from the usual libpq variables
                         (PGHOST, PGPORT, PGDATABASE, PGUSER, ...); jsonb comes
                         back as dicts (producers, monitors, progress.py)
  transaction(conn, fn)  fn(cursor) in one transaction, committed; retried on
                         deadlock or serialization failure
  log(who, message)      one line on stdout, flushed: an event worth seeing
  detail(who, message)   the same, but only with VERBOSE=1 (make demo VERBOSE=1)
  once(key)              True the first time any process of this run asks for
                         key (DEMO_ONCE_DIR, set by run.sh): explain an event
                         the first time it happens, then only count it
  worker(name, ...)      a taskq.Worker (the Python client, clients/python) as
                         the examples run it: one task at a time, a lease of
                         lease seconds, actor "{name}/{pid}", an idle worker
                         polling every half second between notifications; a
                         lease it loses is logged (and explained once), and on
                         SIGTERM it lets the current task finish.  Its
                         handlers write on task.conn: the writes commit with
                         the task's return, or not at all.
"""

import logging
import os
import random
import re
import sys
import time
from collections import Counter

import psycopg2
import psycopg2.extras

# The Python client, from this checkout (pip install clients/python does without).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "clients", "python"))

RETRYABLE = ("40P01", "40001")    # deadlock, serialization failure
IDLE_WAIT = 0.5                   # seconds an idle worker waits for a NOTIFY
VERBOSE = os.environ.get("VERBOSE", "0") not in ("", "0")


def connect(application_name):
    conn = psycopg2.connect("", application_name=application_name)
    psycopg2.extras.register_default_jsonb(conn)
    return conn


def transaction(conn, fn, attempts=8):
    """Run fn(cursor) in one transaction and commit; retry it on deadlock or
    serialization failure (PostgreSQL's advice for 40P01/40001).  Any other
    error is rolled back and raised."""
    for attempt in range(1, attempts + 1):
        try:
            with conn.cursor() as cur:
                result = fn(cur)
            conn.commit()
            return result
        except psycopg2.Error as e:
            conn.rollback()
            if e.pgcode in RETRYABLE and attempt < attempts:
                time.sleep(random.uniform(0.005, 0.05) * attempt)
                continue
            raise


def log(who, message):
    print(f"{who:>10}: {message}", flush=True)


def detail(who, message):
    """A line only VERBOSE=1 shows: what happens all the time."""
    if VERBOSE:
        log(who, message)


_once_seen = set()


def once(key):
    """True the first time key is asked for in this run of the example, by any
    of its processes (a file created with O_EXCL in DEMO_ONCE_DIR); without
    DEMO_ONCE_DIR, the first time in this process."""
    if key in _once_seen:
        return False
    _once_seen.add(key)
    where = os.environ.get("DEMO_ONCE_DIR")
    if not where:
        return True
    try:
        os.close(os.open(os.path.join(where, key.replace("/", "_")),
                         os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        return False
    except OSError:
        return True


def worker(name, application_name, lease):
    """A taskq.Worker for an example's worker.py: register handlers with
    @w.task(action), then w.run().  w.counts is a Counter for the example's
    own counts, logged (a detail) with the worker's when it stops."""
    import taskq

    class DemoWorker(taskq.Worker):
        def on_lease_lost(self, task, reason):
            self.counts["leases lost"] += 1
            why = re.sub(r' for task ".*"\)$', ")", reason)
            log(name, f"lost its lease on {task.id} (try {task.tries}): {why}")
            if once("lease lost"):
                log(name, "  the lease ran out, so the task went back to the queue and another"
                          " worker took it; this try's writes were rolled back")

        def run(self):
            super().run()
            counts = self.counts + Counter({k: v for k, v in self.stats.items() if v})
            detail(name, "stopped: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))

    # The library's own warnings (a failed try, a refused return) as the
    # example's log lines; lost leases are logged by on_lease_lost above.
    class ToLog(logging.Handler):
        def emit(self, record):
            log(name, record.getMessage())
    library_log = logging.getLogger("taskq")
    library_log.addHandler(ToLog(logging.WARNING))
    library_log.propagate = False

    w = DemoWorker("", concurrency=1, lease=lease, grace=10, poll_interval=IDLE_WAIT,
                   actor=f"{name}/{os.getpid()}",
                   connect_kwargs={"application_name": application_name})
    w.counts = Counter()
    return w
