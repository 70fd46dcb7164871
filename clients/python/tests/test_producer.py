"""Producer helpers and typed errors."""

import uuid

import psycopg
import pytest

from conftest import task_row, taskq


def test_insert_counts_and_runs_in_the_callers_transaction(dsn, db, name):
    assert taskq.insert(dsn, [{"id": f"{name}-a", "action": "x"},
                              {"id": f"{name}-b", "action": "x"}]) == 2
    with psycopg.connect(dsn) as conn:
        assert taskq.insert(conn, {"id": f"{name}-c", "action": "x"}) == 1
        conn.rollback()
    assert task_row(db, f"{name}-c") is None
    assert taskq.insert_if_absent(dsn, [{"id": f"{name}-a", "action": "x"},
                                        {"id": f"{name}-d", "action": "x"}]) == \
        {f"{name}-a": False, f"{name}-d": True}


def test_enqueue_with_a_concurrency_key(dsn, db, name):
    tid = taskq.enqueue(dsn, f"{name}-lim", {"n": 1}, concurrency_key="customer-1")
    given = taskq.enqueue(dsn, f"{name}-lim", id=f"{name}-e", priority=2)
    ids = taskq.enqueue_many(dsn, f"{name}-lim", [{"n": 2}, None], concurrency_key="customer-2")
    keys = dict(db.execute("SELECT id, concurrency_key FROM taskq.tasks WHERE action = %s",
                           (f"{name}-lim",)).fetchall())
    assert given == f"{name}-e" and len(ids) == 2
    assert keys == {tid: "customer-1", given: None, ids[0]: "customer-2", ids[1]: "customer-2"}
    # one per key at once: the claim skips the second task of customer-2
    db.execute("SELECT taskq.set_concurrency_limit(%s, NULL, 1)", (f"{name}-lim",))
    try:
        claimed = {r[0] for r in db.execute("SELECT id FROM taskq.own_tasks('me', 10, %s)",
                                            ([f"{name}-lim"],)).fetchall()}
    finally:
        db.execute("SELECT taskq.clear_limits(%s)", (f"{name}-lim",))
    assert claimed == {tid, given, ids[0]}
    with pytest.raises(taskq.InvalidArgumentError) as e:
        taskq.enqueue(dsn, f"{name}-lim", concurrency_key="")
    assert e.value.sqlstate == "22023"


def test_shapes(dsn, db, name):
    t = [{"id": f"{name}-{i}", "action": "x"} for i in range(3)]
    assert taskq.chain(dsn, t) == 3
    assert taskq.group(dsn, [{"id": f"{name}-p{i}", "action": "x"} for i in range(2)],
                       after_ids=[f"{name}-2"]) == 2
    assert taskq.chord(dsn, [{"id": f"{name}-q{i}", "action": "x"} for i in range(2)],
                       {"id": f"{name}-join", "action": "x", "spontaneous": True}) == 3
    signals = dict(db.execute("SELECT id, num_signals FROM taskq.tasks WHERE id LIKE %s",
                              (f"{name}-%",)).fetchall())
    assert signals == {f"{name}-0": 0, f"{name}-1": 1, f"{name}-2": 1, f"{name}-p0": 1,
                       f"{name}-p1": 1, f"{name}-q0": 0, f"{name}-q1": 0, f"{name}-join": 2}


def test_wait_for_task(dsn, db, name):
    taskq.insert(dsn, {"id": f"{name}-w", "action": f"{name}-w"})
    assert taskq.wait_for_task(dsn, f"{name}-w", 0.2) is None
    tid, token = db.execute("SELECT id, token FROM taskq.own_tasks('me', 1, %s)",
                            ([f"{name}-w"],)).fetchone()
    db.execute("SELECT taskq.return_task(%s, %s, 'fine', 'completed')", (tid, token))
    row = taskq.wait_for_task(dsn, f"{name}-w", 1)
    assert (row["id"], row["status_code"], row["status"]) == (f"{name}-w", "completed", "fine")
    with pytest.raises(taskq.UnknownTaskError) as e:
        taskq.wait_for_task(dsn, f"{name}-nope", 1)
    assert e.value.sqlstate == "42704"


def test_task_attempts(dsn, db, name):
    action = f"{name}-k"
    db.execute("SELECT taskq.set_action_policy(%s, NULL, NULL, true)", (action,))
    try:
        taskq.insert(dsn, [{"id": f"{name}-a", "action": action},
                           {"id": f"{name}-p", "action": f"{name}-plain"}])
        for outcome in ("pending", "completed"):
            tid, token = db.execute("SELECT id, token FROM taskq.own_tasks('me', 1, %s)",
                                    ([action],)).fetchone()
            db.execute("SELECT taskq.return_task(%s, %s, %s, %s::taskq.status, NULL, '{\"n\": 1}')",
                       (tid, token, outcome, outcome))
        rows = taskq.task_attempts(dsn, f"{name}-a")
        assert [(r["try"], r["actor"], r["outcome"], r["status"], r["result"]) for r in rows] == \
            [(1, "me", "pending", "pending", {"n": 1}), (2, "me", "completed", "completed", {"n": 1})]
        assert all(r["finished_at"] >= r["claimed_at"] for r in rows)
        assert taskq.task_attempts(dsn, f"{name}-p") == []
        with pytest.raises(taskq.UnknownTaskError):
            taskq.task_attempts(dsn, f"{name}-nope")
    finally:
        db.execute("SELECT taskq.set_action_policy(%s, NULL, NULL, false)", (action,))


def test_typed_errors(dsn, db, name):
    taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-e"})
    with pytest.raises(taskq.DuplicateTaskError) as e:
        taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-e"})
    assert e.value.sqlstate == "23505" and isinstance(e.value, taskq.Error)
    assert isinstance(e.value.__cause__, psycopg.Error)
    with pytest.raises(taskq.MissingDependencyError):
        taskq.insert(dsn, {"id": f"{name}-2", "action": "x", "to_signal_after": [f"{name}-no"]})
    with pytest.raises(taskq.InvalidArgumentError) as e:
        taskq.insert(dsn, {"id": f"{name}-3", "action": "x", "no_such_key": 1})
    assert e.value.sqlstate == "22023"
    tid, token = db.execute("SELECT id, token FROM taskq.own_tasks('me', 1, %s)",
                            ([f"{name}-e"],)).fetchone()
    with pytest.raises(taskq.TokenError) as e:
        with taskq.errors.translated():
            db.execute("SELECT taskq.return_task(%s, %s, NULL, 'completed')",
                       (tid, uuid.uuid4()))
    assert e.value.sqlstate == "TQ001"
    db.execute("SELECT taskq.return_task(%s, %s, NULL, 'completed')", (tid, token))
    with pytest.raises(taskq.StateError) as e:      # finished, and not the same return
        with taskq.errors.translated():
            db.execute("SELECT taskq.return_task(%s, %s, NULL, 'aborted')", (tid, token))
    assert e.value.sqlstate == "55000"
    assert taskq.cancel_tasks(dsn, [f"{name}-1", f"{name}-nope"]) == 0
