"""Producer helpers: enqueue tasks and wait for results.

Each takes a connection or a connection string first.  With a connection
string, the call runs in a connection of its own, committed and closed before
the helper returns.  With a ``psycopg.Connection``, it runs in that
connection's current transaction and the caller commits: enqueue tasks in the
same transaction as the rows they are about (unless the connection is in
autocommit mode).

Tasks are dicts (or a list of dicts) in the JSON form ``insert_tasks`` takes:
``{"id": ..., "action": ..., "body": {...}, "to_signal_after": [...], ...}``.
Errors are raised as ``taskq.Error`` subclasses carrying the SQLSTATE.
"""

import contextlib
from datetime import timedelta

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from .connect import connect
from .errors import translated

__all__ = ["insert", "insert_if_absent", "enqueue", "enqueue_many", "chain", "group", "chord",
           "wait_for_task", "task_attempts", "cancel_tasks", "cancel_workflow", "start_machine",
           "start_saga", "send_event",
           "cancel_run", "wait_for_run"]


@contextlib.contextmanager
def _connection(conn_or_dsn):
    if isinstance(conn_or_dsn, psycopg.Connection):
        yield conn_or_dsn
        return
    with connect(conn_or_dsn, autocommit=False) as conn:
        yield conn          # the with block commits, or rolls back on error


def _interval(value):
    if value is None or isinstance(value, timedelta):
        return value
    return timedelta(seconds=value)


def _scalar(conn_or_dsn, sql, params):
    with translated(), _connection(conn_or_dsn) as conn:
        return conn.execute(sql, params).fetchone()[0]


def _tasks(tasks):
    return Jsonb([tasks] if isinstance(tasks, dict) else list(tasks))


def insert(conn_or_dsn, tasks):
    """insert_tasks: all tasks or none; returns the number inserted."""
    return _scalar(conn_or_dsn, "SELECT taskq.insert_tasks(%s)", (_tasks(tasks),))


def insert_if_absent(conn_or_dsn, tasks):
    """insert_tasks_if_absent: {id: inserted} (False: a task with the id existed)."""
    with translated(), _connection(conn_or_dsn) as conn:
        rows = conn.execute("SELECT id, inserted FROM taskq.insert_tasks_if_absent(%s)",
                            (_tasks(tasks),)).fetchall()
    return dict(rows)


def enqueue(conn_or_dsn, action, body=None, id=None, priority=0, not_before=None,
            max_tries=None, workflow=None, concurrency_key=None):
    """enqueue: one task of an action; returns its id (made by taskq if None).
    concurrency_key: tasks that share it share the action's max_running_per_key."""
    return _scalar(conn_or_dsn,
                   "SELECT taskq.enqueue(%s, %s, %s, %s, %s, %s, %s, %s)",
                   (action, None if body is None else Jsonb(body), id, priority, not_before,
                    max_tries, workflow, concurrency_key))


def enqueue_many(conn_or_dsn, action, bodies, ids=None, priority=0, not_before=None,
                 max_tries=None, workflow=None, concurrency_key=None):
    """enqueue_many: one task per body (None: no body), all or none; returns the ids."""
    return _scalar(conn_or_dsn,
                   "SELECT taskq.enqueue_many(%s, %s::jsonb[], %s, %s, %s, %s, %s, %s)",
                   (action, [None if b is None else Jsonb(b) for b in bodies],
                    None if ids is None else list(ids), priority, not_before, max_tries,
                    workflow, concurrency_key))


def chain(conn_or_dsn, tasks, after_ids=None):
    """chain: each task waits for the one before (the first for after_ids)."""
    return _scalar(conn_or_dsn, "SELECT taskq.chain(%s, %s)", (_tasks(tasks), after_ids))


def group(conn_or_dsn, tasks, after_ids=None):
    """"group": the tasks in parallel (each waiting for after_ids)."""
    return _scalar(conn_or_dsn, 'SELECT taskq."group"(%s, %s)', (_tasks(tasks), after_ids))


def chord(conn_or_dsn, tasks, join, after_ids=None):
    """chord: a group and a join task that waits for all of them
    (give the join "spontaneous": True to have the queue complete it)."""
    return _scalar(conn_or_dsn, "SELECT taskq.chord(%s, %s, %s)",
                   (_tasks(tasks), Jsonb(join), after_ids))


def wait_for_task(conn_or_dsn, task_id, timeout=None):
    """Wait until the task is finished and return its row as a dict
    (status_code, status, ...); None when timeout (seconds or timedelta)
    passes first; None timeout: wait until cancelled.  Unknown id:
    taskq.UnknownTaskError."""
    with translated(), _connection(conn_or_dsn) as conn:
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute("SELECT * FROM taskq.wait_for_task(%s, %s)",
                        (task_id, _interval(timeout)))
            row = cur.fetchone()
    if row is None or row.get("id") is None:
        return None
    return row


def task_attempts(conn_or_dsn, task_id):
    """task_attempts: the task's attempts as dicts (try, actor, claimed_at,
    finished_at, outcome, status, result), in try order; [] when its action
    keeps none.  Unknown id: taskq.UnknownTaskError."""
    with translated(), _connection(conn_or_dsn) as conn:
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute("SELECT * FROM taskq.task_attempts(%s)", (task_id,))
            return cur.fetchall()


def cancel_tasks(conn_or_dsn, ids):
    """cancel_tasks: returns how many were cancelled."""
    return _scalar(conn_or_dsn, "SELECT taskq.cancel_tasks(%s)", (list(ids),))


def cancel_workflow(conn_or_dsn, workflow):
    """cancel_workflow: returns how many were cancelled."""
    return _scalar(conn_or_dsn, "SELECT taskq.cancel_workflow(%s)", (workflow,))


def _json(value):
    return None if value is None else Jsonb(value)


def start_machine(conn_or_dsn, machine, run_id, context=None):
    """start_machine: a run of the state machine's latest version; its id."""
    return _scalar(conn_or_dsn, "SELECT taskq.start_machine(%s, %s, %s)",
                   (machine, run_id, Jsonb(context if context is not None else {})))


def start_saga(conn_or_dsn, saga, run_id, inputs=None):
    """start_saga: a run of the saga's latest version; its id."""
    return _scalar(conn_or_dsn, "SELECT taskq.start_saga(%s, %s, %s)",
                   (saga, run_id, Jsonb(inputs if inputs is not None else {})))


def send_event(conn_or_dsn, run_id, event, context=None):
    """send_event: the state the run moved to, or None (the event is kept)."""
    return _scalar(conn_or_dsn, "SELECT taskq.send_event(%s, %s, %s)",
                   (run_id, event, _json(context)))


def cancel_run(conn_or_dsn, run_id):
    """cancel_run: the run's new status."""
    return _scalar(conn_or_dsn, "SELECT taskq.cancel_run(%s)", (run_id,))


def wait_for_run(conn_or_dsn, run_id, timeout=None):
    """Wait until the run is finished or waiting; its row as a dict (status,
    state, context, error, ...), or None when timeout passes first."""
    with translated(), _connection(conn_or_dsn) as conn:
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute("SELECT * FROM taskq.wait_for_run(%s, %s)", (run_id, _interval(timeout)))
            row = cur.fetchone()
    if row is None or row.get("id") is None:
        return None
    return row
