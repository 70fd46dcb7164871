"""A worker process for test_handlers.py:

    fork_proc.py DSN ACTION

handles ACTION (a continuation state's step) by forking the next chunk with
task.continue_machine, printing "forked CURSOR RUN", and then sleeping until
it is killed.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import taskq  # noqa: E402

dsn, action = sys.argv[1], sys.argv[2]
w = taskq.Worker(dsn, concurrency=1, lease=60, poll_interval=0.2, actor=f"fork/{os.getpid()}")


@w.task(action)
def chunk(task):
    cursor = int(task.body["cursor"] or 0)
    run = task.continue_machine(str(cursor + 1))
    print(f"forked {cursor} {run}", flush=True)
    time.sleep(600)


w.run()
