"""A worker process for test_process.py:

    worker_proc.py DSN ACTION LEASE GRACE

handles ACTION by printing "started ID", sleeping body["sleep"] seconds, then
returning "slept".
"""

import logging
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import taskq  # noqa: E402

dsn, action, lease, grace = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
logging.basicConfig(level=logging.INFO, format="worker_proc: %(message)s")
w = taskq.Worker(dsn, concurrency=2, lease=lease, grace=grace, poll_interval=0.1,
                 actor=f"proc/{os.getpid()}")


@w.task(action)
def sleep(task):
    print(f"started {task.id}", flush=True)
    time.sleep(task.body["sleep"])
    return "slept"


w.run()
