"""Fixtures for the taskq client tests.

TASKQ_TEST_DSN names a database with the taskq extension (make test's suite
"python" creates one on its throwaway cluster).  Every test uses actions and
task ids of its own, so tests share the database without seeing each other's
tasks.
"""

import contextlib
import os
import sys
import threading
import time
import uuid

import psycopg
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))       # the package, uninstalled

import taskq  # noqa: E402


@pytest.fixture(scope="session")
def dsn():
    value = os.environ.get("TASKQ_TEST_DSN")
    if value is None:
        pytest.skip("TASKQ_TEST_DSN is not set (a database with CREATE EXTENSION taskq)")
    return value


@pytest.fixture
def db(dsn):
    """An autocommit connection for the test's own SQL."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def name():
    """A prefix unique to the test, for its action names and task ids."""
    return "t" + uuid.uuid4().hex[:10]


@contextlib.contextmanager
def running(worker):
    """Run worker.run() in a thread; stop it and wait for it on leaving."""
    failure = []

    def target():
        try:
            worker.run()
        except BaseException as e:      # surfaced in the test's thread
            failure.append(e)
    t = threading.Thread(target=target, daemon=True)
    t.start()
    try:
        yield worker
    finally:
        worker.stop()
        t.join(worker.grace + 10)
        assert not t.is_alive(), "the worker did not stop"
    if failure:
        raise failure[0]


def wait_until(predicate, timeout=10.0, step=0.05, what="condition"):
    end = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(step)


def task_row(db, task_id):
    with db.cursor(row_factory=psycopg.rows.dict_row) as cur:
        cur.execute("SELECT *, not_before - now() AS not_before_in FROM taskq.tasks WHERE id = %s",
                    (task_id,))
        return cur.fetchone()


def status_of(db, task_id):
    row = task_row(db, task_id)
    return row and row["status_code"]


__all__ = ["taskq", "running", "wait_until", "task_row", "status_of"]
