"""The databases the console shows: one connection pool each.

Owns: connecting (psycopg 3 pools, opened lazily so that a database that is
down does not keep the console from starting), what the connected role may
do (asked of PostgreSQL, never a user list of the console's own), and the
two ways a page talks to a database: `read` (one statement in autocommit,
bounded by a statement timeout so that a slow page cannot hold a
connection; `read_one_data` only for a role that may read bodies and
contexts) and `write` (a list of statements in one transaction, for the
repair actions, through the contract's functions only).

Locking: none of its own; the pools are thread-safe, and waitress serves
requests from several threads.
"""

import threading
import time

import psycopg
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

# A page must not wait longer than this for one statement.
STATEMENT_TIMEOUT_MS = 5000
# How long what a role may do is kept before it is asked again.
ROLE_TTL_SECONDS = 30.0


class Database:
    """One database: a name for the URL, its connection string, a pool."""

    def __init__(self, name, dsn, *, max_connections=4):
        self.name = name
        self.dsn = dsn
        self._pool = ConnectionPool(
            dsn, min_size=0, max_size=max_connections, open=False,
            kwargs={"autocommit": True, "row_factory": dict_row,
                    "application_name": "taskq-console"},
            configure=self._configure, name=f"taskq-console-{name}")
        self._opened = False
        self._lock = threading.Lock()
        self._role = None
        self._role_at = 0.0

    @staticmethod
    def _configure(conn):
        conn.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
        # No parallel workers for a page: they would take cores from the
        # queue's own backends, and for the console's small reads (at most a
        # few tens of thousands of rows: taskq.state_stats of a definition)
        # starting them costs more than they save, two to three times the
        # page's time on a busy server.
        conn.execute("SET max_parallel_workers_per_gather = 0")

    def _pool_open(self):
        with self._lock:
            if not self._opened:
                self._pool.open(wait=False)
                self._opened = True
        return self._pool

    def connection(self, timeout=5.0):
        """A pooled connection (a context manager), autocommit."""
        return self._pool_open().connection(timeout=timeout)

    def read(self, sql, params=None):
        """All rows of one statement, as dicts."""
        with self.connection() as conn:
            return conn.execute(sql, params).fetchall()

    def read_one(self, sql, params=None):
        """The first row of one statement (a dict), or None."""
        with self.connection() as conn:
            return conn.execute(sql, params).fetchone()

    def read_one_data(self, sql, params=None):
        """The first row of a statement that reads the data itself (a task's
        body and result, a run's context and inputs), or None when the
        connected role may not read it (a monitor): the page then says so."""
        return self.read_one(sql, params) if self.role()["reads_data"] else None

    def write(self, statements):
        """Run [(sql, params), ...] in one transaction; the rows of each."""
        out = []
        with self.connection() as conn:
            with conn.transaction():
                for sql, params in statements:
                    cur = conn.execute(sql, params)
                    out.append(cur.fetchall() if cur.description else [])
        return out

    def role(self):
        """What the connected role is and may do, asked of PostgreSQL."""
        now = time.monotonic()
        if self._role is None or now - self._role_at > ROLE_TTL_SECONDS:
            self._role = self.read_one(
                "SELECT current_user AS name,"
                " pg_catalog.pg_has_role(current_user, 'taskq_admin', 'MEMBER') AS admin,"
                " pg_catalog.has_column_privilege('taskq.tasks', 'body', 'SELECT') AS reads_data,"
                " pg_catalog.has_column_privilege('taskq.tasks', 'id', 'SELECT') AS reads_tasks,"
                " pg_catalog.pg_is_in_recovery() AS standby")
            self._role_at = now
        return self._role

    def is_admin(self):
        """True if the console may offer write actions on this database."""
        r = self.role()
        return bool(r["admin"]) and not r["standby"]

    def close(self):
        if self._opened:
            self._pool.close()


def databases_from_proxy(dsn):
    """[(name, dsn)] of each partition of a taskq_proxy cluster, in order."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT partition, connstr FROM taskq_proxy.partitions() ORDER BY partition").fetchall()
    return [(f"p{part}", connstr) for part, connstr in rows]
