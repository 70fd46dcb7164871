"""bench/runners.py — the Python side of the runners workload of bench/run.sh.

    python3 bench/runners.py lib  CONCURRENCY COUNT   # taskq.Worker, a no-op handler
    python3 bench/runners.py hand CONCURRENCY COUNT   # the hand-written loop

Both drain COUNT pending tasks of action 'work' (the harness prefills them)
and print "tasks=N seconds=S rate=R", timed from after the imports to the
last return's commit.

lib:  taskq.Worker(concurrency=CONCURRENCY) in this process, a handler that
      returns None; a watcher stops the worker when stats["completed"]
      reaches COUNT.
hand: CONCURRENCY threads in this process (as the library's slots), each with
      its own autocommit connection: own_tasks(actor, 1, ...), then
      return_and_own(that task, 'completed', actor, 1, ...) until it claims
      nothing: one round trip and one transaction per task.
"""
import logging
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
import psycopg  # noqa: E402
import taskq  # noqa: E402

ACTION = "work"
LEASE = "60 seconds"


def hand(concurrency, count):
    done = [0] * concurrency
    errors = []

    def loop(me):
        try:
            actor = f"hand{me}"
            with psycopg.connect("", autocommit=True) as conn:
                row = conn.execute("SELECT id, token FROM taskq.own_tasks(%s, 1, %s, %s::interval)",
                                   (actor, [ACTION], LEASE)).fetchone()
                while row is not None:
                    row = conn.execute(
                        "SELECT id, token FROM taskq.return_and_own(ARRAY[%s], ARRAY[%s]::uuid[],"
                        " NULL, ARRAY['completed']::taskq.status[], %s, 1, %s, %s::interval)",
                        (row[0], row[1], actor, [ACTION], LEASE)).fetchone()
                    done[me] += 1
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(concurrency)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - t0
    if errors:
        raise errors[0]
    return sum(done), seconds


def lib(concurrency, count):
    w = taskq.Worker("", concurrency=concurrency, lease=60, actor="lib")

    @w.task(ACTION)
    def noop(task):
        return None

    end = [None]

    def watch():
        while w.stats["completed"] < count:
            time.sleep(0.002)
        end[0] = time.monotonic()
        w.stop()

    threading.Thread(target=watch, daemon=True).start()
    t0 = time.monotonic()
    w.run()
    return w.stats["completed"], end[0] - t0


def main():
    logging.basicConfig(level=logging.WARNING)
    mode, concurrency, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    n, seconds = {"hand": hand, "lib": lib}[mode](concurrency, count)
    if n != count:
        sys.exit(f"runners: {mode} completed {n} tasks, not {count}")
    print(f"tasks={n} seconds={seconds:.3f} rate={n / seconds:.1f}")


if __name__ == "__main__":
    main()
