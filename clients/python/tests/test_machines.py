"""State machine steps run by the Python worker: Transition, a plain event
string, continue_machine and fan_in_contexts."""

import taskq

from conftest import running


def test_a_machine_runs_to_its_end(dsn, db, name):
    db.execute("SELECT taskq.define_machine(%s, %s)", (f"{name}-m", taskq.producer.Jsonb({"states": [
        {"name": "Count", "action": f"{name}-count", "initial": True,
         "transitions": [{"event": "more", "to": "Count"}, {"event": "done", "to": "End"}]},
        {"name": "End", "action": f"{name}-end", "final": True}]})))
    w = taskq.Worker(dsn, concurrency=2, poll_interval=0.2)

    @w.task(f"{name}-count")
    def count(task):
        n = task.body["context"]["n"] + 1
        return taskq.Transition("more" if n < 3 else "done", {"n": n})

    @w.task(f"{name}-end")
    def end(task):
        return taskq.Transition(None)

    taskq.start_machine(dsn, f"{name}-m", f"{name}-r", {"n": 0})
    with running(w):
        run = taskq.wait_for_run(dsn, f"{name}-r", 20)
    assert run["status"] == "succeeded"
    assert run["context"] == {"n": 3}
    steps = db.execute("SELECT step, outcome FROM taskq.run_steps(%s)", (f"{name}-r",)).fetchall()
    assert steps == [("Count", "more"), ("Count", "more"), ("Count", "done"), ("End", "completed")]


def test_a_plain_string_is_the_event_and_forks_continue(dsn, db, name):
    db.execute("SELECT taskq.define_machine(%s, %s)", (f"{name}-m", taskq.producer.Jsonb({"states": [
        {"name": "Chunk", "action": f"{name}-chunk", "initial": True, "continuation": True,
         "transitions": [{"event": "sent", "to": "Tally"}]},
        {"name": "Tally", "action": f"{name}-tally", "final": True, "fan_in": 0.5}]})))
    db.execute(f"CREATE TABLE {name}_done (cursor int)")
    w = taskq.Worker(dsn, concurrency=4, poll_interval=0.2)
    batches = []

    @w.task(f"{name}-chunk")
    def chunk(task):
        cursor = int(task.body["cursor"] or 0)
        if cursor < 4:
            task.continue_machine(str(cursor + 1))
        task.conn.execute(f"INSERT INTO {name}_done VALUES (%s)", (cursor,))
        return "sent"

    @w.task(f"{name}-tally")
    def tally(task):
        batches.append(len(task.fan_in_contexts()))
        return taskq.Transition(None)

    taskq.start_machine(dsn, f"{name}-m", f"{name}-r")
    with running(w):
        def finished():
            return db.execute("SELECT count(*) FROM taskq.runs WHERE id LIKE %s"
                              "   AND status IN ('running', 'waiting')",
                              (f"{name}-r%",)).fetchone()[0] == 0
        import time
        deadline = time.time() + 30
        while not finished() and time.time() < deadline:
            time.sleep(0.1)
    assert sorted(r[0] for r in db.execute(f"SELECT cursor FROM {name}_done")) == [0, 1, 2, 3, 4]
    assert sum(batches) == 5
    statuses = db.execute("SELECT status, count(*) FROM taskq.runs WHERE id LIKE %s GROUP BY 1",
                          (f"{name}-r%",)).fetchall()
    assert dict(statuses) == {"succeeded": len(batches), "merged": 5 - len(batches)}
