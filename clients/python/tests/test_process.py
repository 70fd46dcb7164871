"""A worker process stopped with SIGTERM, or killed with SIGKILL, mid-task."""

import os
import signal
import subprocess
import sys
import threading

from conftest import status_of, task_row, taskq, wait_until

PROC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_proc.py")


class Proc:
    """worker_proc.py running; .lines: its output so far (read by a thread)."""

    def __init__(self, dsn, action, lease, grace):
        self.p = subprocess.Popen([sys.executable, PROC, dsn, action, str(lease), str(grace)],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line)

    def started(self, task_id):
        return f"started {task_id}\n" in self.lines

    def finish(self, timeout=15):
        """Wait for the process to end (kill it after timeout); its output."""
        try:
            self.p.wait(timeout)
        finally:
            self.p.kill()
            self.p.wait()
            self.reader.join(5)
        return "".join(self.lines)


def test_sigterm_finishes_what_it_can_and_gives_back_the_rest(dsn, db, name):
    action = f"{name}-s"
    taskq.insert(dsn, [{"id": f"{name}-quick", "action": action, "body": {"sleep": 1}},
                       {"id": f"{name}-slow", "action": action, "body": {"sleep": 60},
                        "max_tries": 1}])
    proc = Proc(dsn, action, lease=30, grace=3)
    try:
        wait_until(lambda: proc.started(f"{name}-quick") and proc.started(f"{name}-slow"),
                   timeout=20, what="both handlers")
        proc.p.send_signal(signal.SIGTERM)
    finally:
        out = proc.finish()
    assert proc.p.returncode == 0, out
    assert status_of(db, f"{name}-quick") == "completed", out
    # Given back with release_task: pending, the try not counted (with
    # max_tries 1, a counted try would have aborted it).
    slow = task_row(db, f"{name}-slow")
    assert (slow["status_code"], slow["num_tries"]) == ("pending", 0), out
    # Nothing lost: another worker claims it at once.
    got = db.execute("SELECT id FROM taskq.own_tasks('next', 1, %s, '1 minute')",
                     ([action],)).fetchall()
    assert got == [(f"{name}-slow",)]


def test_kill_9_the_task_comes_back_when_the_lease_expires(dsn, db, name):
    action = f"{name}-k"
    taskq.insert(dsn, {"id": f"{name}-1", "action": action, "body": {"sleep": 60}})
    proc = Proc(dsn, action, lease=60, grace=2)
    try:
        wait_until(lambda: proc.started(f"{name}-1"), timeout=20, what="the handler")
        proc.p.send_signal(signal.SIGKILL)
    finally:
        proc.finish()
    assert proc.p.returncode == -signal.SIGKILL
    # The lease holds the task: nobody else gets it ...
    assert db.execute("SELECT id FROM taskq.own_tasks('next', 1, %s, '1 minute')",
                      ([action],)).fetchall() == []
    assert status_of(db, f"{name}-1") == "in_progress"
    # ... until it expires (back-dated here rather than waited for).
    db.execute("UPDATE taskq.tasks SET action_deadline = now() - interval '1 second'"
               " WHERE id = %s", (f"{name}-1",))
    got = db.execute("SELECT id, num_tries FROM taskq.own_tasks('next', 1, %s, '1 minute')",
                     ([action],)).fetchall()
    assert got == [(f"{name}-1", 2)]
