"""The worker in this process: returns, retries, concurrency, heartbeats,
lost leases, notifications, its row in taskq.workers."""

import os
import socket
import threading
import time
from datetime import timedelta

import psycopg

from conftest import running, status_of, task_row, taskq, wait_until


def test_return_completes_with_the_handlers_writes(dsn, db, name):
    db.execute(f"CREATE TABLE {name}_out (id text, n int)")
    w = taskq.Worker(dsn, concurrency=2, poll_interval=0.2)

    @w.task(f"{name}-copy")
    def copy(task):
        task.conn.execute(f"INSERT INTO {name}_out VALUES (%s, %s)", (task.id, task.body["n"]))
        return f"copied {task.body['n']}"

    taskq.insert(dsn, [{"id": f"{name}-1", "action": f"{name}-copy", "body": {"n": 7}}])
    with running(w):
        row = taskq.wait_for_task(dsn, f"{name}-1", 10)
    assert row["status_code"] == "completed"
    assert row["status"] == "copied 7"
    assert row["num_tries"] == 1
    assert db.execute(f"SELECT id, n FROM {name}_out").fetchall() == [(f"{name}-1", 7)]
    assert w.stats["completed"] == 1


def test_a_result_is_stored_with_the_completion(dsn, db, name):
    w = taskq.Worker(dsn, concurrency=2, poll_interval=0.2)

    @w.task(f"{name}-count")
    def count(task):
        if task.body["n"] == 2:
            return taskq.Result([1, "two", None])             # the status stays as it was
        return taskq.Result({"rows": task.body["n"]}, "counted")

    taskq.insert(dsn, [{"id": f"{name}-{n}", "action": f"{name}-count", "body": {"n": n}}
                       for n in (1, 2)])
    with running(w):
        one = taskq.wait_for_task(dsn, f"{name}-1", 10)
        two = taskq.wait_for_task(dsn, f"{name}-2", 10)
    assert (one["status_code"], one["status"], one["result"]) == ("completed", "counted", {"rows": 1})
    assert (two["status_code"], two["result"]) == ("completed", [1, "two", None])
    assert two["status"] != "counted"


def test_retry_returns_pending_with_a_delay(dsn, db, name):
    w = taskq.Worker(dsn, concurrency=1, poll_interval=0.2)
    calls = []

    @w.task(f"{name}-later")
    def later(task):
        calls.append(task.tries)
        raise taskq.Retry(delay=60, status="not yet")

    taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-later"})
    with running(w):
        wait_until(lambda: (r := task_row(db, f"{name}-1"))["num_tries"] == 1
                   and r["status_code"] == "pending", what="the retry")
        time.sleep(0.5)         # not claimed again: not_before is a minute away
    row = task_row(db, f"{name}-1")
    assert calls == [1]
    assert row["status"] == "not yet"
    assert timedelta(seconds=50) < row["not_before_in"] <= timedelta(seconds=60)


def test_an_exception_retries_until_max_tries(dsn, db, name):
    w = taskq.Worker(dsn, concurrency=1, poll_interval=0.1)
    calls = []

    @w.task(f"{name}-fail")
    def fail(task):
        calls.append(task.tries)
        raise ValueError(f"broken on try {task.tries}")

    taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-fail", "max_tries": 3})
    with running(w):
        row = taskq.wait_for_task(dsn, f"{name}-1", 15)
    assert row["status_code"] == "aborted"
    assert row["num_tries"] == 3
    assert row["status"] == "ValueError: broken on try 3"
    assert calls == [1, 2, 3]


def test_abort_aborts_at_once(dsn, name):
    w = taskq.Worker(dsn, concurrency=1, poll_interval=0.1)

    @w.task(f"{name}-no")
    def no(task):
        raise taskq.Abort("bad request")

    taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-no", "max_tries": 5})
    with running(w):
        row = taskq.wait_for_task(dsn, f"{name}-1", 10)
    assert (row["status_code"], row["status"], row["num_tries"]) == ("aborted", "bad request", 1)


def test_concurrency_is_respected(dsn, name):
    w = taskq.Worker(dsn, concurrency=3, poll_interval=0.1)
    lock = threading.Lock()
    now = [0]
    peak = [0]

    @w.task(f"{name}-sleep")
    def sleep(task):
        with lock:
            now[0] += 1
            peak[0] = max(peak[0], now[0])
        time.sleep(0.4)
        with lock:
            now[0] -= 1

    taskq.insert(dsn, [{"id": f"{name}-{i}", "action": f"{name}-sleep", "post_result": True}
                       for i in range(9)])
    with running(w):
        for i in range(9):
            assert taskq.wait_for_task(dsn, f"{name}-{i}", 15)["status_code"] == "completed"
    assert peak[0] == 3


def test_heartbeats_keep_a_long_task(dsn, db, name):
    w = taskq.Worker(dsn, concurrency=1, lease=2, poll_interval=0.2)
    seen = {}

    @w.task(f"{name}-long")
    def long(task):
        end = time.monotonic() + 5
        while time.monotonic() < end:
            assert not task.lease_lost
            time.sleep(0.1)
        seen["heartbeats"] = task.heartbeats
        return "done"

    taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-long"})
    with running(w):
        wait_until(lambda: status_of(db, f"{name}-1") == "in_progress", what="the claim")
        # Another worker finds nothing to claim all along: own_tasks would
        # expire the lease first if it had run out.
        while status_of(db, f"{name}-1") == "in_progress":
            stolen = db.execute("SELECT id FROM taskq.own_tasks('thief', 1, %s, '1 minute')",
                                ([f"{name}-long"],)).fetchall()
            assert stolen == []
            time.sleep(0.3)
    row = task_row(db, f"{name}-1")
    assert (row["status_code"], row["status"], row["num_tries"]) == ("completed", "done", 1)
    assert seen["heartbeats"] >= 3


def steal(dsn, task_id, action):
    """Back-date the task's lease and claim it as 'thief', in one transaction
    (a heartbeat cannot extend the lease in between); the thief's token."""
    with psycopg.connect(dsn) as conn:
        conn.execute("UPDATE taskq.tasks SET action_deadline = now() - interval '1 second'"
                     " WHERE id = %s", (task_id,))
        rows = conn.execute("SELECT id, token FROM taskq.own_tasks('thief', 1, %s, '1 minute')",
                            ([action],)).fetchall()
    assert [r[0] for r in rows] == [task_id]
    return rows[0][1]


def test_a_lost_lease_drops_the_result(dsn, db, name):
    db.execute(f"CREATE TABLE {name}_out (id text)")
    w = taskq.Worker(dsn, concurrency=1, lease=2, poll_interval=0.2)
    seen = {}
    done = threading.Event()

    @w.task(f"{name}-slow")
    def slow(task):
        task.conn.execute(f"INSERT INTO {name}_out VALUES (%s)", (task.id,))
        seen["noticed"] = task.lease_lost_event.wait(15)
        done.set()
        return "done"

    taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-slow"})
    with running(w):
        wait_until(lambda: status_of(db, f"{name}-1") == "in_progress", what="the claim")
        token = steal(dsn, f"{name}-1", f"{name}-slow")
        assert done.wait(15)
        time.sleep(0.3)         # the slot drops the result
    assert seen["noticed"] is True
    row = task_row(db, f"{name}-1")
    assert (row["status_code"], row["actor_id"], row["performance_token"]) == \
        ("in_progress", "thief", token)
    assert db.execute(f"SELECT count(*) FROM {name}_out").fetchone()[0] == 0
    assert w.stats["leases_lost"] == 1
    assert w.stats["completed"] == 0


def test_tq001_on_return_is_not_fatal(dsn, db, name):
    # A long lease: no heartbeat notices the theft before the handler returns.
    w = taskq.Worker(dsn, concurrency=1, lease=60, poll_interval=0.1)
    stolen = threading.Event()

    @w.task(f"{name}-a")
    def a(task):
        if task.id.endswith("-1"):
            assert stolen.wait(15)
        return "done"

    taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-a"})
    with running(w):
        wait_until(lambda: status_of(db, f"{name}-1") == "in_progress", what="the claim")
        steal(dsn, f"{name}-1", f"{name}-a")
        stolen.set()
        wait_until(lambda: w.stats["leases_lost"] == 1, what="the refused return")
        # The worker goes on with the next task.
        taskq.insert(dsn, {"id": f"{name}-2", "action": f"{name}-a"})
        assert taskq.wait_for_task(dsn, f"{name}-2", 10)["status_code"] == "completed"
    assert task_row(db, f"{name}-1")["actor_id"] == "thief"


def test_a_notification_wakes_the_worker(dsn, db, name):
    # Polling every 30 s: the task is claimed at once only thanks to NOTIFY
    # (the test cluster has no background worker to send it; we do).
    w = taskq.Worker(dsn, concurrency=1, poll_interval=30)

    @w.task(f"{name}-n")
    def n(task):
        return "ok"

    with running(w):
        time.sleep(0.5)         # the first claim found nothing
        taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-n"})
        db.execute("SELECT pg_notify('taskq', %s)", (f"{name}-n",))
        row = taskq.wait_for_task(dsn, f"{name}-1", 5)
    assert row is not None and row["status_code"] == "completed"


def test_a_handler_that_swallows_a_failed_transaction_fails_its_try(dsn, db, name):
    w = taskq.Worker(dsn, concurrency=1, poll_interval=0.1)

    @w.task(f"{name}-bad")
    def bad(task):
        try:
            task.conn.execute("SELECT 1 / 0")
        except psycopg.errors.DivisionByZero:
            pass
        return "fine"           # but nothing of this transaction can commit

    taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-bad", "max_tries": 2})
    with running(w):
        row = taskq.wait_for_task(dsn, f"{name}-1", 10)
    assert (row["status_code"], row["num_tries"]) == ("aborted", 2)
    assert row["status"] == "the handler's transaction failed"
    assert w.stats["failed"] == 2


def test_a_deadlock_runs_the_handler_again_without_a_try(dsn, db, name):
    w = taskq.Worker(dsn, concurrency=1, poll_interval=0.1)
    calls = []

    @w.task(f"{name}-d")
    def d(task):
        calls.append(task.tries)
        if len(calls) < 3:
            task.conn.execute("DO $$ BEGIN RAISE EXCEPTION 'simulated'"
                              " USING ERRCODE = 'deadlock_detected'; END $$")
        return "ok"

    taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-d", "max_tries": 1})
    with running(w):
        row = taskq.wait_for_task(dsn, f"{name}-1", 10)
    assert (row["status_code"], row["num_tries"]) == ("completed", 1)
    assert calls == [1, 1, 1]


def test_retry_and_abort_roll_back_unless_told_to_commit(dsn, db, name):
    db.execute(f"CREATE TABLE {name}_out (id text, try int)")
    w = taskq.Worker(dsn, concurrency=1, poll_interval=0.1)

    @w.task(f"{name}-r")
    def r(task):
        task.conn.execute(f"INSERT INTO {name}_out VALUES (%s, %s)", (task.id, task.tries))
        if task.body["how"] == "retry":
            raise taskq.Retry(delay=0, status="again", commit=task.tries == 1)
        raise taskq.Abort("no", commit=task.body["commit"])

    taskq.insert(dsn, [{"id": f"{name}-retry", "action": f"{name}-r", "max_tries": 2,
                        "body": {"how": "retry"}, "post_result": True},
                       {"id": f"{name}-abort", "action": f"{name}-r",
                        "body": {"how": "abort", "commit": False}, "post_result": True},
                       {"id": f"{name}-abort-c", "action": f"{name}-r",
                        "body": {"how": "abort", "commit": True}, "post_result": True}])
    with running(w):
        for t in ("retry", "abort", "abort-c"):
            assert taskq.wait_for_task(dsn, f"{name}-{t}", 10)["status_code"] == "aborted"
    assert db.execute(f"SELECT id, try FROM {name}_out ORDER BY id").fetchall() == \
        [(f"{name}-abort-c", 1), (f"{name}-retry", 1)]


def test_a_retry_claimed_again_with_the_return_keeps_its_heartbeats(dsn, db, name):
    # The failed try's return (return_and_own) claims the same task again: the
    # worker must go on counting it in progress: heartbeats for it, and no
    # claim for the slot it occupies.
    w = taskq.Worker(dsn, concurrency=1, lease=2, poll_interval=0.1)

    @w.task(f"{name}-a")
    def a(task):
        if task.tries == 1:
            raise ValueError("first try fails")
        time.sleep(4)
        return "ok"

    @w.task(f"{name}-b")
    def b(task):
        return "ok"

    taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-a"})
    with running(w):
        wait_until(lambda: task_row(db, f"{name}-1")["num_tries"] == 2, what="the second try")
        taskq.insert(dsn, {"id": f"{name}-2", "action": f"{name}-b"})
        while True:
            # both read at one moment: the return of -1 and the claim of -2 commit together
            first, second = db.execute(
                "SELECT (SELECT status_code FROM taskq.tasks WHERE id = %s)::text,"
                "       (SELECT status_code FROM taskq.tasks WHERE id = %s)::text",
                (f"{name}-1", f"{name}-2")).fetchone()
            if first != "in_progress":
                break
            assert second == "pending"                          # no slot for it
            stolen = db.execute("SELECT id FROM taskq.own_tasks('thief', 1, %s, '1 minute')",
                                ([f"{name}-a"],)).fetchall()
            assert stolen == []                                # the lease holds
            time.sleep(0.3)
        assert taskq.wait_for_task(dsn, f"{name}-2", 10)["status_code"] == "completed"
    row = task_row(db, f"{name}-1")
    assert (row["status_code"], row["num_tries"]) == ("completed", 2)
    assert w.stats["leases_lost"] == 0


def registry_row(db, worker_id):
    with db.cursor(row_factory=psycopg.rows.dict_row) as cur:
        return cur.execute("SELECT * FROM taskq.workers WHERE worker_id = %s",
                           (worker_id,)).fetchone()


def test_the_worker_lists_itself_in_taskq_workers(dsn, db, name):
    w = taskq.Worker(dsn, concurrency=2, poll_interval=0.2, actor=f"{name}-actor",
                     worker_id=f"{name}-w", heartbeat_interval=1)
    release = threading.Event()

    @w.task(f"{name}-hold")
    def hold(task):
        assert release.wait(20)
        return "done"

    @w.task(f"{name}-other")
    def other(task):
        return "done"

    with running(w):
        row = wait_until(lambda: registry_row(db, f"{name}-w"), what="the worker's row")
        assert (row["actor"], row["pid"], row["actions"], row["concurrency"], row["stale"]) == \
            (f"{name}-actor", os.getpid(), sorted([f"{name}-hold", f"{name}-other"]), 2, False)
        assert row["version"] == f"taskq-python {taskq.__version__}"
        assert row["host"] == socket.gethostname()[:255]
        taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-hold"})
        wait_until(lambda: registry_row(db, f"{name}-w")["in_progress"] == 1,
                   what="in_progress counting the task held")
        # Back-dated past three intervals: stale, until the next heartbeat.
        db.execute("UPDATE taskq.worker_registry SET last_seen = now() - interval '4 s'"
                   " WHERE worker_id = %s", (f"{name}-w",))
        assert registry_row(db, f"{name}-w")["stale"] is True
        wait_until(lambda: registry_row(db, f"{name}-w")["stale"] is False,
                   what="the next heartbeat")
        release.set()
        wait_until(lambda: status_of(db, f"{name}-1") == "completed", what="the task done")
    assert registry_row(db, f"{name}-w") is None, "a clean stop deletes the row"


def test_without_the_registry_the_worker_works_on(dsn, db, name, caplog, monkeypatch):
    # An extension before 0.6 has no worker_heartbeat (42883): the worker
    # says so once, works on, and calls no worker_stopped.
    monkeypatch.setattr(taskq.worker, "_HEARTBEAT_SQL", "SELECT taskq.no_such_function(%s, %s)")
    w = taskq.Worker(dsn, concurrency=1, poll_interval=0.2, worker_id=f"{name}-w",
                     heartbeat_interval=0.5)

    @w.task(f"{name}-a")
    def a(task):
        return "done"

    with caplog.at_level("WARNING", logger="taskq"):
        with running(w):
            taskq.insert(dsn, [{"id": f"{name}-{i}", "action": f"{name}-a"} for i in range(3)])
            wait_until(lambda: all(status_of(db, f"{name}-{i}") == "completed"
                                   for i in range(3)), what="the tasks done")
            time.sleep(1.2)     # past two heartbeat intervals: no second warning
    said = [r for r in caplog.records if "no heartbeats into taskq.workers" in r.getMessage()]
    assert len(said) == 1 and "42883" in said[0].getMessage()
    assert not [r for r in caplog.records if "worker_stopped" in r.getMessage()]
    assert registry_row(db, f"{name}-w") is None
