"""taskq_worker.py: what the examples share (examples/*/common.py re-export it).

  connect(name)          a connection from the usual libpq variables (PGHOST,
                         PGPORT, PGDATABASE, PGUSER, ...); jsonb comes back as dicts
  transaction(conn, fn)  fn(cursor) in one transaction, committed; retried on
                         deadlock or serialization failure
  log(who, message)      one line on stdout, flushed: an event worth seeing
  detail(who, message)   the same, but only with VERBOSE=1 (make demo VERBOSE=1)
  once(key)              True the first time any process of this run asks for
                         key (DEMO_ONCE_DIR, set by run.sh): explain an event
                         the first time it happens, then only count it
  Worker                 the worker loop, for a subclass's handle(task):

    LISTEN taskq; then, until SIGTERM or SIGINT (which let the current task
    finish): own one ready task of our actions with a lease (own_tasks) and
    hand it to handle(task); while idle, wait on the connection's socket for a
    NOTIFY on channel "taskq", or half a second.  handle() returns the task
    with give_back(cur, ...) in its own transaction: that call also claims
    the next task (return_and_own: one round trip and one commit per task),
    which the loop takes once that transaction committed.  A task whose lease
    another worker took over (TQ001 from taskq, or LeaseLost) is counted and
    logged, not fatal.  On stopping, log the counts in self.stats (a detail).
"""

import os
import random
import re
import select
import signal
import time
from collections import Counter
from types import SimpleNamespace

import psycopg2
import psycopg2.extras

INVALID_TOKEN = "TQ001"           # our lease was taken over by another worker
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


class LeaseLost(Exception):
    """Another worker owns the task now."""


class Worker:
    """Owns tasks of actions, one at a time, with a lease of lease seconds, as
    actor "{name}/{pid}"; a subclass handles them in handle(task)."""

    def __init__(self, name, application_name, actions, lease):
        self.name = name
        self.actor = f"{name}/{os.getpid()}"
        self.actions = actions
        self.lease = lease
        self.stopping = False
        self.claimed = None         # what give_back's return_and_own claimed
        self.stats = Counter()
        self.conn = connect(application_name)
        with self.conn.cursor() as cur:
            cur.execute("LISTEN taskq")
        self.conn.commit()

    def handle(self, task):
        """Do the task and return it (give_back): the subclass's work."""
        raise NotImplementedError

    def give_back(self, cur, task, status, code):
        """Return task with status_code code, in the caller's transaction (cur),
        and claim our next task in the same call (return_and_own), unless we
        are stopping: then only return it (a claim we would not work on would
        hold its task until the lease ran out).  If the transaction is retried,
        the retry claims again; the claim only counts once it committed."""
        if self.stopping:
            cur.execute("SELECT taskq.return_task(%s, %s, %s, %s)",
                        (task.id, task.token, status, code))
            self.claimed = None
            return
        cur.execute("SELECT id, token, action, body, num_tries"
                    "  FROM taskq.return_and_own(ARRAY[%s], ARRAY[%s]::uuid[], ARRAY[%s],"
                    "                            ARRAY[%s]::taskq.status[], %s, 1, %s,"
                    "                            make_interval(secs => %s))",
                    (task.id, task.token, status, code, self.actor, self.actions, self.lease))
        self.claimed = self.task_of(cur.fetchone())

    def run(self):
        def stop(signum, frame):
            self.stopping = True
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        task = None
        while not self.stopping:
            if task is None:
                task = self.own()
            if task is None:
                self.idle(IDLE_WAIT)
                continue
            self.claimed = None
            try:
                self.handle(task)
                task = self.claimed     # committed with the return
            except LeaseLost as e:
                self.lease_lost(task, e)
                task = None
            except psycopg2.Error as e:
                if e.pgcode != INVALID_TOKEN:
                    raise
                why = re.sub(r' for task ".*"$', "", e.diag.message_primary or "")
                self.lease_lost(task, f"taskq refused its return ({e.pgcode}: {why})")
                task = None
        summary = ", ".join(f"{k} {v}" for k, v in sorted(self.stats.items()))
        detail(self.name, f"stopped: {summary}")

    def lease_lost(self, task, why):
        self.stats["leases lost"] += 1
        log(self.name, f"lost its lease on {task.id} (try {task.tries}): {why}")
        if once("lease lost"):
            log(self.name, "  the lease ran out, so the task went back to the queue and another"
                           " worker took it; this try's writes were rolled back")

    def own(self):
        """One ready task of our actions, owned for self.lease seconds, or None:
        id, token, action, body and tries (this try's number)."""
        def claim(cur):
            cur.execute("SELECT id, token, action, body, num_tries"
                        "  FROM taskq.own_tasks(%s, 1, %s, make_interval(secs => %s))",
                        (self.actor, self.actions, self.lease))
            return cur.fetchone()
        return self.task_of(transaction(self.conn, claim))

    def task_of(self, row):
        """A claimed row (id, token, action, body, num_tries) as a task, or None."""
        if row is None:
            return None
        return SimpleNamespace(id=row[0], token=row[1], action=row[2], body=row[3], tries=row[4])

    def idle(self, seconds):
        """Sleep until taskq notifies that tasks became ready, or for seconds."""
        if select.select([self.conn], [], [], seconds)[0]:
            self.conn.poll()
            self.conn.notifies.clear()
