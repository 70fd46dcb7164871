"""Shared by producer.py, worker.py, check.py: the demo's names and actions;
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

MACHINE = "photo-upload"
SAGA = "provision-storage"
# The machine's actions (its states' and its map's), then the saga's do and undo.
MACHINE_ACTIONS = ["receive-upload", "resize", "build-album", "expire-upload", "abandon-upload"]
DO = {"reserve-quota": "reserve-quota", "create-bucket": "create-bucket",
      "apply-policy": "apply-policy"}
UNDO = {"reserve-quota": "release-quota", "create-bucket": "delete-bucket",
        "apply-policy": "remove-policy"}
ACTIONS = MACHINE_ACTIONS + list(DO.values()) + list(UNDO.values())


def resized_name(source):
    """What resize makes of an image: IMG_0007.jpg -> IMG_0007.1600.webp."""
    return source.rsplit(".", 1)[0] + ".1600.webp"
