"""taskq: workers and producers for the taskq PostgreSQL extension (psycopg 3).

    from taskq import Worker, Retry

    w = Worker("dbname=app", concurrency=8)

    @w.task("copy")
    def copy(task):
        ...                 # task.body, task.conn, task.lease_lost
        return "copied"     # completed; raise Retry(delay=30) for later

    w.run()

Several shards: ``Worker(["host=a dbname=s0", "host=b dbname=s1"])``, or
``Worker(proxy_dsn, shards_from_proxy=True)``; ``taskq.partition_of(id, n)``
names the shard of a task id.

The user guide is docs/python.md in the taskq repository.
"""

from .connect import connect
from .errors import (DuplicateTaskError, Error, InvalidArgumentError, MissingDependencyError,
                     PrivilegeError, RetryableError, StateError, TokenError, UnavailableError,
                     UnknownTaskError)
from .producer import (cancel_run, cancel_tasks, cancel_workflow, chain, chord, enqueue,
                       enqueue_many, group, insert, insert_if_absent, send_event, start_machine,
                       start_saga, task_attempts, wait_for_run, wait_for_task)
from .routing import partition_of, route
from .worker import Abort, PredecessorResult, Result, Retry, Step, Task, Transition, Worker

__version__ = "0.6.0"

__all__ = [
    "Worker", "Task", "Result", "PredecessorResult", "Retry", "Abort", "Transition", "Step",
    "insert", "insert_if_absent", "enqueue", "enqueue_many", "chain", "group", "chord",
    "wait_for_task", "task_attempts",
    "cancel_tasks", "cancel_workflow", "start_machine", "start_saga", "send_event",
    "cancel_run", "wait_for_run", "route", "partition_of", "connect",
    "Error", "TokenError", "UnknownTaskError", "StateError", "DuplicateTaskError",
    "MissingDependencyError", "InvalidArgumentError", "PrivilegeError", "RetryableError",
    "UnavailableError",
]
