"""Shared by producer.py, worker.py: the demo's actions, SQLSTATEs and task ids;
and, from ../demo.py, connection, transactions, logging, the worker.

Connection parameters come from the usual libpq variables (PGHOST, PGPORT,
PGDATABASE, PGUSER, ...).
"""

import os
import sys

# The examples' shared module, ../demo.py, re-exported from here: every
# script of the example imports common, so it runs alone too (python3 worker.py).
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from demo import connect, detail, log, once, transaction, worker  # noqa: E402,F401

# Every action of the demo.  The story's per-branch tasks use the action name as
# the id prefix: next-export-{branch} has action next-export.
BRANCH_ACTIONS = ["next-export", "start-export", "done-export"]
OBJECT_ACTIONS = ["export-copy", "export-delete", "export-success", "export-manifest"]
ALL_ACTIONS = BRANCH_ACTIONS + OBJECT_ACTIONS

# SQLSTATEs of taskq (docs/semantics.md) and PostgreSQL that the demo handles.
FOREIGN_KEY_VIOLATION = "23503"   # a task named does not exist
NOT_IN_PREREQUISITE_STATE = "55000"  # owned, started, finished, aborted


def next_export_id(branch):
    return f"next-export-{branch}"


def start_export_id(branch):
    return f"start-export-{branch}"


def done_export_id(branch):
    return f"done-export-{branch}"
