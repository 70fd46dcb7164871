"""Several shards: taskq.partition_of against the server's hashtext, the
unavailable SQLSTATEs, a Worker on two shard databases (one refusing
connections or read-only while the other is served), shards_from_proxy, and a
return repeated on a new connection when its connection died."""

import contextlib
import logging
import random

import psycopg
import psycopg.sql
import pytest
from psycopg.conninfo import make_conninfo

from conftest import running, status_of, taskq, wait_until
from taskq.errors import RetryableError, UnavailableError, error_class, is_unavailable

# ---- routing ------------------------------------------------------------------

_ALPHABETS = [
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:",
    "abc/é/ü/ß/€/日本語/😀/Ω/ж/",         # 2-, 3- and 4-byte UTF-8 characters
    "//a",
]


def _random_ids(rng, n):
    ids = ["", "/", "a", "a/", "/a", "abc/def/ghi", "x" * 11, "x" * 12, "x" * 13, "y" * 24,
           "z" * 40, "é" * 6, "😀" * 3]
    while len(ids) < n:
        alphabet = rng.choice(_ALPHABETS)
        ids.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))))
    return ids


def test_partition_of_agrees_with_the_servers_hashtext(db):
    if db.execute("SHOW server_encoding").fetchone()[0] != "UTF8":
        pytest.skip("the database is not UTF-8")
    rng = random.Random(20261129)
    ids = _random_ids(rng, 2000)
    assert any(len(i.encode()) > 24 for i in ids) and any("/" in i for i in ids)
    parts = [rng.choice([1, 2, 4, 8, 16, 64, 1024]) for _ in ids]
    rows = db.execute(
        "SELECT s, n, hashtext(s), hashtext(split_part(s, '/', 1)) & (n - 1)"
        "  FROM unnest(%s::text[], %s::int[]) AS u(s, n)", (ids, parts)).fetchall()
    assert len(rows) == len(ids)
    bad = [(s, n, h, p, taskq.routing.hashtext(s), taskq.partition_of(s, n))
           for s, n, h, p in rows
           if taskq.routing.hashtext(s) != h or taskq.partition_of(s, n) != p]
    assert bad == [], f"{len(bad)} of {len(rows)} differ, e.g. {bad[:3]}"
    # ids of one route are on one partition
    assert taskq.partition_of("run-7/step/a", 16) == taskq.partition_of("run-7", 16)


def test_route_and_bad_partition_counts():
    assert taskq.route("job-1/a/b") == "job-1"
    assert taskq.route("plain") == "plain"
    assert taskq.route("/x") == ""
    for bad in (0, 3, 6, -4, 12, 2.0, True, None, "4"):
        with pytest.raises(ValueError):
            taskq.partition_of("x", bad)
    assert taskq.partition_of("anything", 1) == 0


def test_unavailable_sqlstates():
    for state in ("08000", "08003", "08006", "08001", "57P01", "57P02", "57P03", "53300",
                  "25006"):
        assert error_class(state) is UnavailableError, state
    assert issubclass(UnavailableError, RetryableError)
    assert error_class("40001") is RetryableError
    assert error_class("55000") is not UnavailableError
    assert is_unavailable(psycopg.OperationalError("server closed the connection"))
    assert not is_unavailable(ValueError("x"))


# ---- two shard databases ------------------------------------------------------------


@contextlib.contextmanager
def shard_databases(dsn, db, name, n=2):
    """n databases with taskq, dropped afterwards: their DSNs."""
    names = [f"{name}_s{i}" for i in range(n)]
    try:
        for d in names:
            db.execute(f"CREATE DATABASE {d}")
            with psycopg.connect(make_conninfo(dsn, dbname=d), autocommit=True) as c:
                c.execute("CREATE EXTENSION taskq")
        yield [make_conninfo(dsn, dbname=d) for d in names]
    finally:
        for d in names:
            db.execute(f"ALTER DATABASE {d} ALLOW_CONNECTIONS true")
            db.execute(f"DROP DATABASE IF EXISTS {d} WITH (FORCE)")


def terminate(db, dbname):
    db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
               " WHERE datname = %s AND pid <> pg_backend_pid()", (dbname,))


def insert(shard_dsn, ids, action):
    with psycopg.connect(shard_dsn, autocommit=True) as c:
        c.execute("SET default_transaction_read_only = off")
        taskq.insert(c, [{"id": i, "action": action} for i in ids])


def all_completed(shard_dsn, ids):
    with psycopg.connect(shard_dsn, autocommit=True) as c:
        return all(status_of(c, i) == "completed" for i in ids)


def test_a_worker_on_two_shards_goes_on_while_one_is_unavailable(dsn, db, name, caplog):
    caplog.set_level(logging.INFO, logger="taskq")
    action = f"{name}-w"
    with shard_databases(dsn, db, name) as (s0, s1):
        w = taskq.Worker([s0, s1], concurrency=2, poll_interval=0.5, lease=10, max_backoff=1)
        seen = []

        @w.task(action)
        def work(task):
            seen.append((task.conn.info.dbname, task.id))
            return "ok"

        with running(w):
            insert(s0, [f"a-{i}" for i in range(5)], action)
            insert(s1, [f"b-{i}" for i in range(5)], action)
            wait_until(lambda: all_completed(s0, [f"a-{i}" for i in range(5)])
                       and all_completed(s1, [f"b-{i}" for i in range(5)]),
                       what="the tasks of both shards")
            assert {d for d, _ in seen} == {f"{name}_s0", f"{name}_s1"}
            assert [x.shard for x in w.shards] == ["0", "1"]
            assert w.stats["completed"] == 10

            # shard 0 refuses connections: shard 1 is served meanwhile
            db.execute(f"ALTER DATABASE {name}_s0 ALLOW_CONNECTIONS false")
            terminate(db, f"{name}_s0")
            insert(s1, [f"b2-{i}" for i in range(3)], action)
            wait_until(lambda: all_completed(s1, [f"b2-{i}" for i in range(3)]),
                       what="shard 1's tasks while shard 0 refuses connections")
            wait_until(lambda: "cannot connect (shard 0)" in caplog.text,
                       what="shard 0 tried again")
            db.execute(f"ALTER DATABASE {name}_s0 ALLOW_CONNECTIONS true")
            insert(s0, ["a2-1"], action)
            wait_until(lambda: all_completed(s0, ["a2-1"]), timeout=20,
                       what="shard 0 served again")

            # shard 1 read-only (as a demoted primary): 25006, shard 0 served
            db.execute(f"ALTER DATABASE {name}_s1 SET default_transaction_read_only = on")
            terminate(db, f"{name}_s1")
            insert(s1, ["b3-1"], action)
            wait_until(lambda: "25006" in caplog.text or "read-only" in caplog.text,
                       what="shard 1's claims failing read-only")
            insert(s0, ["a3-1"], action)
            wait_until(lambda: all_completed(s0, ["a3-1"]), what="shard 0 served meanwhile")
            assert not all_completed(s1, ["b3-1"])
            db.execute(f"ALTER DATABASE {name}_s1 RESET default_transaction_read_only")
            wait_until(lambda: all_completed(s1, ["b3-1"]), timeout=20,
                       what="shard 1 served again once writable")
        assert sorted(i for _, i in seen).count("a-0") == 1, "each task ran once"
        assert len(seen) == 16


def test_shards_from_proxy(dsn, db, name):
    action = f"{name}-p"
    with shard_databases(dsn, db, name) as (s0, s1):
        proxy = f"{name}_proxy"
        db.execute(f"CREATE DATABASE {proxy}")
        try:
            with psycopg.connect(make_conninfo(dsn, dbname=proxy), autocommit=True) as c:
                real = c.execute("SELECT count(*) FROM pg_available_extensions"
                                 " WHERE name IN ('plproxy', 'taskq_proxy')").fetchone()[0] == 2
                if real:
                    # the taskq_proxy extension, the two shards its partitions
                    c.execute("CREATE EXTENSION plproxy")
                    c.execute("CREATE EXTENSION taskq_proxy")
                    c.execute("CREATE SERVER taskq FOREIGN DATA WRAPPER plproxy OPTIONS"
                              f" (p0 {psycopg.sql.quote(s0)}, p1 {psycopg.sql.quote(s1)})")
                else:
                    # where PL/Proxy is not installed, a stand-in: partitions() alone
                    c.execute("CREATE SCHEMA taskq_proxy")
                    c.execute(
                        "CREATE FUNCTION taskq_proxy.partitions()"
                        " RETURNS TABLE (partition int, connstr text) LANGUAGE sql"
                        f" AS $$ VALUES (1, {psycopg.sql.quote(s1)}), (0, {psycopg.sql.quote(s0)}) $$")
            w = taskq.Worker(make_conninfo(dsn, dbname=proxy), shards_from_proxy=True,
                             concurrency=1, poll_interval=0.5, lease=10, max_backoff=1)
            w.task(action)(lambda task: "ok")
            with running(w):
                insert(s0, ["p-0"], action)
                insert(s1, ["p-1"], action)
                wait_until(lambda: all_completed(s0, ["p-0"]) and all_completed(s1, ["p-1"]),
                           what="the tasks of both partitions")
                assert [(x.shard, make_conninfo(x.dsn)) for x in w.shards] == \
                    [("0", make_conninfo(s0)), ("1", make_conninfo(s1))]
        finally:
            db.execute(f"DROP DATABASE IF EXISTS {proxy} WITH (FORCE)")
    with pytest.raises(ValueError):
        taskq.Worker([dsn, dsn])
    with pytest.raises(ValueError):
        taskq.Worker([dsn], shards_from_proxy=True)


def test_a_return_lost_with_its_connection_is_made_again(dsn, db, name, caplog):
    """A handler that wrote nothing: its return is made again on a new connection
    (same token).  One that wrote on task.conn: not repeated, the lease expires."""
    caplog.set_level(logging.INFO, logger="taskq")
    action = f"{name}-r"
    w = taskq.Worker(dsn, concurrency=1, poll_interval=0.5, lease=30)

    @w.task(action)
    def cut(task):
        if task.id.endswith("wrote"):
            task.conn.execute("SELECT 1")          # a transaction of the handler's
        db.execute("SELECT pg_terminate_backend(%s, 5000)", (task.conn.info.backend_pid,))
        return "done"

    with running(w):
        taskq.insert(dsn, [{"id": f"{name}-idle", "action": action}])
        # the row commits before the worker logs the return: wait for both
        wait_until(lambda: status_of(db, f"{name}-idle") == "completed"
                   and "returned completed on a new connection" in caplog.text,
                   what="the return made again")
        row = db.execute("SELECT num_tries, status FROM taskq.tasks WHERE id = %s",
                         (f"{name}-idle",)).fetchone()
        assert row == (1, "done"), "completed by its first try's return"
        assert "returned completed on a new connection" in caplog.text

        taskq.insert(dsn, [{"id": f"{name}-wrote", "action": action}])
        wait_until(lambda: f"task {name}-wrote" in caplog.text and "lease will expire"
                   in caplog.text, what="the return given up")
        assert status_of(db, f"{name}-wrote") == "in_progress"
