"""Shared by producer.py, worker.py, check.py: the demo's actions and names;
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

SAGA = "workspace"
# Every action of the saga: the do and the undo of each step.
DO = {"reserve-name": "reserve-name", "create-dir": "create-dir", "create-db": "create-db",
      "register": "register"}
UNDO = {"reserve-name": "release-name", "create-dir": "remove-dir", "create-db": "drop-db",
        "register": "unregister"}
ACTIONS = list(DO.values()) + list(UNDO.values())


def db_schema(name):
    """The schema that is the workspace's database."""
    return f"ws_data_{name}"


def ws_dir(root, name):
    """The workspace's directory."""
    return os.path.join(root, name)
