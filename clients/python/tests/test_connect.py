"""taskq.connect: the hosts of a multi-host connection string are tried in
turn, each with its own connect timeout, so that a first host that accepts
TCP connections and never answers does not hide the second."""

import socket
import threading
import time

import psycopg
import pytest

import taskq
from taskq.connect import host_attempts

from conftest import running, wait_until


def test_host_attempts_follow_libpq_lists():
    got = host_attempts("host=a,b port=1,2 dbname=x target_session_attrs=read-write",
                        application_name="w")
    assert [(p["host"], p["port"]) for p in got] == [("a", "1"), ("b", "2")]
    assert all(p["dbname"] == "x" and p["target_session_attrs"] == "read-write"
               and p["application_name"] == "w" for p in got)
    got = host_attempts("postgresql://h1,h2:6000/db")
    assert [(p["host"], p["port"]) for p in got] == [("h1", ""), ("h2", "6000")]  # "": the default
    assert [p["port"] for p in host_attempts("host=a,b port=7")] == ["7", "7"]
    assert len(host_attempts("host=a dbname=x")) == 1
    assert len(host_attempts("host=a,b,c port=1,2")) == 1, "a mismatch is left to libpq"


@pytest.fixture
def silent_host():
    """A TCP port that accepts connections and never answers (a stopped server)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(srv.accept()[0])
            except OSError:
                pass
    t = threading.Thread(target=accept, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join()
    for c in held:
        c.close()
    srv.close()


def multi_host(dsn, silent_port):
    """dsn's server as the second host, after the silent one."""
    p = psycopg.conninfo.conninfo_to_dict(dsn)
    host, port = p.pop("host", "") or "/var/run/postgresql", p.pop("port", "") or "5432"
    return psycopg.conninfo.make_conninfo(**p, host=f"127.0.0.1,{host}",
                                          port=f"{silent_port},{port}", connect_timeout="1")


def test_a_silent_first_host_does_not_hide_the_second(dsn, silent_host):
    t0 = time.monotonic()
    with taskq.connect(multi_host(dsn, silent_host), autocommit=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.info.host != "127.0.0.1"
    assert time.monotonic() - t0 < 5, "the first host was given one connect timeout"


def test_every_host_failing_names_each(silent_host):
    with pytest.raises(psycopg.OperationalError) as e:
        taskq.connect(f"host=127.0.0.1,127.0.0.1 port={silent_host},{silent_host}"
                      " connect_timeout=1 dbname=x")
    assert str(e.value).count(f"127.0.0.1:{silent_host}") == 2


def test_worker_and_producer_behind_a_silent_host(dsn, db, name, silent_host):
    action = f"{name}-a"
    multi = multi_host(dsn, silent_host)
    taskq.insert(multi, [{"id": f"{name}-{i}", "action": action} for i in range(3)])
    w = taskq.Worker(multi, concurrency=1, poll_interval=0.2)
    w.task(action)(lambda task: "ok")
    with running(w):
        wait_until(lambda: db.execute(
            "SELECT count(*) FROM taskq.tasks WHERE id LIKE %s AND status_code = 'completed'",
            (f"{name}-%",)).fetchone()[0] == 3, timeout=30, what="the tasks done")
