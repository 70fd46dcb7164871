"""The worker: claims tasks, runs their handlers, heartbeats and returns them.

Threads, not asyncio.  A handler is the user's code, and most of it blocks:
file and network I/O, libraries that know nothing of an event loop, CPU work.
With threads a plain function is a handler, a blocking call in it stalls only
its own task, and psycopg 3's synchronous API is thread-safe per connection:
each concurrent task gets a connection of its own (``task.conn``), so its
writes and its return can be one transaction, and nothing is shared between
tasks but the worker's bookkeeping, under one lock.  The cost, one thread and
one connection per slot, is small for the tens of slots a worker process runs;
beyond that, run more processes.

Threads of a running Worker:

- the caller of ``run()``: the claim loop.  It claims with ``own_tasks`` up
  to as many tasks as it has free slots, with ``wait``: the call sleeps in
  the server until work of the worker's actions is ready (at most
  ``poll_interval`` seconds, then it is made again), and with no free slot
  the loop waits for one.  ``stop()`` cancels the claim in flight.  Against
  an extension whose ``own_tasks`` has no ``wait`` (before 0.5) it LISTENs on
  channel ``taskq`` instead (its payload is the action whose tasks became
  ready) and claims when a notification names one of its actions, when a
  slot frees up, and at least every ``poll_interval`` seconds.
- ``concurrency`` slot threads, each with its own connection: run a task's
  handler, then return the task in the handler's transaction; unless the
  worker is stopping (or the return asks for a delay), with
  ``return_and_own``, which claims the slot's next task in the same call.
- the heartbeat thread, with its own connection: ``extend_ownership`` for
  every task in progress whose lease is half gone, in one call.  A task it
  learns is no longer owned (``owned = false``: the lease expired and another
  worker claimed it, or it was cancelled) has its lease lost: its
  ``lease_lost`` flag is set, the loss is logged, and whatever its handler
  does is rolled back and not returned.  Every ``heartbeat_interval`` seconds
  it also writes the worker's row of the view ``taskq.workers``
  (``taskq.worker_heartbeat``: its ``worker_id``, actor, host, pid, version,
  actions, concurrency and interval); ``run()`` writes it first before it
  claims, and deletes it (``taskq.worker_stopped``) when it returns after a
  clean shutdown.  On an extension without the function (before 0.6:
  42883), or for a role that may not call it (42501), the worker logs a
  warning once and runs without these heartbeats.

Returning: a handler's return value completes the task (``str()`` of it is
the status text, None leaves the status as it is; ``Result(value, status)``
also stores ``value`` as the task's JSON result, which ``wait_for_task`` and
the successors' ``predecessor_results`` read); ``raise Retry(delay)``
returns it pending, to run again after ``delay``; any other exception returns
it pending with the exception as status, to be retried until ``max_tries``
(the task's or the action's policy) is used up, when taskq aborts it;
``raise Abort(status)`` aborts it at once.  Steps of state machines and
sagas are tasks too: returning ``Transition(event, context)`` finishes a
machine's step with ``taskq.transition`` (a plain string is the event, with
the context unchanged), returning ``Step(result, working, error)`` finishes a
saga's step with ``taskq.return_step``.  ``task.continue_machine(cursor)``
forks the next chunk of a continuation and commits the fork at once, on a
second connection of the slot, so that another worker takes the next chunk
while this handler works on its own; ``task.fan_in_contexts()`` and
``task.predecessor_results()`` (what the task's predecessors returned) run
on the task's connection.  ``task.concurrency_key`` is the task's key.  A handler (or the commit of its
return) that fails with a deadlock or a serialization failure (40P01, 40001)
is run again in a new transaction, up to ``conflict_retries`` times, as
PostgreSQL advises, before the try counts as failed.  A return refused with
TQ001 (the lease was lost in between) is reported with ``on_lease_lost``,
not fatal.

Several shards: ``Worker([dsn0, dsn1, ...])`` (one libpq connection
string per shard, each possibly multi-host), or ``Worker(proxy_dsn,
shards_from_proxy=True)`` (the shards are read once at start from the proxy's
``taskq_proxy.partitions()``), runs one worker per shard (shards.py): each
with all of the above (claim loop, ``concurrency`` slots, heartbeats) on its
shard alone, so that a shard that is down, failing over or read-only holds
up no other.  ``concurrency`` is per shard.

Unavailable databases.  A claim, heartbeat or return that fails because the
database cannot serve (``errors.is_unavailable``: class 08, 57P01-57P03,
53300, 25006 read-only after a failover, or a connection without a
SQLSTATE) drops its connection; the claim loop connects again after 1 s,
2 s, 4 s, ... up to ``max_backoff`` (back to 1 s once a claim succeeds),
while the other shards go on.  Only what is safe to repeat is repeated: a
claim is simply made again on the new connection, and a plain return whose
handler wrote nothing on ``task.conn`` (so the return was its only
statement) is made again with the same token on a new connection, with
backoff, until the task's lease ends (a return already committed makes the
repeat a no-op).  A return that carried the handler's writes, a transition
or a saga step is not repeated: its commit is unknown, so the task comes
back when its lease expires and runs again.

Shutdown (SIGTERM, SIGINT, or ``stop()``): claiming stops, tasks claimed but
not yet started are given back at once, running handlers have ``grace``
seconds to finish (their ``task.stopping`` is set), and the tasks of those
that did not are given back, without counting a try, with
``taskq.release_task`` (on an extension without it: returned ``pending``,
which counts the try).  Then ``run()`` returns.
"""

import collections
import logging
import os
import queue
import random
import select
import signal
import socket
import threading
import time
import traceback
from datetime import timedelta

import psycopg
from psycopg.types.json import Jsonb

from .connect import connect
from .errors import TokenError, from_psycopg, is_unavailable

log = logging.getLogger("taskq")

_HEARTBEAT_SQL = "SELECT taskq.worker_heartbeat(%s, %s)"

__all__ = ["Worker", "Task", "Result", "PredecessorResult", "Retry", "Abort", "Transition",
           "Step"]


class Retry(Exception):
    """Raise in a handler to return the task pending, to run again after
    ``delay`` (seconds or a timedelta; None: the task's retry policy).
    A try is counted: at ``max_tries`` taskq aborts the task instead.
    What the handler wrote on ``task.conn`` is rolled back, unless
    ``commit`` is true: then it commits with the return (a record of the
    failed try, a checkpoint for the next)."""

    def __init__(self, delay=None, status=None, commit=False):
        super().__init__(status or "retry")
        self.delay = delay
        self.status = status
        self.commit = commit


class Abort(Exception):
    """Raise in a handler to abort the task (and, by the cascade, every task
    that waits for it), with ``status`` as its status text.  The handler's
    writes on ``task.conn`` are rolled back, unless ``commit`` is true."""

    def __init__(self, status=None, commit=False):
        super().__init__(status or "aborted")
        self.status = status
        self.commit = commit


class Result:
    """A handler's return value that completes its task with a JSON result:
    ``value`` (anything ``json`` can encode; at most 1 MiB as jsonb) is stored
    in the task's ``result``, for ``wait_for_task`` and the successors'
    ``predecessor_results``; ``status`` is the status text (None leaves it)."""

    def __init__(self, value, status=None):
        self.value = value
        self.status = status


PredecessorResult = collections.namedtuple(
    "PredecessorResult", ["id", "status_code", "status", "result"])
PredecessorResult.__doc__ = """One direct predecessor of a task and what it returned
(``Task.predecessor_results``)."""


class Transition:
    """A handler's result for a state machine's step: the event (None in a
    final state ends the run) and the new context (None keeps it)."""

    def __init__(self, event=None, context=None):
        self.event = event
        self.context = context


class Step:
    """A handler's result for a saga's step: result (success, retry, fatal,
    wait or rerun), the keys to merge into the working map, an error text."""

    def __init__(self, result="success", working=None, error=None):
        self.result = result
        self.working = working
        self.error = error


class Task:
    """A claimed task, as a handler sees it.

    id, action, body (the JSON body as Python objects), tries (this try's
    number, 1 for the first), token (the performance token), deadline (the
    lease's end as taskq set it at the claim), concurrency_key (the task's
    key of its action's concurrency limits, None when it has none or the
    extension is older than 0.6), conn (this slot's connection:
    statements on it run in the transaction that returns the task, committed
    with the return, rolled back if the lease is lost), lease_lost (bool:
    another worker may own the task now; stop and do not write), stopping
    (bool: the worker is shutting down; finish soon or stop), heartbeats
    (how many times the lease was extended).
    """

    def __init__(self, row, lease, worker=None):
        self.id, self.token, self.action, self.body, self.tries, self.deadline = row[:6]
        # own_tasks' seventh column (0.6); an older extension returns six
        self.concurrency_key = row[6] if len(row) > 6 else None
        self.conn = None
        self._worker = worker
        self.heartbeats = 0
        self.lease_lost_event = threading.Event()
        self.stopping_event = threading.Event()
        self._lease = lease
        self._expires = time.monotonic() + lease     # our view of the lease's end
        self._state = "queued"      # queued, running, returning, done, released, lost
        self._lost_reported = False

    @property
    def lease_lost(self):
        return self.lease_lost_event.is_set()

    @property
    def stopping(self):
        return self.stopping_event.is_set()

    def __repr__(self):
        return f"<Task {self.id!r} action={self.action!r} try={self.tries}>"

    def continue_machine(self, cursor, in_transaction=False):
        """Fork this machine step's run for the next cursor (continuation);
        the fork's run id, or None for a None cursor.

        The fork is committed at once, on a second connection of the slot
        (not ``task.conn``, whose transaction is the handler's): another
        worker can claim the next chunk while this handler works on its own,
        so call it first.  A handler that fails or crashes afterwards loses
        nothing: its step is tried again, and the same visit forks only once
        (the call returns the fork already made).  ``in_transaction=True``
        forks on ``task.conn`` instead, committed with the task's return
        (the next chunk then starts only after this one ends)."""
        if in_transaction or self._worker is None:
            conn = self.conn
        else:
            conn = self._worker._aux_connection()
        return conn.execute("SELECT taskq.continue_machine(%s, %s, %s)",
                            (self.id, self.token, cursor)).fetchone()[0]

    def predecessor_results(self):
        """What this task's direct predecessors returned, in id order: a list
        of ``PredecessorResult(id, status_code, status, result)`` (``result``
        as Python objects; None for a predecessor without one, or not
        finished yet).  Read on ``task.conn``."""
        rows = self.conn.execute(
            "SELECT id, status_code::text, status, result"
            "  FROM taskq.predecessor_results(%s, %s)", (self.id, self.token)).fetchall()
        return [PredecessorResult(*r) for r in rows]

    def fan_in_contexts(self):
        """The instances of this fan-in batch: [(run id, context), ...]."""
        return self.conn.execute("SELECT run, context FROM taskq.fan_in_contexts(%s, %s)",
                                 (self.id, self.token)).fetchall()


def _json(value):
    return None if value is None else Jsonb(value)


def _interval(value):
    if value is None or isinstance(value, timedelta):
        return value
    return timedelta(seconds=value)


class Worker:
    """A pool of ``concurrency`` slots that run the handlers of the actions
    registered with ``@worker.task(action)``.

    dsn            libpq connection string ("" : the PG* environment variables);
                   a list of them: one per shard, a worker on each
    shards_from_proxy  dsn is a taskq_proxy database: work on each of its
                   partitions (taskq_proxy.partitions(), read once at start)
    concurrency    tasks run at once (threads, one connection each); per shard
    lease          seconds of each claim and each heartbeat's extension
    grace          seconds running handlers get to finish at shutdown
    poll_interval  longest wait between claims when no notification comes
    actor          the name taskq records as the owner (default: host/pid)
    worker_id      the worker's row in taskq.workers (default: host:pid)
    heartbeat_interval  seconds between two heartbeats into taskq.workers
    connect_kwargs more keyword arguments for psycopg.connect
    conflict_retries  times a handler is run again, in a new transaction,
                   when it or its return fails with a deadlock or a
                   serialization failure (40P01, 40001), before the try
                   counts as failed
    max_backoff    longest wait in seconds between two connection attempts
                   to a database that is unavailable
    """

    def __init__(self, dsn="", concurrency=8, lease=60.0, grace=30.0, poll_interval=5.0,
                 actor=None, connect_kwargs=None, conflict_retries=8, worker_id=None,
                 heartbeat_interval=10.0, shards_from_proxy=False, max_backoff=30.0):
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if lease <= 0:
            raise ValueError("lease must be positive")
        if heartbeat_interval <= 0:
            raise ValueError("heartbeat_interval must be positive")
        if max_backoff <= 0:
            raise ValueError("max_backoff must be positive")
        if isinstance(dsn, (list, tuple)):
            if shards_from_proxy:
                raise ValueError("shards_from_proxy wants one dsn: the proxy database's")
            if not dsn:
                raise ValueError("no shard given")
            if len(set(dsn)) != len(dsn):
                raise ValueError("a shard is listed twice")
            self.shard_dsns = list(dsn)     # several shards (shards.py)
            dsn = None
        else:
            self.shard_dsns = None
        self.dsn = dsn
        self.shards_from_proxy = bool(shards_from_proxy)
        self.max_backoff = float(max_backoff)
        self.shard = None           # the shard's label, in a worker of one of several
        self.shards = []            # several shards: their workers, once run() made them
        self._retry_connect = False     # a shard's worker: connect with backoff at start
        self._backoff = 1.0
        self.concurrency = concurrency
        self.lease = float(lease)
        self.grace = float(grace)
        self.poll_interval = float(poll_interval)
        self.actor = actor or f"{socket.gethostname()}/{os.getpid()}"
        # a worker id is at most 200 bytes: the host name is cut
        self.worker_id = worker_id or f"{socket.gethostname()[:180]}:{os.getpid()}"
        self.heartbeat_interval = float(heartbeat_interval)
        self._registry_on = True        # off: the extension has no registry, or denied
        self._registry_listed = False   # a heartbeat went in: worker_stopped at the end
        self._registry_next = 0.0
        self._registry_lock = threading.Lock()   # no heartbeat after worker_stopped
        self._registry_closed = False
        self.connect_kwargs = dict(connect_kwargs or {})
        self.conflict_retries = conflict_retries
        # action -> runner(worker, task, conn) -> (status_code, status,
        # retry_delay, error): how the task is to be returned.
        # The extension point: @task registers a plain handler's runner;
        # richer kinds of handler (state machines, saga steps) will register
        # runners of their own with _register.
        self._runners = {}
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._tasks = {}            # id -> Task, claimed and not yet finished here
        self._queue = queue.Queue()
        self._stopping = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._release_sql = None
        self._notified = False
        self._local = threading.local()     # a slot's second connection (continue_machine)
        self._claim_wait = False    # own_tasks has "wait" (0.5): the waiting claim
        self._claim_conn = None     # the claim loop's connection while a waiting claim runs
        self._claim_cancelled = False
        self._stats = {"completed": 0, "retried": 0, "failed": 0, "aborted": 0,
                       "leases_lost": 0, "released": 0, "heartbeats": 0}

    @property
    def stats(self):
        """Counts of what the worker did (summed over its shards' workers)."""
        if not self.shards:
            return self._stats
        return {k: sum(w._stats[k] for w in self.shards) for k in self._stats}

    # ---- registration ----------------------------------------------------

    def task(self, action):
        """Decorator: fn(task) handles the tasks of action."""
        def register(fn):
            self._register(action, _plain_runner(fn))
            return fn
        return register

    def _register(self, action, runner):
        if action in self._runners:
            raise ValueError(f"action {action!r} already has a handler")
        self._runners[action] = runner

    @property
    def actions(self):
        return sorted(self._runners)

    # ---- lifecycle ---------------------------------------------------------

    def stop(self):
        """Begin a graceful shutdown (what SIGTERM and SIGINT do); thread-safe."""
        self._stopping.set()
        self._wake()
        for w in list(self.shards):
            w.stop()
        # A waiting claim in flight is cancelled (no lock: stop() may run in a
        # signal handler of the claim loop's own thread).
        claiming = self._claim_conn
        if claiming is not None:
            self._claim_cancelled = True
            try:
                claiming.cancel()
            except psycopg.Error:
                pass

    def run(self):
        """Claim and run tasks until stop() (or SIGTERM / SIGINT, when called
        in the main thread); returns after the shutdown."""
        if not self._runners:
            raise ValueError("no handlers: register one with @worker.task(action)")
        if self.shard_dsns is not None or self.shards_from_proxy:
            from .shards import run_shards
            run_shards(self)
            return
        previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                previous[sig] = signal.signal(sig, lambda signum, frame: self.stop())
        conn = None
        threads = []
        try:
            conn = self._first_connection()
            if conn is None:
                return              # stopped before the shard could be reached
            self._release_sql = self._release_statement(conn)
            try:
                self._registry_heartbeat(conn)
            except psycopg.Error as e:
                if not self._retry_connect:
                    raise
                # a shard's worker: its claim loop reconnects with backoff
                log.error("worker_heartbeat failed%s: %s", self._where(), e)
            hb = threading.Thread(target=self._heartbeat_loop, name="taskq-heartbeat",
                                  daemon=True)
            hb.start()
            threads.append(hb)
            for i in range(self.concurrency):
                t = threading.Thread(target=self._slot_loop, name=f"taskq-slot-{i + 1}",
                                     daemon=True)
                t.start()
                threads.append(t)
            log.info("worker %s: %d slots for %s, lease %gs", self.actor, self.concurrency,
                     ", ".join(self.actions), self.lease)
            conn = self._claim_loop(conn)
            self._shutdown(conn)
            self._registry_stopped(conn)
        finally:
            self._stopping.set()
            for _ in range(self.concurrency):
                self._queue.put(None)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if conn is not None:
                conn.close()
        log.info("worker %s%s stopped: %s", self.actor, self._where(),
                 ", ".join(f"{k} {v}" for k, v in self._stats.items()))

    def _where(self):
        return "" if self.shard is None else f" (shard {self.shard})"

    def _first_connection(self):
        """The claim loop's first connection.  A shard's worker tries with
        backoff until it connects (None if stopped first): a shard that is
        down at start holds up no other; a worker of one database fails."""
        if not self._retry_connect:
            return self._listening_connection()
        while not self._stopping.is_set():
            try:
                return self._listening_connection()
            except psycopg.Error as e:
                if not is_unavailable(e):
                    raise
                log.error("cannot connect%s: %s; next attempt in %gs", self._where(),
                          str(e).strip(), self._backoff)
                self._stopping.wait(self._backoff)
                self._backoff = min(self._backoff * 2, self.max_backoff)
        return None

    def _connect(self, autocommit):
        return connect(self.dsn, autocommit=autocommit,
                               **{"application_name": "taskq worker", **self.connect_kwargs})

    def _release_statement(self, conn):
        have = conn.execute(
            "SELECT to_regprocedure('taskq.release_task(text,uuid)') IS NOT NULL").fetchone()[0]
        if have:
            return "SELECT taskq.release_task(%s, %s)"
        log.warning("taskq.release_task is missing (extension older than 0.5): tasks given back"
                    " at shutdown are returned 'pending', which counts a try")
        return "SELECT taskq.return_task(%s, %s, 'released', 'pending')"

    # ---- the workers registry ----------------------------------------------------

    def _registry_heartbeat(self, conn):
        """Write this worker's row of taskq.workers (autocommit conn).  A
        connection error propagates; any other is logged."""
        with self._registry_lock:
            if self._registry_on and not self._registry_closed:
                self._registry_write(conn)

    def _registry_write(self, conn):
        self._registry_next = time.monotonic() + self.heartbeat_interval
        info = {"actor": self.actor, "host": socket.gethostname()[:255], "pid": os.getpid(),
                "version": f"taskq-python {_version()}", "actions": self.actions,
                "concurrency": self.concurrency, "heartbeat_interval": self.heartbeat_interval}
        try:
            conn.execute(_HEARTBEAT_SQL, (self.worker_id, Jsonb(info)))
            self._registry_listed = True
        except (psycopg.errors.UndefinedFunction, psycopg.errors.InsufficientPrivilege) as e:
            self._registry_on = False
            log.warning("no heartbeats into taskq.workers: %s (%s)", e.sqlstate,
                        str(e).strip().splitlines()[0])
        except psycopg.Error as e:
            if is_unavailable(e):
                raise
            log.error("worker_heartbeat failed: %s", from_psycopg(e))

    def _registry_stopped(self, conn):
        with self._registry_lock:
            self._registry_closed = True
            if not self._registry_listed:
                return
            try:
                conn.execute("SELECT taskq.worker_stopped(%s)", (self.worker_id,))
            except psycopg.Error as e:
                log.warning("worker_stopped failed: %s", from_psycopg(e))

    def _aux_connection(self):
        """The calling slot's second connection (autocommit), for what a
        handler commits at once, apart from its task's transaction: the
        forks of continue_machine.  Opened at the first use, closed with the
        slot."""
        aux = getattr(self._local, "aux", None)
        if aux is None or aux.closed:
            aux = self._local.aux = self._connect(autocommit=True)
        return aux

    def _wake(self):
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass

    # ---- claiming ------------------------------------------------------------

    def _free_slots(self):
        with self._lock:
            return self.concurrency - len(self._tasks)

    def _claim_loop(self, conn):
        """Claim for the free slots until stop(); the connection the shutdown
        is to use."""
        if self._claim_wait:
            return self._waiting_claim_loop(conn)
        claim_now = True
        next_poll = 0.0
        actions = set(self._runners)
        while not self._stopping.is_set():
            now = time.monotonic()
            free = self._free_slots()
            if free > 0 and (claim_now or now >= next_poll):
                claim_now = False
                next_poll = now + self.poll_interval
                try:
                    got = self._claim(conn, free)
                except psycopg.Error as e:
                    if is_unavailable(e):
                        log.error("claim failed%s (%s); reconnecting", self._where(), e)
                        conn = self._reconnect(conn)
                        continue
                    # Not fatal (a serialization failure, a privilege revoked for
                    # a while): try again at the next poll.
                    log.error("claim failed%s: %s", self._where(), from_psycopg(e))
                    got = 0
                # A full batch: there may be more; claim again when a slot frees.
                claim_now = got == free
            timeout = max(0.0, next_poll - time.monotonic()) if free > 0 else self.poll_interval
            readable = select.select([conn.fileno(), self._wake_r], [], [], timeout)[0]
            if self._wake_r in readable:
                self._drain_wake()
                claim_now = True            # a slot freed up, or stop()
            if conn.fileno() in readable:
                try:
                    conn.pgconn.consume_input()
                except psycopg.OperationalError as e:
                    log.error("lost the connection (%s); reconnecting", e)
                    conn = self._reconnect(conn)
                    claim_now = True
                    continue
                while (n := conn.pgconn.notifies()) is not None:
                    if n.extra.decode() in actions:
                        claim_now = True
            if self._notified:
                self._notified = False
                claim_now = True
        return conn

    def _waiting_claim_loop(self, conn):
        """The claim loop on an extension whose own_tasks has ``wait`` (0.5):
        the claim for the free slots sleeps in the server until work of the
        worker's actions is ready, at most poll_interval, and is made again at
        once; with no free slot, the loop waits for one.  No LISTEN, no poll.
        stop() cancels the claim in flight; the shutdown then uses a new
        connection (a cancel request may come late)."""
        while not self._stopping.is_set():
            free = self._free_slots()
            if free <= 0:
                if self._wake_r in select.select([self._wake_r], [], [], self.poll_interval)[0]:
                    self._drain_wake()
                continue
            try:
                self._claim(conn, free, wait=self.poll_interval)
            except psycopg.errors.QueryCanceled:
                if not self._stopping.is_set():
                    log.error("claim cancelled; claiming again")
            except psycopg.Error as e:
                if not is_unavailable(e):
                    log.error("claim failed%s: %s", self._where(), from_psycopg(e))
                    self._stopping.wait(self.poll_interval)
                    continue
                log.error("claim failed%s (%s); reconnecting", self._where(), e)
                conn = self._reconnect(conn)
        if self._claim_cancelled:
            conn.close()
            try:
                conn = self._connect(autocommit=True)
            except psycopg.OperationalError as e:
                log.error("cannot connect for the shutdown: %s", e)
        return conn

    def _listening_connection(self):
        conn = self._connect(autocommit=True)
        self._claim_wait = conn.execute(
            "SELECT to_regprocedure('taskq.own_tasks(text,integer,text[],interval,interval)')"
            " IS NOT NULL").fetchone()[0]
        if self._claim_wait:
            return conn         # the waiting claim: no notifications needed
        # Notifications that arrive while a claim runs are consumed by it:
        # this handler sees them; the loop reads those that arrive between.
        conn.add_notify_handler(self._on_notify)
        conn.execute("LISTEN taskq")
        return conn

    def _on_notify(self, notify):
        if notify.payload in self._runners:
            self._notified = True

    def _reconnect(self, conn):
        """A new connection for the claim loop, after 1 s, 2 s, 4 s, ... up to
        max_backoff (the backoff starts again at 1 s only after a claim
        succeeded: a database that accepts connections but fails every claim,
        a standby say, is not hammered)."""
        conn.close()
        while not self._stopping.is_set():
            self._stopping.wait(self._backoff)
            self._backoff = min(self._backoff * 2, self.max_backoff)
            if self._stopping.is_set():
                break
            try:
                return self._listening_connection()
            except psycopg.Error as e:
                if not is_unavailable(e):
                    raise
                log.error("cannot connect%s: %s", self._where(), str(e).strip())
        return conn

    def _drain_wake(self):
        try:
            while os.read(self._wake_r, 512):
                pass
        except BlockingIOError:
            pass

    def _claim(self, conn, free, wait=None):
        """Claim up to free tasks and queue them for the slots; with wait
        (seconds), the waiting claim.  (SELECT *: an extension before 0.6 has
        no column concurrency_key.)"""
        if wait is None:
            rows = conn.execute("SELECT * FROM taskq.own_tasks(%s, %s, %s, %s)",
                                (self.actor, free, self.actions,
                                 _interval(self.lease))).fetchall()
        else:
            self._claim_conn = conn
            try:
                if self._stopping.is_set():
                    return 0
                rows = conn.execute(
                    "SELECT * FROM taskq.own_tasks(%s, %s, %s, %s, wait => %s)",
                    (self.actor, free, self.actions, _interval(self.lease),
                     _interval(wait))).fetchall()
            finally:
                self._claim_conn = None
        self._backoff = 1.0         # the database serves: the next reconnection is quick
        for row in rows:
            task = Task(row, self.lease, self)
            with self._lock:
                self._tasks[task.id] = task
            self._queue.put(task)
        if rows:
            log.debug("claimed %s", ", ".join(r[0] for r in rows))
        return len(rows)

    # ---- slots -------------------------------------------------------------------

    def _slot_loop(self):
        conn = None
        while True:
            task = self._queue.get()
            if task is None:
                break
            while task is not None:         # a task, then those its returns claimed
                with self._lock:
                    if task._state != "queued":        # released at shutdown
                        break
                    if task.lease_lost:                # lost before it started
                        task._state = "lost"
                        self._tasks.pop(task.id, None)
                        self._changed.notify_all()
                        break
                    task._state = "running"
                nxt = None
                try:
                    if conn is None or conn.closed:
                        conn = self._connect(autocommit=False)
                    nxt = self._run_task(conn, task)
                except Exception as e:
                    if not isinstance(e, _ConnectionDropped) and not is_unavailable(e):
                        log.exception("task %s: unexpected error in the worker", task.id)
                    else:
                        if not isinstance(e, _ConnectionDropped):
                            log.error("task %s%s: connection lost or database unavailable"
                                      " (%s); its lease will expire", task.id, self._where(),
                                      str(e).strip())
                        if conn is not None:
                            conn.close()
                        conn = None
                finally:
                    with self._lock:
                        self._tasks.pop(task.id, None)
                        if task._state in ("running", "returning"):
                            task._state = "done"
                        if nxt is not None:
                            # In the same critical section: the claim loop and
                            # the shutdown never see the slot empty in between.
                            # (nxt may be the same task again, a retry: hence
                            # after the pop.)
                            self._tasks[nxt.id] = nxt
                            if self._stopping.is_set():
                                nxt._state = "released"
                        self._changed.notify_all()
                    task.conn = None
                if nxt is not None and nxt._state == "released":
                    self._release(conn, nxt)
                    with self._lock:
                        self._tasks.pop(nxt.id, None)
                        self._changed.notify_all()
                    nxt = None
                if nxt is None:
                    self._wake()            # a free slot: the claim loop may claim
                task = nxt
        if conn is not None:
            conn.close()
        aux = getattr(self._local, "aux", None)
        if aux is not None:
            aux.close()

    def _run_task(self, conn, task):
        """Run the task's handler and return the task; the task the return
        claimed (return_and_own), if any."""
        task.conn = conn
        attempt = 0
        claimed = []
        while True:
            attempt += 1
            code, status, delay, error = self._runners[task.action](self, task, conn)
            if _is_conflict(error) and attempt <= self.conflict_retries and not task.lease_lost:
                # A deadlock or serialization failure: PostgreSQL's advice is to
                # run the transaction again; it is not a failed try.
                conn.rollback()
                log.debug("task %s: %s; running its handler again", task.id, error)
                time.sleep(random.uniform(0.005, 0.05) * attempt)
                continue
            with self._lock:
                lost = task._state != "running" or task.lease_lost
                if not lost:
                    task._state = "returning"
            if lost:
                conn.rollback()
                why = "given back at shutdown" if task._state == "released" else "lease lost"
                log.info("task %s (try %d): %s, its result (%s) is dropped",
                         task.id, task.tries, why, code)
                return
            if code == "pending" and error is not None:
                # The handler's writes are rolled back; the return is a transaction of its own.
                conn.rollback()
            elif conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
                # The handler caught an error of its transaction and returned: nothing
                # it wrote can be committed, so this try failed.
                conn.rollback()
                code, status, delay = "pending", "the handler's transaction failed", None
                error = RuntimeError("the handler returned with its transaction failed")
            idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            try:
                claimed = self._return(conn, task, code, status, delay, claim=True)
                break
            except psycopg.Error as e:
                if is_unavailable(e):
                    if not idle or isinstance(status, (Transition, Step)):
                        raise       # its commit is unknown: the lease expires
                    # the return was the only statement: safe to make again
                    self._retry_return(task, code, status, delay, e)
                    raise _ConnectionDropped() from e
                conn.rollback()
                err = from_psycopg(e)
                if isinstance(err, TokenError):
                    self._lose_lease(task, f"taskq refused its return ({err.sqlstate}:"
                                           f" {err.message})")
                    return
                if _is_conflict(e) and attempt <= self.conflict_retries:
                    with self._lock:
                        if task._state == "returning":
                            task._state = "running"
                    time.sleep(random.uniform(0.005, 0.05) * attempt)
                    continue
                if code == "pending":
                    log.error("task %s (try %d): return failed: %s", task.id, task.tries, err)
                    return
                # The return, or the commit of the handler's writes with it, failed
                # (a constraint checked at commit, say): this try failed.
                log.warning("task %s (try %d): the return as %s failed (%s); returned pending",
                            task.id, task.tries, code, err)
                code, status, delay, error = "pending", f"return failed: {err}", None, err
                try:
                    self._return(conn, task, code, status, delay)
                    break
                except psycopg.Error as e2:
                    if is_unavailable(e2):
                        raise
                    conn.rollback()
                    log.error("task %s (try %d): return failed: %s", task.id, task.tries,
                              from_psycopg(e2))
                    return
        key = {"completed": "completed", "aborted": "aborted"}.get(
            code, "failed" if error is not None else "retried")
        with self._lock:
            self._stats[key] += 1
        if error is not None:
            log.warning("task %s (try %d) failed: %s", task.id, task.tries, error,
                        exc_info=error if error.__traceback__ is not None else None)
        else:
            log.debug("task %s (try %d) returned %s", task.id, task.tries, code)
        if claimed:
            log.debug("claimed %s with the return", claimed[0][0])
            return Task(claimed[0], self.lease, self)
        return None

    def _retry_return(self, task, code, status, delay, first_error):
        """The return of task failed because the database was unavailable, and
        the return was its transaction's only statement: make it again (with
        return_task and the same token: a no-op if the first one committed)
        on new connections, after 0.5 s, 1 s, 2 s, ... up to max_backoff,
        until it is made or the task's lease ends (or the worker stops and
        three tries have been made at shutdown)."""
        backoff = 0.5
        error = first_error
        give_up = task._expires
        tries = 0
        while True:
            now = time.monotonic()
            tries += 1
            if now >= give_up or (self._stopping.is_set() and tries > 3):
                log.error("task %s (try %d)%s: return not made (%s); its lease will expire",
                          task.id, task.tries, self._where(), str(error).strip())
                return
            log.warning("task %s (try %d)%s: return failed (%s); trying again in %gs",
                        task.id, task.tries, self._where(), str(error).strip(), backoff)
            time.sleep(min(backoff, max(0.0, give_up - now)))
            backoff = min(backoff * 2, self.max_backoff)
            try:
                with self._connect(autocommit=True) as conn:
                    self._return(conn, task, code, status, delay)
            except psycopg.Error as e:
                if is_unavailable(e):
                    error = e
                    continue
                err = from_psycopg(e)
                if isinstance(err, TokenError):
                    self._lose_lease(task, f"taskq refused its return ({err.sqlstate}:"
                                           f" {err.message})")
                else:
                    log.error("task %s (try %d): return failed: %s", task.id, task.tries, err)
                return
            key = {"completed": "completed", "aborted": "aborted"}.get(code, "retried")
            with self._lock:
                self._stats[key] += 1
            log.info("task %s (try %d)%s: returned %s on a new connection", task.id,
                     task.tries, self._where(), code)
            return

    def _return(self, conn, task, code, status, delay, claim=False):
        """Return the task and commit.  With claim, unless the worker is
        stopping or a delay is asked for: return_and_own, which claims the
        slot's next task in the same call and transaction; the claimed rows."""
        rows = []
        # A handler that wrote nothing on task.conn left no transaction open:
        # the return is then one statement in autocommit, one round trip
        # instead of BEGIN, the call and COMMIT.
        idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        if idle:
            conn.autocommit = True
        try:
            if isinstance(status, Transition):
                conn.execute("SELECT taskq.transition(%s, %s, %s, %s)",
                             (task.id, task.token, status.event, _json(status.context)))
            elif isinstance(status, Step):
                conn.execute("SELECT taskq.return_step(%s, %s, %s, %s, %s)",
                             (task.id, task.token, status.result, _json(status.working),
                              status.error))
            elif claim and delay is None and not self._stopping.is_set():
                result = None
                if isinstance(status, Result):
                    status, result = status.status, _json(status.value)
                rows = conn.execute(
                    "SELECT *"
                    "  FROM taskq.return_and_own(ARRAY[%s], ARRAY[%s]::uuid[], ARRAY[%s]::text[],"
                    "                            ARRAY[%s]::taskq.status[], %s, 1, %s, %s,"
                    "                            ARRAY[%s]::jsonb[])",
                    (task.id, task.token, status, code, self.actor, self.actions,
                     _interval(self.lease), result)).fetchall()
            else:
                result = None
                if isinstance(status, Result):
                    status, result = status.status, _json(status.value)
                conn.execute("SELECT taskq.return_task(%s, %s, %s, %s, %s, %s)",
                             (task.id, task.token, status, code, _interval(delay), result))
        finally:
            if idle and not conn.closed:
                conn.autocommit = False
        if not idle:
            conn.commit()
        return rows

    # ---- heartbeats -----------------------------------------------------------

    def _heartbeat_loop(self):
        tick = min(1.0, self.lease / 8)
        conn = None
        while not self._stopping.is_set() or self._running_tasks():
            time.sleep(tick)
            now = time.monotonic()
            if self._registry_on and now >= self._registry_next and not self._stopping.is_set():
                try:
                    if conn is None or conn.closed:
                        conn = self._connect(autocommit=True)
                    self._registry_heartbeat(conn)
                except psycopg.Error as e:
                    log.error("worker_heartbeat failed%s: %s", self._where(), e)
                    if conn is not None:
                        conn.close()
                        conn = None
            with self._lock:
                due = [t for t in self._tasks.values()
                       if t._state in ("queued", "running") and t._expires - now < self.lease / 2]
            if not due:
                continue
            try:
                if conn is None or conn.closed:
                    conn = self._connect(autocommit=True)
                rows = conn.execute(
                    "SELECT id, owned FROM taskq.extend_ownership(%s, %s, %s::uuid[], %s)",
                    (self.actor, [t.id for t in due], [t.token for t in due],
                     _interval(self.lease))).fetchall()
            except psycopg.Error as e:
                log.error("heartbeat failed%s: %s", self._where(), e)
                if is_unavailable(e) and conn is not None:
                    conn.close()
                    conn = None
                continue
            owned = dict(rows)
            for t in due:
                if owned.get(t.id):
                    t._expires = now + self.lease
                    t.heartbeats += 1
                    with self._lock:
                        self._stats["heartbeats"] += 1
                    continue
                with self._lock:
                    if t._state not in ("queued", "running"):
                        continue            # returned meanwhile
                self._lose_lease(t, "extend_ownership: no longer owned")
        if conn is not None:
            conn.close()

    def _lose_lease(self, task, reason):
        with self._lock:
            if task._lost_reported:
                return
            task._lost_reported = True
            task.lease_lost_event.set()
            self._stats["leases_lost"] += 1
        try:
            self.on_lease_lost(task, reason)
        except Exception:   # noqa: BLE001: a hook's failure must not stop the heartbeats
            log.exception("on_lease_lost failed")

    def on_lease_lost(self, task, reason):
        """Called once for a task whose lease the worker learns it lost: from the
        heartbeat thread (extend_ownership answered owned = false) or from the
        task's slot (its return was refused with TQ001).  The handler's result
        is dropped either way.  The default logs a warning; override it (in a
        subclass) to count or report the loss."""
        log.warning("task %s (try %d): lease lost (%s); its result is dropped",
                    task.id, task.tries, reason)

    def _running_tasks(self):
        with self._lock:
            return any(t._state in ("queued", "running") for t in self._tasks.values())

    # ---- shutdown --------------------------------------------------------------

    def _shutdown(self, conn):
        log.info("worker %s: stopping; %d tasks in progress", self.actor, len(self._tasks))
        with self._lock:
            queued = [t for t in self._tasks.values() if t._state == "queued"]
            for t in queued:
                t._state = "released"
            for t in self._tasks.values():
                t.stopping_event.set()
        for t in queued:
            self._release(conn, t)
        deadline = time.monotonic() + self.grace
        with self._lock:
            while any(t._state in ("running", "returning") for t in self._tasks.values()):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(left)
            late = [t for t in self._tasks.values() if t._state == "running"]
            for t in late:
                t._state = "released"
                t.lease_lost_event.set()
        for t in late:
            log.warning("task %s (try %d): still running after %gs of grace; given back",
                        t.id, t.tries, self.grace)
            self._release(conn, t)
        # A return that began before the grace ran out is let finish.
        with self._lock:
            while any(t._state == "returning" for t in self._tasks.values()):
                self._changed.wait(1.0)

    def _release(self, conn, task):
        try:
            conn.execute(self._release_sql, (task.id, task.token))
            if not conn.autocommit:
                conn.commit()
            with self._lock:
                self._stats["released"] += 1
        except psycopg.Error as e:
            if not conn.autocommit and not conn.closed:
                conn.rollback()
            log.warning("task %s: could not give it back (%s); its lease will expire",
                        task.id, from_psycopg(e))


class _ConnectionDropped(Exception):
    """A slot's connection is to be dropped (what was to be done on it was
    done or given up on, and logged)."""


def _version():
    from . import __version__       # the package's, set after this module is imported
    return __version__


def _is_conflict(error):
    return isinstance(error, psycopg.Error) and error.sqlstate in ("40001", "40P01")


def _plain_runner(fn):
    """The runner of a @task handler: (status_code, status, retry_delay, error)."""
    def run(worker, task, conn):
        try:
            result = fn(task)
        except Retry as r:
            if not r.commit:
                conn.rollback()
            return "pending", r.status, r.delay, None
        except Abort as a:
            if not a.commit:
                conn.rollback()
            return "aborted", a.status, None, None
        except Exception as e:      # noqa: BLE001: any failure of the handler is a failed try
            if log.isEnabledFor(logging.DEBUG):
                log.debug("task %s:\n%s", task.id, traceback.format_exc())
            return "pending", f"{type(e).__name__}: {e}", None, e
        if isinstance(result, (Transition, Step, Result)):
            return "completed", result, None, None
        return "completed", None if result is None else str(result), None, None
    return run

