"""examples/cluster/demo.py: taskq on the local sharded cluster (make demo-cluster).

Reads the state file of `tools/cluster.sh start` ($TASKQ_CLUSTER_DIR/cluster.env,
default /var/tmp/taskq-cluster) and then:

  producer   enqueues TASKS tasks for each of a few customers through the
             proxy, with ids "<customer>/<run>-<n>": the customer is the
             route, so all of a customer's tasks land on one shard, the
             partition of hashtext(customer) & (shards - 1);
  workers    one claim loop per shard, each on the shard's own multi-host
             connection string (the node that takes writes), claiming with
             own_tasks(..., wait) and completing each task;
  report     which shard and node served each customer's tasks, checked
             against taskq_proxy.partition_of on the proxy.

Without the extension taskq_proxy on the proxy, the producer goes to the
shards directly with the same hash rule (a producer may route itself).
SWITCHOVER=1: half-way, `pg_autoctl perform switchover` of shard0; its
worker reconnects to the new primary and goes on (connection errors are
retried, as a worker must).  Exit 1 if a task was not completed, or was
served by another shard than its route's.
"""

import os
import shlex
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict

import psycopg
from psycopg.types.json import Jsonb

CUSTOMERS = ["alice", "bob", "carol", "dave", "erin", "ivan", "judy", "sybil"]  # 2 per shard of 4
TASKS = int(os.environ.get("TASKS", "5"))
TIMEOUT = float(os.environ.get("TIMEOUT", "120"))
SWITCHOVER = os.environ.get("SWITCHOVER", "0") not in ("", "0")
# SQLSTATE classes and codes a worker retries after reconnecting: the
# connection broke, the server shuts down, or the node is a standby now.
RETRY = ("08", "57P01", "57P02", "57P03", "25006")


def say(message):
    print(message, flush=True)


def read_state():
    path = os.path.join(os.environ.get("TASKQ_CLUSTER_DIR", "/var/tmp/taskq-cluster"),
                        "cluster.env")
    try:
        text = open(path, encoding="utf-8").read()
    except OSError:
        sys.exit(f"demo-cluster: no cluster state in {path} (make cluster starts one)")
    state = {}
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if len(words) == 1 and "=" in words[0]:
            key, value = words[0].split("=", 1)
            state[key] = value
    return state


def retryable(error):
    code = getattr(error, "sqlstate", None) or ""
    return isinstance(error, psycopg.OperationalError) or code.startswith(RETRY)


class ShardWorker(threading.Thread):
    """One claim loop on one shard: claim, complete, record who served what."""

    def __init__(self, k, connstr, nodes, served, stop):
        super().__init__(name=f"shard{k}", daemon=True)
        self.k, self.connstr, self.nodes = k, connstr, nodes
        self.served, self.stop = served, stop
        self.reconnects = 0

    def connect(self):
        while not self.stop.is_set():
            try:
                conn = psycopg.connect(self.connstr, autocommit=True,
                                       application_name=f"demo-cluster shard{self.k}")
                port = conn.execute("SELECT inet_server_port()").fetchone()[0]
                return conn, self.nodes.get(str(port), f"port {port}")
            except psycopg.Error:
                self.reconnects += 1
                time.sleep(0.5)
        return None, None

    def run(self):
        conn, node = self.connect()
        while not self.stop.is_set():
            try:
                rows = conn.execute(
                    "SELECT id, token FROM taskq.own_tasks(%s, 10, ARRAY['pack'],"
                    " interval '30 seconds', wait => interval '200 milliseconds')",
                    (f"demo/shard{self.k}",)).fetchall()
                for task_id, token in rows:
                    conn.execute(
                        "SELECT taskq.return_task(%s, %s, 'packed', 'completed', NULL, %s)",
                        (task_id, token, Jsonb({"shard": self.k, "node": node})))
                    self.served.append((task_id, self.k, node))
            except psycopg.Error as e:
                if not retryable(e):
                    raise
                say(f"  worker shard{self.k}: {type(e).__name__} on {node}"
                    f" ({(getattr(e, 'sqlstate', None) or 'connection')}): reconnecting")
                try:
                    conn.close()
                except psycopg.Error:
                    pass
                conn, new = self.connect()
                if new:
                    say(f"  worker shard{self.k}: now on {new}")
                    node = new
        if conn is not None:
            conn.close()


def main():
    st = read_state()
    n = int(st["TQC_SHARDS"])
    shards = [st[f"TQC_SHARD_{k}"] for k in range(n)]
    nodes = {}
    for k in range(n):
        for entry in st[f"TQC_NODES_{k}"].split():
            name, port, _ = entry.split(":", 2)
            nodes[port] = name
    proxy = psycopg.connect(st["TQC_PROXY"], autocommit=True, application_name="demo-cluster")
    via_proxy = proxy.execute(
        "SELECT count(*) = 1 FROM pg_extension WHERE extname = 'taskq_proxy'").fetchone()[0]
    run = uuid.uuid4().hex[:6]
    say(f"demo-cluster: {n} shards; {len(CUSTOMERS)} customers x {TASKS} tasks (run {run}),"
        f" one worker per shard")
    if via_proxy:
        say(f"  producer: insert_tasks_if_absent through the proxy ({st['TQC_PROXY']})")
    else:
        say("  producer: the proxy has no taskq_proxy: to each shard directly,"
            " partition = hashtext(customer) & (shards - 1)")

    def partition_of(route):
        if via_proxy:
            return proxy.execute("SELECT taskq_proxy.partition_of(%s)", (route,)).fetchone()[0]
        return proxy.execute("SELECT hashtext(%s) & %s", (route, n - 1)).fetchone()[0]

    expected = {c: partition_of(c) for c in CUSTOMERS}
    conns = {}

    def enqueue(customer, task_id, body):
        """One task, through the proxy or to its shard; insert_tasks_if_absent
        with the same id, so that a retry after a lost answer is safe."""
        target = "proxy" if via_proxy else expected[customer]
        for attempt in range(40):
            try:
                if target not in conns:
                    dsn = st["TQC_PROXY"] if via_proxy else shards[target]
                    conns[target] = psycopg.connect(dsn, autocommit=True,
                                                    application_name="demo-cluster producer")
                conns[target].execute("SELECT taskq.insert_tasks_if_absent(%s)",
                                      (Jsonb([{"id": task_id, "action": "pack", "body": body}]),))
                return
            except psycopg.Error as e:
                if not retryable(e) or attempt == 39:
                    raise
                conns.pop(target).close()
                time.sleep(0.5)

    stop = threading.Event()
    served = []
    workers = [ShardWorker(k, shards[k], nodes, served, stop) for k in range(n)]
    for w in workers:
        w.start()

    ids = []
    t0 = time.monotonic()

    def produce(tag):
        for i in range(TASKS):
            for c in CUSTOMERS:
                task_id = f"{c}/{run}{tag}-{i}"
                enqueue(c, task_id, {"customer": c, "n": i})
                ids.append(task_id)

    produce("")
    say(f"  enqueued {len(ids)} tasks in {time.monotonic() - t0:.1f}s")
    if SWITCHOVER:
        say("  switchover of shard0 (pg_autoctl perform switchover) while the workers run")
        t1 = time.monotonic()
        out = subprocess.run([st["TQC_AUTOCTL"], "perform", "switchover", "--formation", "shard0"],
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            say("  switchover FAILED: " + (out.stderr or out.stdout)[-400:])
            return 1
        say(f"  switchover done in {time.monotonic() - t1:.1f}s")
        produce("-after")
        say(f"  enqueued {TASKS * len(CUSTOMERS)} more after the switchover")

    deadline = time.monotonic() + TIMEOUT
    while len({t for t, _, _ in served}) < len(ids) and time.monotonic() < deadline:
        time.sleep(0.2)
    stop.set()
    for w in workers:
        w.join(5)

    by_customer = defaultdict(Counter)
    for task_id, k, node in served:
        by_customer[task_id.split("/", 1)[0]][(k, node)] += 1
    bad = 0
    say("")
    say(f"  {'customer':<10} {'partition':>9}   served by (shard, node: tasks)")
    for c in CUSTOMERS:
        where = ", ".join(f"shard{k} {node}: {count}"
                          for (k, node), count in sorted(by_customer[c].items()))
        wrong = any(k != expected[c] for k, _ in by_customer[c])
        bad += wrong
        say(f"  {c:<10} {expected[c]:>9}   {where}{'   <- NOT its partition' if wrong else ''}")
    per_shard = Counter(k for _, k, _ in served)
    say("")
    for k in range(n):
        say(f"  shard{k}: {per_shard[k]} tasks, failed connection attempts {workers[k].reconnects}")
    done = len({t for t, _, _ in served})
    missing = len(ids) - done
    say("")
    if missing or bad:
        say(f"demo-cluster: FAILED: {missing} of {len(ids)} tasks not completed,"
            f" {bad} customers served by another shard than their partition")
        return 1
    say(f"demo-cluster: ok: all {len(ids)} tasks completed, each customer's on its partition's shard"
        f" ({time.monotonic() - t0:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
