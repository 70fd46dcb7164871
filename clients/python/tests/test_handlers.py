"""What a handler sees and does beyond its body: the task's concurrency key,
its predecessors' results, the waiting claim that brings it, and the
continuation fork committed before the handler's own work."""

import os
import signal
import subprocess
import sys
import threading
import time

import psycopg

from conftest import running, taskq, wait_until

FORK_PROC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fork_proc.py")


def test_a_handler_sees_its_key_and_its_predecessors_results(dsn, db, name):
    w = taskq.Worker(dsn, concurrency=2, poll_interval=0.2)
    seen = {}

    @w.task(f"{name}-part")
    def part(task):
        seen[task.id] = task.concurrency_key
        if task.body["n"] == 2:
            return "no result"
        return taskq.Result({"rows": task.body["n"]}, "counted")

    @w.task(f"{name}-sum")
    def total(task):
        seen[task.id] = task.concurrency_key
        preds = task.predecessor_results()
        seen["preds"] = preds
        return taskq.Result(sum(p.result["rows"] for p in preds if p.result))

    taskq.insert(dsn, [
        {"id": f"{name}-p1", "action": f"{name}-part", "body": {"n": 1},
         "concurrency_key": "customer-1", "to_signal_after": [f"{name}-sum"]},
        {"id": f"{name}-p2", "action": f"{name}-part", "body": {"n": 2},
         "to_signal_after": [f"{name}-sum"]},
        {"id": f"{name}-p3", "action": f"{name}-part", "body": {"n": 3},
         "concurrency_key": "customer-2", "to_signal_after": [f"{name}-sum"]},
        {"id": f"{name}-sum", "action": f"{name}-sum", "concurrency_key": "customer-1"}])
    with running(w):
        row = taskq.wait_for_task(dsn, f"{name}-sum", 15)
    assert row["result"] == 4
    assert seen[f"{name}-p1"] == "customer-1"
    assert seen[f"{name}-p2"] is None
    assert seen[f"{name}-p3"] == "customer-2"
    assert seen[f"{name}-sum"] == "customer-1"
    assert seen["preds"] == [
        taskq.PredecessorResult(f"{name}-p1", "completed", "counted", {"rows": 1}),
        taskq.PredecessorResult(f"{name}-p2", "completed", "no result", None),
        taskq.PredecessorResult(f"{name}-p3", "completed", "counted", {"rows": 3})]


def test_the_claim_waits_in_the_server(dsn, db, name):
    # poll_interval is long: a task inserted while the worker waits is taken
    # at once only because the claim in flight wakes up; stop() cancels it.
    w = taskq.Worker(dsn, concurrency=1, poll_interval=60, actor=f"{name}-actor")

    @w.task(f"{name}-w")
    def handle(task):
        return "done"

    def waiting():
        return db.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active'"
            "   AND application_name = 'taskq worker'"
            "   AND query LIKE 'SELECT * FROM taskq.own_tasks(%%, wait => %%'").fetchone()[0] == 1
    stopped = None
    with running(w):
        wait_until(waiting, timeout=10, what="the waiting claim")
        t0 = time.monotonic()
        taskq.insert(dsn, {"id": f"{name}-1", "action": f"{name}-w"})
        row = taskq.wait_for_task(dsn, f"{name}-1", 10)
        assert row["status_code"] == "completed"
        assert time.monotonic() - t0 < 5, "the task waited for a poll"
        wait_until(waiting, timeout=10, what="the waiting claim again")
        stopped = time.monotonic()
    assert time.monotonic() - stopped < 10, "stop() waited for the claim's wait to pass"


def _define_chunks(db, name):
    db.execute("SELECT taskq.define_machine(%s, %s)", (f"{name}-m", taskq.producer.Jsonb({"states": [
        {"name": "Chunk", "action": f"{name}-chunk", "initial": True, "continuation": True,
         "final": True}]})))


def test_continuation_forks_run_at_the_same_time(dsn, db, name):
    # Two workers of one slot each: chunk 0 forks chunk 1 and then waits for
    # chunk 1 to start; forked in its own transaction, it would wait forever.
    _define_chunks(db, name)
    db.execute(f"CREATE TABLE {name}_log (cursor int, actor text, started timestamptz,"
               " ended timestamptz)")
    workers = [taskq.Worker(dsn, concurrency=1, poll_interval=0.2, actor=f"{name}-{i}")
               for i in (1, 2)]

    def chunk(task):
        cursor = int(task.body["cursor"] or 0)
        if cursor < 1:
            task.continue_machine(str(cursor + 1))
        with psycopg.connect(dsn, autocommit=True) as log:
            log.execute(f"INSERT INTO {name}_log SELECT %s, actor_id, clock_timestamp(), NULL"
                        "  FROM taskq.tasks WHERE id = %s", (cursor, task.id))
            end = time.monotonic() + 10
            while cursor == 0 and time.monotonic() < end and log.execute(
                    f"SELECT count(*) FROM {name}_log WHERE cursor = 1").fetchone()[0] == 0:
                time.sleep(0.05)
            time.sleep(0.2)
            log.execute(f"UPDATE {name}_log SET ended = clock_timestamp() WHERE cursor = %s",
                        (cursor,))
        return taskq.Transition(None)

    for w in workers:
        w.task(f"{name}-chunk")(chunk)
    taskq.start_machine(dsn, f"{name}-m", f"{name}-r")
    with running(workers[0]), running(workers[1]):
        wait_until(lambda: db.execute("SELECT count(*) FROM taskq.runs WHERE id LIKE %s"
                                      "   AND status = 'succeeded'",
                                      (f"{name}-r%",)).fetchone()[0] == 2,
                   timeout=30, what="both chunks")
    rows = db.execute(f"SELECT cursor, actor, started, ended FROM {name}_log ORDER BY cursor"
                      ).fetchall()
    assert [r[0] for r in rows] == [0, 1]
    (_, actor0, start0, end0), (_, actor1, start1, end1) = rows
    assert actor0 != actor1
    assert start1 < end0 and start0 < end1, f"the chunks did not overlap: {rows}"


def test_a_crash_after_the_fork_loses_nothing(dsn, db, name):
    _define_chunks(db, name)
    taskq.start_machine(dsn, f"{name}-m", f"{name}-r")
    p = subprocess.Popen([sys.executable, FORK_PROC, dsn, f"{name}-chunk"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(p.stdout), daemon=True)
    reader.start()
    try:
        wait_until(lambda: any(line.startswith("forked 0 ") for line in lines), timeout=20,
                   what="the fork")
        # Committed before the handler's work: there while the handler runs ...
        fork = lines[0].split()[2]
        assert db.execute("SELECT status FROM taskq.runs WHERE id = %s",
                          (fork,)).fetchone() == ("running",)
        p.send_signal(signal.SIGKILL)
    finally:
        p.wait(10)
        p.kill()
    # ... and after the crash.  The crashed step comes back when its lease
    # expires (back-dated here, and expired by a claim of another action: a
    # waiting claim leaves expiry to the background worker, which would wait
    # for the deadline it knows); its retry forks nothing new.
    db.execute("UPDATE taskq.tasks SET action_deadline = now() - interval '1 second'"
               " WHERE id LIKE %s AND status_code = 'in_progress'", (f"{name}-r%",))
    assert db.execute("SELECT count(*) FROM taskq.own_tasks('sweep', 1, %s)",
                      ([f"{name}-none"],)).fetchone()[0] == 0
    w = taskq.Worker(dsn, concurrency=2, poll_interval=0.2)
    done = []
    forks = []

    @w.task(f"{name}-chunk")
    def chunk(task):
        cursor = int(task.body["cursor"] or 0)
        if cursor < 2:
            forks.append(task.continue_machine(str(cursor + 1)))
        done.append((cursor, task.tries))
        return taskq.Transition(None)

    with running(w):
        wait_until(lambda: db.execute("SELECT count(*) FROM taskq.runs WHERE id LIKE %s"
                                      "   AND status = 'succeeded'",
                                      (f"{name}-r%",)).fetchone()[0] == 3,
                   timeout=30, what="every chunk")
    assert sorted(done) == [(0, 2), (1, 1), (2, 1)]
    assert fork in forks                   # the retry of chunk 0 got the fork already made
    assert db.execute("SELECT count(*) FROM taskq.runs WHERE id LIKE %s",
                      (f"{name}-r%",)).fetchone()[0] == 3
