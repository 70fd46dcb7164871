"""Shared by worker.py: the demo's actions; and, from ../demo.py, connection,
transactions, logging, the worker.

Connection parameters come from the usual libpq variables (PGHOST, PGPORT,
PGDATABASE, PGUSER, ...).
"""

import os
import sys

# The examples' shared module, ../demo.py, re-exported from here: every
# script of the example imports common, so it runs alone too (python3 worker.py).
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from demo import connect, detail, log, once, transaction, worker  # noqa: E402,F401

# Every action of the demo.
ACTIONS = ["send-email", "count-email"]

