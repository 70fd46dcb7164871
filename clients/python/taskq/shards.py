"""A worker on several shards: one Worker per shard, each in a thread of its own.

``Worker([dsn0, dsn1, ...])`` or ``Worker(proxy_dsn, shards_from_proxy=True)``
calls ``run_shards(worker)`` from ``run()``.  Each shard gets a Worker of its
own with the same handlers and settings (``concurrency`` is per shard), run in
a thread: its claim loop, slots and heartbeats touch that shard only, so a
shard that is down, failing over or read-only holds up no other (its worker
reconnects with backoff, worker.py).  ``stop()`` (or SIGTERM / SIGINT, when
``run()`` is called in the main thread) stops every shard's worker; ``run()``
returns once they all returned.

With ``shards_from_proxy``, the shards are the proxy's partitions, read once at
start (``taskq_proxy.partitions()``, ordered by partition; tried again with
backoff until the proxy answers).  The proxy removes passwords from them: a
shard's password comes from ``connect_kwargs``, the password file or
PGPASSWORD, and its user, if its connection string names none, is the one the
proxy connection used.
"""

import logging
import signal
import threading

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .connect import connect
from .errors import is_unavailable
from .worker import Worker

log = logging.getLogger("taskq")

_PARTITIONS_SQL = "SELECT partition, connstr FROM taskq_proxy.partitions() ORDER BY partition"


def read_partitions(worker):
    """[(label, dsn), ...] of the proxy's partitions; tried again with backoff
    while the proxy is unavailable; None if the worker is stopped first."""
    backoff = 1.0
    while not worker._stopping.is_set():
        try:
            with connect(worker.dsn, autocommit=True,
                                 **{"application_name": "taskq worker",
                                    **worker.connect_kwargs}) as conn:
                rows = conn.execute(_PARTITIONS_SQL).fetchall()
                user = conn.info.user
        except psycopg.Error as e:
            if not is_unavailable(e):
                raise
            log.error("cannot read the partitions from the proxy: %s; again in %gs",
                      str(e).strip(), backoff)
            worker._stopping.wait(backoff)
            backoff = min(backoff * 2, worker.max_backoff)
            continue
        if not rows:
            raise ValueError("taskq_proxy.partitions() lists no partition")
        shards = []
        for partition, connstr in rows:
            if "user" not in conninfo_to_dict(connstr):
                connstr = make_conninfo(connstr, user=user)
            shards.append((str(partition), connstr))
        return shards
    return None


def _shard_worker(parent, label, dsn):
    """A Worker for one shard, with the parent's handlers and settings."""
    w = Worker(dsn, concurrency=parent.concurrency, lease=parent.lease,
               grace=parent.grace, poll_interval=parent.poll_interval,
               actor=parent.actor, connect_kwargs=parent.connect_kwargs,
               conflict_retries=parent.conflict_retries, worker_id=parent.worker_id,
               heartbeat_interval=parent.heartbeat_interval, max_backoff=parent.max_backoff)
    w._runners = parent._runners
    w.shard = label
    w._retry_connect = True
    w.on_lease_lost = parent.on_lease_lost      # a subclass's hook sees every shard's losses
    return w


def run_shards(parent):
    """Run a worker per shard until parent.stop() (or a signal)."""
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, lambda signum, frame: parent.stop())
    try:
        if parent.shards_from_proxy:
            shards = read_partitions(parent)
            if shards is None:
                return
        else:
            shards = [(str(i), dsn) for i, dsn in enumerate(parent.shard_dsns)]
        workers = [_shard_worker(parent, label, dsn) for label, dsn in shards]
        parent.shards = workers
        if parent._stopping.is_set():
            return
        failures = []

        def target(w):
            try:
                w.run()
            except BaseException as e:      # noqa: BLE001: reported by run()
                log.exception("the worker of shard %s failed", w.shard)
                failures.append(e)
                parent.stop()
        threads = [threading.Thread(target=target, args=(w,), name=f"taskq-shard-{w.shard}",
                                    daemon=True) for w in workers]
        log.info("worker %s: %d shards, %d slots each", parent.actor, len(workers),
                 parent.concurrency)
        for t in threads:
            t.start()
        for w in workers:           # a stop() that came before parent.shards was set
            if parent._stopping.is_set():
                w.stop()
        for t in threads:
            while t.is_alive():
                t.join(0.5)
        if failures:
            raise failures[0]
    finally:
        parent._stopping.set()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
