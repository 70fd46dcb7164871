"""Shared by producer.py, worker.py, monitor.py: connection, transactions, logging.

Connection parameters come from the usual libpq variables (PGHOST, PGPORT,
PGDATABASE, PGUSER, ...).
"""

import random
import time

import psycopg2
import psycopg2.extras

# Every action of the demo.
ACTIONS = ["create-job", "process-item", "job-completed"]

INVALID_TOKEN = "TQ001"           # our lease was taken over by another worker
RETRYABLE = ("40P01", "40001")    # deadlock, serialization failure


def create_id(job):
    return f"{job}/create"


def item_id(job, line):
    return f"{job}/row-{line}"


def completed_id(job):
    return f"{job}/completed"


def connect(application_name):
    conn = psycopg2.connect("", application_name=application_name)
    psycopg2.extras.register_default_jsonb(conn)
    return conn


def transaction(conn, fn, attempts=8):
    """Run fn(cursor) in one transaction and commit; retry it on deadlock or
    serialization failure.  Any other error is rolled back and raised."""
    for attempt in range(1, attempts + 1):
        try:
            with conn.cursor() as cur:
                result = fn(cur)
            conn.commit()
            return result
        except psycopg2.Error as e:
            conn.rollback()
            if e.pgcode in RETRYABLE and attempt < attempts:
                time.sleep(random.uniform(0.005, 0.05) * attempt)
                continue
            raise


def log(who, message):
    print(f"{who:>10}: {message}", flush=True)
