#!/usr/bin/python3
"""test/ha/haload.py: the load, the ledger and the checkers of `make ha-test`.

Owns: the workload that runs against a sharded taskq while the scenario driver
(test/ha/run.sh) breaks one shard, the ledger every client appends to, and the
checks L1-L5 of "nothing lost" with the per-scenario measurements.

  load    producers through the proxy (chains, chords, state machines, sagas,
          each workflow under one route `<key>/...`), per-shard worker pools
          (the waiting claim on each shard's multi-host connection string) and
          proxy claimers (own_tasks without wait on the proxy); every call is
          one fsync'd JSON line of the ledger; then the drain: the workers go
          on until no shard has unfinished work.
  check   L1-L5 against every shard's primary, duplicates, and, with a fault
          in events.jsonl, the outage of the faulty shard, errors on the other
          shards and the throughput before, during and after.
  plant   (self-test) breaks what a checker must see: a lost insert, a task
          on a second shard, a wrong token, a stranded task, a wrong signal
          count, an unresolved unknown operation.

Connections: --cluster-env (the cluster state file, TQC_SHARD_<k>, TQC_PROXY)
or --shard DSN (repeated, in partition order) and --proxy DSN.  Without a
proxy, calls meant for it are routed by the client's own partition
computation (hashtext(route) & (N - 1)) to the shards, and a "proxy claim"
asks the partitions in turn from a random one, as taskq_proxy does: the same
function names either way, so the load runs on one plain server with four
databases.

Retries: only on the SQLSTATEs a client may retry (08000, 08003, 08006,
57P01-57P03, 25006, and a connection that broke or could not be made), and
only with idempotent calls: a chain or chord whose answer was lost is sent
again as insert_tasks_if_absent of the same tasks, a run is started again
under the same id (23505 on a repeat means the first start committed), a
return, transition or return_step is repeated with the same token.  A call
that broke while it was in flight is "unknown" in the ledger until its retry
answers.  A claim is never repeated: its lease expires.

A call that hangs (a SIGSTOPped server still accepts TCP) is cut by a
watchdog that shuts the socket down after --call-timeout seconds.
"""

import argparse
import json
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
import uuid

import psycopg
import psycopg.conninfo

# Calls that may be repeated after these answers.  UNSENT: the call did not
# reach a server that could have applied it.  INFLIGHT: it may have.
UNSENT = {"08001", "08004", "25006", "40001", "53300", "57P03"}
INFLIGHT = {"08000", "08003", "08006", "57P01", "57P02"}

ACTIONS = ["ha_chain", "ha_member", "ha_join", "ha_ma", "ha_mb", "ha_s1", "ha_s2", "ha_u1"]
MACHINE = "ha_m"
MACHINE_DEF = {"states": [
    {"name": "A", "action": "ha_ma", "initial": True, "transitions": [{"event": "ok", "to": "B"}]},
    {"name": "B", "action": "ha_mb", "final": True}]}
SAGA = "ha_s"
SAGA_DEF = {"steps": [
    {"name": "s1", "do": "ha_s1", "undo": "ha_u1"},
    {"name": "s2", "do": "ha_s2"}]}
# How a worker finishes a task of each action: (ledger op, SQL).
FINISH = {
    "ha_chain": ("return", "SELECT taskq.return_task(%s, %s::uuid, 'done', 'completed', NULL, %s::jsonb)"),
    "ha_member": ("return", "SELECT taskq.return_task(%s, %s::uuid, 'done', 'completed', NULL, %s::jsonb)"),
    "ha_join": ("return", "SELECT taskq.return_task(%s, %s::uuid, 'done', 'completed', NULL, %s::jsonb)"),
    "ha_ma": ("transition", "SELECT taskq.transition(%s, %s::uuid, 'ok')"),
    "ha_mb": ("transition", "SELECT taskq.transition(%s, %s::uuid, NULL)"),
    "ha_s1": ("return_step", "SELECT taskq.return_step(%s, %s::uuid, 'success')"),
    "ha_s2": ("return_step", "SELECT taskq.return_step(%s, %s::uuid, 'success')"),
    "ha_u1": ("return_step", "SELECT taskq.return_step(%s, %s::uuid, 'success')"),
}
INSERT_OPS = ("chain", "chord", "machine", "saga")
FINISH_OPS = ("return", "transition", "return_step")


def now():
    return time.time()


def route_of(task_id):
    return task_id.split("/", 1)[0]


def log(*args):
    print(time.strftime("%H:%M:%S"), *args, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Configuration: the cluster state file or DSNs given on the command line.

def read_cluster_env(path):
    out = subprocess.run(
        ["bash", "-c", '. "$1" && for v in ${!TQC_@}; do printf "%s=%s\\0" "$v" "${!v}"; done', "_", path],
        check=True, capture_output=True, text=True).stdout
    env = {}
    for item in out.split("\0"):
        if "=" in item:
            k, v = item.split("=", 1)
            env[k] = v
    return env


def add_timeouts(dsn):
    """Bound the connection attempt: a stopped server accepts TCP but never answers."""
    extra = []
    if "connect_timeout" not in dsn:
        extra.append("connect_timeout=3")
    if "application_name" not in dsn:
        extra.append("application_name=haload")
    if dsn.startswith("postgres"):
        sep = "&" if "?" in dsn else "?"
        return dsn + (sep + "&".join(extra) if extra else "")
    return " ".join([dsn] + extra)


def config(args):
    shards, proxy = list(args.shard or []), args.proxy
    if not shards:
        path = args.cluster_env or os.path.join(
            os.environ.get("TASKQ_CLUSTER_DIR", "/var/tmp/taskq-cluster"), "cluster.env")
        env = read_cluster_env(path)
        n = int(env["TQC_SHARDS"])
        shards = [env["TQC_SHARD_%d" % k] for k in range(n)]
        proxy = proxy or env.get("TQC_PROXY") or None
        if args.no_proxy:
            proxy = None
    n = len(shards)
    if n < 1 or n & (n - 1):
        sys.exit("haload: the number of shards must be a power of two, not %d" % n)
    return [add_timeouts(s) for s in shards], (add_timeouts(proxy) if proxy else None)


# --------------------------------------------------------------------------
# The ledger: one JSON line per call, written by one thread that fsyncs each
# batch; a writer waits until its line is on disk (group commit).

class Ledger:
    def __init__(self, path):
        self.f = open(path, "a", encoding="utf-8")
        self.cv = threading.Condition()
        self.lines = []
        self.appended = 0
        self.durable = 0
        self.closed = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def write(self, rec):
        line = json.dumps(rec, separators=(",", ":"))
        with self.cv:
            self.lines.append(line)
            self.appended += 1
            mine = self.appended
            self.cv.notify_all()
            while self.durable < mine:
                self.cv.wait()

    def _run(self):
        while True:
            with self.cv:
                while not self.lines and not self.closed:
                    self.cv.wait()
                if not self.lines and self.closed:
                    return
                batch, self.lines = self.lines, []
                upto = self.appended
            self.f.write("\n".join(batch) + "\n")
            self.f.flush()
            os.fsync(self.f.fileno())
            with self.cv:
                self.durable = upto
                self.cv.notify_all()

    def close(self):
        with self.cv:
            self.closed = True
            self.cv.notify_all()
        self.thread.join()
        self.f.close()


# --------------------------------------------------------------------------
# Connections, with a watchdog for calls that hang.

class Watchdog:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = {}
        threading.Thread(target=self._run, daemon=True).start()

    def arm(self, key, fd, seconds):
        with self.lock:
            self.calls[key] = (now() + seconds, fd)

    def disarm(self, key):
        with self.lock:
            self.calls.pop(key, None)

    def _run(self):
        while True:
            time.sleep(0.25)
            t = now()
            with self.lock:
                late = [(k, fd) for k, (d, fd) in self.calls.items() if d < t]
                for k, _ in late:
                    del self.calls[k]
            for _, fd in late:
                try:
                    s = socket.socket(fileno=os.dup(fd))
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass


WATCHDOG = None


class CallError(Exception):
    def __init__(self, outcome, sqlstate, msg):
        super().__init__(msg)
        self.outcome, self.sqlstate, self.msg = outcome, sqlstate, msg

    @property
    def retryable(self):
        return self.sqlstate in UNSENT or self.sqlstate in INFLIGHT


def connect_first(dsn):
    """Connect as libpq would to a multi-host string, each host with its own connect_timeout.

    psycopg 3.1 drives the connection itself and counts connect_timeout for
    all the hosts together: a stopped first host (which accepts TCP and
    never answers) used it all, and the promoted second one was never
    tried.  So the hosts are tried one by one, in order, each with the
    string's target_session_attrs."""
    d = psycopg.conninfo.conninfo_to_dict(dsn)
    hosts = str(d.get("host", "")).split(",")
    if len(hosts) < 2:
        return psycopg.connect(dsn, autocommit=True)
    ports = str(d.get("port", "")).split(",")
    ports = ports if len(ports) == len(hosts) else ports[:1] * len(hosts)
    last = None
    for h, p in zip(hosts, ports):
        one = dict(d, host=h, port=p) if p else dict(d, host=h)
        try:
            return psycopg.connect(psycopg.conninfo.make_conninfo(**one), autocommit=True)
        except psycopg.Error as e:
            last = e
    raise last


class Conn:
    """One connection that reconnects on use after it broke."""

    def __init__(self, dsn, timeout):
        self.dsn, self.timeout, self.conn = dsn, timeout, None
        self.notices = []

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:
                pass
            self.conn = None

    def call(self, sql, params=(), timeout=None):
        """Rows of one statement in its own transaction, and the server's port."""
        if self.conn is None or self.conn.closed or self.conn.broken:
            self.close()
            try:
                self.conn = connect_first(self.dsn)
                self.conn.add_notice_handler(lambda d: self.notices.append(
                    (d.severity_nonlocalized or d.severity, d.message_primary or "")))
            except psycopg.Error as e:
                self.conn = None
                raise CallError("error", getattr(e, "sqlstate", None) or "08001",
                                str(e).strip().splitlines()[0] if str(e).strip() else repr(e)) from None
        key = object()
        WATCHDOG.arm(key, self.conn.pgconn.socket, timeout or self.timeout)
        try:
            cur = self.conn.execute(sql, params if params else None)
            rows = cur.fetchall() if cur.description else []
            return rows, self.conn.info.port
        except psycopg.Error as e:
            state = getattr(e, "sqlstate", None)
            msg = (getattr(e.diag, "message_primary", None) or str(e).strip() or repr(e)).splitlines()[0]
            broken = self.conn.broken or self.conn.closed
            if broken:
                self.close()
            if state is None and broken:
                raise CallError("unknown", "08006", msg) from None
            if state in INFLIGHT:
                raise CallError("unknown", state, msg) from None
            raise CallError("error", state, msg) from None
        finally:
            WATCHDOG.disarm(key)


# --------------------------------------------------------------------------
# Routes and partitions: hashtext(route) & (N - 1), as PL/Proxy's RUN ON picks.

class Partitions:
    def __init__(self, n, dsns):
        self.n, self.dsns = n, dsns
        self.cache = {}
        self.lock = threading.Lock()
        self.conns = {}

    def of(self, routes):
        missing = [r for r in set(routes) if r not in self.cache]
        if missing:
            self._compute(missing)
        return [self.cache[r] for r in routes]

    def one(self, route):
        return self.of([route])[0]

    def _compute(self, routes):
        last = None
        for attempt in range(40):
            for dsn in self.dsns:
                with self.lock:
                    c = self.conns.setdefault((threading.get_ident(), dsn), Conn(dsn, 10))
                try:
                    rows, _ = c.call("SELECT r, pg_catalog.hashtext(r) & %s FROM unnest(%s::text[]) AS r",
                                     (self.n - 1, routes))
                except CallError as e:
                    last = e
                    continue
                with self.lock:
                    self.cache.update({r: p for r, p in rows})
                return
            time.sleep(0.5)
        raise RuntimeError("no server answered hashtext(): %s" % (last and last.msg))


# --------------------------------------------------------------------------
# Where calls go: the proxy, or the shards by the client's own routing.

class Router:
    """Calls for the proxy.  Without one, each goes to the partition of its route."""

    def __init__(self, ctx):
        self.ctx = ctx
        if ctx.proxy:
            self.proxy = Conn(ctx.proxy, ctx.call_timeout)
        else:
            self.proxy = None
            self.shards = [Conn(d, ctx.call_timeout) for d in ctx.shards]

    def call(self, route, sql, params=(), timeout=None):
        if self.proxy is not None:
            return self.proxy.call(sql, params, timeout)
        return self.shards[self.ctx.parts.one(route)].call(sql, params, timeout)

    def broadcast(self, sql, params=()):
        if self.proxy is not None:
            return [self.proxy.call(sql, params)[0]]
        return [c.call(sql, params)[0] for c in self.shards]

    def claim(self, actor, max_tasks, lease, skipped):
        """own_tasks without wait: the proxy's, or its loop over the partitions."""
        sql = ("SELECT id, token::text, action FROM taskq.own_tasks(%s, %s, %s::text[], %s::interval)")
        if self.proxy is not None:
            del self.proxy.notices[:]
            rows, port = self.proxy.call(sql, (actor, max_tasks, ACTIONS, lease))
            for sev, msg in self.proxy.notices:
                if sev == "WARNING":
                    m = re.search(r"partition\D{0,3}(\d+)", msg)
                    skipped.append((int(m.group(1)) if m else None, msg))
            return rows
        n = len(self.shards)
        start = random.randrange(n)
        got = []
        for i in range(n):
            k = (start + i) % n
            try:
                rows, _ = self.shards[k].call(sql, (actor, max_tasks - len(got), ACTIONS, lease))
            except CallError as e:
                if e.retryable:
                    skipped.append((k, "%s %s" % (e.sqlstate, e.msg)))
                    continue
                raise
            got.extend(rows)
            if len(got) >= max_tasks:
                break
        return got

    def close(self):
        for c in ([self.proxy] if self.proxy else self.shards):
            c.close()


class Ctx:
    pass


def rec_error(rec, e):
    rec.update(outcome=e.outcome, sqlstate=e.sqlstate, msg=e.msg[:300])


# --------------------------------------------------------------------------
# Producers.

class Op:
    def __init__(self, kind, route, ids, first_sql, first_params, retry_sql, retry_params):
        self.opid = str(uuid.uuid4())
        self.kind, self.route, self.ids = kind, route, ids
        self.first = (first_sql, first_params)
        self.again = (retry_sql, retry_params)
        self.tries = 0
        self.next_try = 0.0
        self.unknown = False
        self.backoff = 0.1


def make_op(kind, route):
    body = {"route": route}
    if kind == "chain":
        ids = ["%s/%d" % (route, i) for i in (1, 2, 3)]
        tasks = [{"id": i, "action": "ha_chain", "body": body} for i in ids]
        linked = [dict(t, to_signal_after=[ids[j + 1]]) if j + 1 < len(ids) else t
                  for j, t in enumerate(tasks)]
        return Op(kind, route, ids, "SELECT taskq.chain(%s::jsonb)", (json.dumps(tasks),),
                  "SELECT count(*) FROM taskq.insert_tasks_if_absent(%s::jsonb)", (json.dumps(linked),))
    if kind == "chord":
        members = ["%s/%d" % (route, i) for i in (1, 2, 3)]
        join = "%s/j" % route
        tasks = [{"id": i, "action": "ha_member", "body": body} for i in members]
        jdoc = {"id": join, "action": "ha_join", "body": body}
        linked = [dict(t, to_signal_after=[join]) for t in tasks] + [jdoc]
        return Op(kind, route, members + [join], "SELECT taskq.chord(%s::jsonb, %s::jsonb)",
                  (json.dumps(tasks), json.dumps(jdoc)),
                  "SELECT count(*) FROM taskq.insert_tasks_if_absent(%s::jsonb)", (json.dumps(linked),))
    if kind == "machine":
        sql = "SELECT taskq.start_machine(%s, %s, %s::jsonb)"
        params = (MACHINE, route, json.dumps(body))
        return Op(kind, route, [route], sql, params, sql, params)
    sql = "SELECT taskq.start_saga(%s, %s, %s::jsonb)"
    params = (SAGA, route, json.dumps(body))
    return Op(kind, route, [route], sql, params, sql, params)


def producer(ctx, num):
    who = "prod-%d" % num
    router = Router(ctx)
    pending = []
    routes = []
    seq = 0
    kinds = ["chain", "chord", "machine", "saga"]
    interval = 1.0 / ctx.rate if ctx.rate > 0 else 0
    next_new = now()
    while True:
        t = now()
        if t >= ctx.retry_deadline or (ctx.stop_producing.is_set() and not pending):
            break
        due = [op for op in pending if op.next_try <= t]
        if due:
            op = due[0]
        elif not ctx.stop_producing.is_set() and len(pending) < ctx.max_pending and t >= next_new:
            if not routes:
                # partitions of the next routes now, not while a server is down
                names = ["%s-%d-%d" % (ctx.tag, num, seq + i) for i in range(1, 257)]
                ctx.parts.of(names)
                routes.extend(names)
            seq += 1
            kind = kinds[seq % len(kinds)]
            op = make_op(kind, routes.pop(0))
            next_new = max(next_new + interval, t - 1)
        else:
            time.sleep(0.01)
            continue
        attempt(ctx, router, who, op)
        if op.done:
            if op in pending:
                pending.remove(op)
        elif op not in pending:
            pending.append(op)
    # what is still pending was left unanswered by the deadline: L5 reports it
    router.close()


def attempt(ctx, router, who, op):
    op.tries += 1
    sql, params = op.first if op.tries == 1 else op.again
    shard = ctx.parts.one(op.route)
    rec = {"t0": now(), "who": who, "op": op.kind, "opid": op.opid, "try": op.tries,
           "route": op.route, "shard": shard, "ids": op.ids,
           "call": sql.split("(")[0].replace("SELECT ", "")}
    op.done = False
    try:
        router.call(op.route, sql, params)
        rec["outcome"] = "ok"
        op.done = True
    except CallError as e:
        if e.sqlstate == "23505" and op.kind in ("machine", "saga") and op.tries > 1:
            # the start repeated: the run exists, so the first start committed
            rec.update(outcome="ok", sqlstate="23505", msg="exists: an earlier try committed")
            op.done = True
        else:
            rec_error(rec, e)
            if e.retryable:
                op.next_try = now() + op.backoff
                op.backoff = min(op.backoff * 2, 1.0)
            else:
                op.done = True
    rec["t"] = now()
    ctx.ledger.write(rec)


# --------------------------------------------------------------------------
# Workers.

def finish(ctx, call, who, task, via, shard):
    """Finish one claimed task, repeating the same call until it is answered."""
    tid, token, action = task
    op, sql = FINISH[action]
    params = (tid, token, json.dumps({"by": who})) if op == "return" else (tid, token)
    opid = str(uuid.uuid4())
    backoff = 0.1
    tries = 0
    while True:
        tries += 1
        rec = {"t0": now(), "who": who, "op": op, "opid": opid, "try": tries, "ids": [tid],
               "token": token, "route": route_of(tid), "shard": shard, "via": via}
        try:
            _, port = call(route_of(tid), sql, params)
            rec.update(outcome="ok", port=port)
        except CallError as e:
            rec_error(rec, e)
        rec["t"] = now()
        ctx.ledger.write(rec)
        if rec["outcome"] == "ok" or rec.get("sqlstate") not in UNSENT | INFLIGHT:
            return
        if now() > ctx.worker_deadline:
            return
        time.sleep(backoff)
        backoff = min(backoff * 2, 1.0)


def shard_worker(ctx, k, num):
    who = "w%d-%d" % (k, num)
    actor = "%s-%s" % (ctx.tag, who)
    conn = Conn(ctx.shards[k], ctx.call_timeout)
    sql = ("SELECT id, token::text, action FROM taskq.own_tasks(%s, %s, %s::text[], %s::interval, %s::interval)")
    backoff = 0.1
    while not ctx.stop_workers.is_set():
        rec = {"t0": now(), "who": who, "op": "claim", "shard": k, "via": "direct"}
        try:
            rows, port = conn.call(sql, (actor, ctx.batch, ACTIONS, ctx.lease, "1 s"),
                                   timeout=ctx.call_timeout + 1)
            rec.update(outcome="ok", port=port, tasks=[[r[0], r[1]] for r in rows])
            backoff = 0.1
        except CallError as e:
            rows = []
            rec_error(rec, e)
        rec["t"] = now()
        ctx.ledger.write(rec)
        if rec["outcome"] != "ok":
            time.sleep(backoff)
            backoff = min(backoff * 2, 1.0)
            continue
        for task in rows:
            time.sleep(ctx.work_ms / 1000.0)
            finish(ctx, lambda _r, s, p, **kw: conn.call(s, p), who, task, "direct", k)
    conn.close()


def proxy_claimer(ctx, num):
    who = "pc-%d" % num
    actor = "%s-%s" % (ctx.tag, who)
    router = Router(ctx)
    while not ctx.stop_workers.is_set():
        skipped = []
        rec = {"t0": now(), "who": who, "op": "claim", "via": "proxy"}
        try:
            rows = router.claim(actor, ctx.batch, ctx.lease, skipped)
            rec.update(outcome="ok", tasks=[[r[0], r[1]] for r in rows])
        except CallError as e:
            rows = []
            rec_error(rec, e)
        rec["t"] = now()
        ctx.ledger.write(rec)
        for part, msg in skipped:
            ctx.ledger.write({"t0": rec["t0"], "t": rec["t"], "who": who, "op": "claim_skip",
                              "shard": part, "via": "proxy", "outcome": "error",
                              "sqlstate": "08006", "msg": msg[:300]})
        if not rows:
            time.sleep(0.1 if rec["outcome"] == "ok" else 0.5)
            continue
        for task in rows:
            time.sleep(ctx.work_ms / 1000.0)
            finish(ctx, router.call, who, task, "proxy", ctx.parts.one(route_of(task[0])))
    router.close()


# --------------------------------------------------------------------------
# load: setup, the run, the drain.

def unfinished(ctx, conns):
    """Unfinished tasks and runs per shard, None where a shard did not answer."""
    out = []
    for c in conns:
        try:
            rows, _ = c.call("SELECT (SELECT count(*) FROM taskq.tasks WHERE status_code IN ('pending', 'in_progress'))"
                             " + (SELECT count(*) FROM taskq.runs WHERE finished_at IS NULL)")
            out.append(rows[0][0])
        except CallError:
            out.append(None)
    return out


def setup(ctx):
    router = Router(ctx)
    for k, dsn in enumerate(ctx.shards):
        c = Conn(dsn, 30)
        for attempt_no in range(60):
            try:
                rows, _ = c.call("SELECT current_setting('taskq.retention')")
                if rows[0][0] != "-1":
                    c.call("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET taskq.retention = -1', "
                           "current_database()); END $$")
                    log("shard %d: taskq.retention set to -1 for new sessions (was %s)" % (k, rows[0][0]))
                break
            except CallError as e:
                if e.retryable:
                    time.sleep(1)
                    continue
                log("shard %d: cannot set taskq.retention: %s %s" % (k, e.sqlstate, e.msg))
                break
        c.close()
    if ctx.proxy:
        sqls = [("SELECT taskq.define_machine(%s, %s::jsonb)", (MACHINE, json.dumps(MACHINE_DEF))),
                ("SELECT taskq.define_saga(%s, %s::jsonb)", (SAGA, json.dumps(SAGA_DEF)))]
    else:
        sqls = [("SELECT taskq.define_machine(%s, %s::jsonb, 1)", (MACHINE, json.dumps(MACHINE_DEF))),
                ("SELECT taskq.define_saga(%s, %s::jsonb, 1)", (SAGA, json.dumps(SAGA_DEF)))]
    for sql, params in sqls:
        for attempt_no in range(60):
            try:
                router.broadcast(sql, params)
                break
            except CallError as e:
                if not e.retryable or attempt_no == 59:
                    raise SystemExit("haload: %s failed: %s %s" % (sql, e.sqlstate, e.msg))
                time.sleep(1)
    router.close()


def cmd_load(args):
    global WATCHDOG
    WATCHDOG = Watchdog()
    ctx = Ctx()
    ctx.shards, ctx.proxy = config(args)
    os.makedirs(args.dir, exist_ok=True)
    ctx.tag = args.tag or "ha%x" % (int(now()) & 0xffffff)
    ctx.parts = Partitions(len(ctx.shards), ([ctx.proxy] if ctx.proxy else []) + ctx.shards)
    ctx.rate, ctx.max_pending, ctx.batch = args.rate, 50, args.batch
    ctx.lease, ctx.call_timeout, ctx.work_ms = "%d s" % args.lease, args.call_timeout, args.work_ms
    ctx.stop_producing, ctx.stop_workers = threading.Event(), threading.Event()
    ctx.retry_deadline = ctx.worker_deadline = float("inf")
    with open(os.path.join(args.dir, "run.json"), "w") as f:
        json.dump({"tag": ctx.tag, "shards": ctx.shards, "proxy": ctx.proxy, "started": now(),
                   "rate": args.rate, "producers": args.producers, "workers": args.workers,
                   "proxy_claimers": args.proxy_claimers, "lease": args.lease}, f)
    setup(ctx)
    ctx.ledger = Ledger(os.path.join(args.dir, "ledger.jsonl"))
    threads = []
    for i in range(args.producers):
        threads.append(("p", threading.Thread(target=producer, args=(ctx, i), daemon=True)))
    for k in range(len(ctx.shards)):
        for i in range(args.workers):
            threads.append(("w", threading.Thread(target=shard_worker, args=(ctx, k, i), daemon=True)))
    for i in range(args.proxy_claimers):
        threads.append(("w", threading.Thread(target=proxy_claimer, args=(ctx, i), daemon=True)))
    log("load %s: %d shards, %s, %d producers at %s workflows/s, %d workers per shard, %d proxy claimers"
        % (ctx.tag, len(ctx.shards), "through the proxy" if ctx.proxy else "routed by the client",
           args.producers, args.rate, args.workers, args.proxy_claimers))
    for _, t in threads:
        t.start()
    stop_file = os.path.join(args.dir, "stop")
    t_end = now() + args.duration if args.duration else float("inf")
    while now() < t_end and not os.path.exists(stop_file):
        time.sleep(0.2)
    log("load %s: producers stop; unanswered calls are retried for %d s" % (ctx.tag, args.retry_grace))
    ctx.retry_deadline = now() + args.retry_grace
    ctx.stop_producing.set()
    for kind, t in threads:
        if kind == "p":
            t.join()
    # The drain: the workers go on until every shard says it has nothing left
    # (twice in a row), or the drain's time is up.
    ctx.worker_deadline = now() + args.drain + 30
    conns = [Conn(d, 10) for d in ctx.shards]
    t_drain = now() + args.drain
    clean = 0
    left = None
    while now() < t_drain:
        left = unfinished(ctx, conns)
        clean = clean + 1 if all(x == 0 for x in left) else 0
        if clean >= 2:
            break
        time.sleep(0.5)
    log("load %s: drained %s; workers stop" % (ctx.tag, "" if clean >= 2 else "NOT (left per shard: %s)" % left))
    ctx.stop_workers.set()
    for kind, t in threads:
        if kind == "w":
            t.join(timeout=args.call_timeout + 40)
    ctx.ledger.close()
    for c in conns:
        c.close()
    return 0


# --------------------------------------------------------------------------
# check: L1-L5 and the measurements.

def read_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line:
                    out.append(json.loads(line))
    return out


class Failures:
    def __init__(self):
        self.items = {k: [] for k in ("L1", "L2", "L3", "L4", "L5")}

    def add(self, check, what):
        self.items[check].append(what)


def shard_rows(conns, sql, params=()):
    out = []
    for k, c in enumerate(conns):
        for attempt_no in range(30):
            try:
                out.append(c.call(sql, params, timeout=120)[0])
                break
            except CallError as e:
                if not e.retryable or attempt_no == 29:
                    raise SystemExit("haload check: shard %d: %s %s" % (k, e.sqlstate, e.msg))
                time.sleep(1)
    return out


def check_state(conns, n, ledger, fails, facts):
    """L1-L5 against the shards' state now."""
    tasks = shard_rows(conns, "SELECT id, status_code::text, performance_token::text, num_tries,"
                              " (pg_catalog.hashtext(split_part(id, '/', 1)) & %s) FROM taskq.tasks",
                       (n - 1,))
    runs = shard_rows(conns, "SELECT id, status, (pg_catalog.hashtext(split_part(id, '/', 1)) & %s)"
                             " FROM taskq.runs", (n - 1,))
    where = {}      # id -> [shard, ...]
    state = {}      # id -> (status, token, num_tries)
    for k, rows in enumerate(tasks):
        for tid, status, token, tries, part in rows:
            where.setdefault(tid, []).append(k)
            state[tid] = (status, token, tries)
            if part != k:
                fails.add("L1", "task %s is on shard %d, its route's partition is %d" % (tid, k, part))
    run_where = {}
    for k, rows in enumerate(runs):
        for rid, status, part in rows:
            run_where.setdefault(rid, []).append((k, status))
            if part != k:
                fails.add("L1", "run %s is on shard %d, its route's partition is %d" % (rid, k, part))
    for tid, ks in where.items():
        if len(ks) > 1:
            fails.add("L1", "task %s exists on shards %s" % (tid, ks))
    facts["tasks"] = len(where)
    facts["runs"] = len(run_where)

    ops = {}
    for r in ledger:
        if "opid" in r:
            ops.setdefault(r["opid"], []).append(r)
    acked_inserts = 0
    for opid, tries in ops.items():
        first = tries[0]
        if first["op"] not in INSERT_OPS:
            continue
        ok = any(t["outcome"] == "ok" for t in tries)
        if first["op"] in ("machine", "saga"):
            present = [1 if first["route"] in run_where else 0]
            ids_present = [first["route"] + "/1" in where]
        else:
            present = [1 if i in where else 0 for i in first["ids"]]
            ids_present = []
        if ok:
            acked_inserts += 1
            for i, p in zip(first["ids"], present):
                if not p:
                    fails.add("L1", "acknowledged %s %s: %s is on no shard (op %s)" % (first["op"], first["route"], i, opid))
            if first["op"] in ("machine", "saga"):
                rw = run_where.get(first["route"], [])
                if len(rw) > 1:
                    fails.add("L1", "run %s exists on shards %s" % (first["route"], [k for k, _ in rw]))
                if not all(ids_present):
                    fails.add("L1", "acknowledged %s %s: its first step %s/1 is on no shard" % (first["op"], first["route"], first["route"]))
            want = first["shard"]
            for i in first["ids"]:
                if first["op"] in ("machine", "saga"):
                    ks = [k for k, _ in run_where.get(i, [])]
                else:
                    ks = where.get(i, [])
                if ks and ks != [want]:
                    fails.add("L1", "acknowledged %s: %s on shards %s, its route's partition is %d" % (first["op"], i, ks, want))
        elif 0 < sum(present) < len(present):
            fails.add("L5", "%s %s (op %s, not acknowledged): only %d of its %d tasks exist (a batch is all or none)"
                      % (first["op"], first["route"], opid, sum(present), len(present)))
        if any(t["outcome"] == "unknown" for t in tries):
            last = tries[-1]
            if last["outcome"] == "unknown":
                fails.add("L5", "%s %s (op %s): its answer was lost and no retry was answered"
                          % (first["op"], first["route"], opid))
            elif last["outcome"] != "ok" and sum(present) not in (0, len(present)):
                fails.add("L5", "%s %s (op %s): retry ended %s with a partial batch" % (first["op"], first["route"], opid, last.get("sqlstate")))
    facts["acknowledged_inserts"] = acked_inserts

    # L2: every acknowledged completion is final, with its token.
    acked_done = 0
    for opid, tries in ops.items():
        first = tries[0]
        if first["op"] not in FINISH_OPS:
            continue
        tid, token = first["ids"][0], first["token"]
        ok = [t for t in tries if t["outcome"] == "ok"]
        st = state.get(tid)
        if ok:
            acked_done += 1
            if st is None:
                fails.add("L2", "acknowledged %s of %s (token %s): the task is on no shard" % (first["op"], tid, token))
            elif st[0] != "completed" or st[1] != token:
                fails.add("L2", "acknowledged %s of %s with token %s: the task is %s with token %s"
                          % (first["op"], tid, token, st[0], st[1]))
        if any(t["outcome"] == "unknown" for t in tries):
            last = tries[-1]
            if last["outcome"] == "unknown":
                fails.add("L5", "%s of %s with token %s (op %s): its answer was lost and no retry was answered"
                          % (first["op"], tid, token, opid))
            elif last["outcome"] != "ok" and st is not None and st[1] == token and st[0] == "completed":
                fails.add("L5", "%s of %s with token %s (op %s): the retry said %s, yet the task was completed with that token"
                          % (first["op"], tid, token, opid, last.get("sqlstate")))
    facts["acknowledged_completions"] = acked_done

    # Duplicates: a task claimed (acknowledged) under more than one token.
    tokens = {}
    for r in ledger:
        if r["op"] == "claim" and r["outcome"] == "ok":
            for tid, tok in r.get("tasks", []):
                tokens.setdefault(tid, set()).add(tok)
    facts["executed_tasks"] = len(tokens)
    facts["duplicates"] = sum(1 for v in tokens.values() if len(v) > 1)
    facts["tasks_tried_more_than_once"] = sum(1 for s in state.values() if s[2] and s[2] > 1)
    facts["unknown_claims"] = sum(1 for r in ledger if r["op"] == "claim" and r["outcome"] == "unknown")
    facts["unknown_calls"] = sum(1 for r in ledger if r["outcome"] == "unknown")
    return state


def check_signals_and_ends(conns, fails, facts, settle):
    """L3 and L4, read again until they hold or settle seconds passed (the worker folds deferred signals)."""
    t_end = now() + settle
    while True:
        l3, l4 = [], []
        bad3 = shard_rows(conns, """
            WITH e AS (SELECT s.succ, count(*) AS n
                         FROM taskq.tasks AS p, unnest(p.to_signal_after) AS s(succ)
                        WHERE p.status_code IN ('pending', 'in_progress')
                        GROUP BY s.succ)
            SELECT t.id, t.num_signals, coalesce(e.n, 0)
              FROM taskq.tasks AS t LEFT JOIN e ON e.succ = t.id
             WHERE t.num_signals <> coalesce(e.n, 0)
               AND NOT (t."trigger" <> 'all_success' AND t.num_signals = 0)
             ORDER BY t.id LIMIT 20""")
        deferred = shard_rows(conns, "SELECT task_id, sum(signals) FROM taskq.deferred_signals"
                                     " GROUP BY task_id HAVING sum(signals) <> 0 ORDER BY 1 LIMIT 20")
        stranded = shard_rows(conns, "SELECT id, status_code::text, coalesce(status, ''), num_signals FROM taskq.tasks"
                                     " WHERE status_code <> 'completed' ORDER BY id LIMIT 20")
        runs = shard_rows(conns, "SELECT id, status FROM taskq.runs WHERE status <> 'succeeded' ORDER BY id LIMIT 20")
        for k, rows in enumerate(bad3):
            for tid, ns, want in rows:
                l3.append("shard %d: task %s has num_signals %d, unfinished predecessors %d" % (k, tid, ns, want))
        for k, rows in enumerate(deferred):
            for tid, s in rows:
                l3.append("shard %d: %d deferred signals left for task %s" % (k, s, tid))
        for k, rows in enumerate(stranded):
            for tid, st, text, ns in rows:
                l4.append("shard %d: task %s ended %s (%s), num_signals %d" % (k, tid, st, text, ns))
        for k, rows in enumerate(runs):
            for rid, st in rows:
                l4.append("shard %d: run %s is %s" % (k, rid, st))
        if (not l3 and not l4) or now() >= t_end:
            break
        time.sleep(1)
    for x in l3:
        fails.add("L3", x)
    for x in l4:
        fails.add("L4", x)


def scenario_metrics(ledger, events, parts):
    """Per fault of events.jsonl: outage, errors elsewhere, throughput, duplicates."""
    for r in ledger:
        if r.get("shard") is None and r.get("route"):
            r["shard"] = parts.get(r["route"])
    done = [r["t"] for r in ledger if r["op"] in FINISH_OPS and r["outcome"] == "ok"]
    faults = [e for e in events if e.get("event") == "fault"]
    ends = [e["t"] for e in events if e.get("event") in ("repaired", "end")]
    out = []
    for i, f in enumerate(faults):
        tf, k = f["t"], f.get("shard")
        t_next = faults[i + 1]["t"] if i + 1 < len(faults) else float("inf")
        t_stop = min([t for t in ends if t > tf] + [t_next, max([r["t"] for r in ledger] + [tf])])
        on_k = sorted((r for r in ledger if k is not None and r.get("shard") == k and tf <= r["t"] <= t_stop),
                      key=lambda r: r["t"])
        errs = [r for r in on_k if r["outcome"] != "ok"]
        first_ok = next((r["t"] for r in on_k if r["outcome"] == "ok"), None)
        m = {"scenario": f.get("scenario"), "what": f.get("what"), "shard": k, "fault_at": tf,
             "window_end": t_stop, "errors_on_shard": len(errs)}
        if errs:
            last_err = errs[-1]["t"]
            rec = next((r["t"] for r in on_k if r["outcome"] == "ok" and r["t"] > errs[0]["t"]), None)
            back = next((r["t"] for r in on_k if r["outcome"] == "ok" and r["t"] > last_err), None)
            m["first_error_s"] = round(errs[0]["t"] - tf, 2)
            m["first_ok_after_first_error_s"] = round(rec - tf, 2) if rec else None
            m["recovered_s"] = round(back - tf, 2) if back else None
        else:
            m["first_ok_s"] = round(first_ok - tf, 2) if first_ok else None
            m["recovered_s"] = 0.0
        if errs and m["recovered_s"] is not None:
            t_rec = tf + m["recovered_s"]
        else:
            # no outage seen (or no end of it): "during" is the fault's whole window
            t_rec = t_stop
        others = [r for r in ledger if r["outcome"] != "ok" and r.get("shard") is not None
                  and r.get("shard") != k and tf <= r["t"] <= max(t_rec, tf) + 5]
        m["errors_on_other_shards"] = len(others)
        m["errors_on_other_shards_sample"] = ["%s shard %s %s %s" % (r["op"], r.get("shard"), r.get("sqlstate"), r.get("msg", "")[:80])
                                              for r in others[:5]]
        m["errors_unattributed"] = sum(1 for r in ledger if r["outcome"] != "ok" and r.get("shard") is None
                                       and tf <= r["t"] <= max(t_rec, tf) + 5)

        def rate(a, b):
            if b <= a:
                return None
            return round(sum(1 for t in done if a <= t < b) / (b - a), 1)
        buckets = [sum(1 for t in done if tf + s <= t < tf + s + 1) for s in range(-10, int(t_rec - tf) + 11)]
        m["tasks_per_s_before"] = rate(tf - 10, tf)
        m["tasks_per_s_during"] = rate(tf, t_rec)
        m["tasks_per_s_after"] = rate(t_rec, t_rec + 10)
        m["tasks_per_s_min_1s_during"] = min(buckets[10:10 + max(1, int(t_rec - tf))] or [0])
        m["buckets_from_minus_10s"] = buckets
        promos = [e for e in events if e.get("event") == "promoted" and e.get("shard") == k and e["t"] >= tf]
        if promos and promos[0].get("old_port"):
            tp, old = promos[0]["t"], promos[0]["old_port"]
            late = [r for r in ledger if r["outcome"] == "ok" and r.get("port") == old and r.get("shard") == k
                    and r["op"] in FINISH_OPS and r["t"] > tp]
            m["writes_acknowledged_by_old_primary_after_promotion"] = len(late)
        out.append(m)
    return out


def cmd_check(args):
    global WATCHDOG
    WATCHDOG = Watchdog()
    shards, proxy = config(args)
    n = len(shards)
    conns = [Conn(d, 120) for d in shards]
    ledger = read_jsonl(os.path.join(args.dir, "ledger.jsonl"))
    events = read_jsonl(os.path.join(args.dir, "events.jsonl"))
    fails, facts = Failures(), {"ledger_lines": len(ledger)}
    retention = shard_rows(conns, "SELECT current_setting('taskq.retention')")
    facts["retention"] = [r[0][0] for r in retention]
    check_state(conns, n, ledger, fails, facts)
    check_signals_and_ends(conns, fails, facts, args.settle)
    routes = sorted({r["route"] for r in ledger if r.get("route")})
    parts = dict(zip(routes, Partitions(n, shards).of(routes))) if routes else {}
    if proxy and routes:
        # the proxy's routing and the client's hash rule must agree
        try:
            rows, _ = Conn(proxy, 60).call("SELECT r, taskq_proxy.partition_of(r) FROM unnest(%s::text[]) AS r",
                                           (routes[:2000],))
            wrong = [(r, p, parts[r]) for r, p in rows if p != parts[r]]
            facts["proxy_partition_of_agrees"] = not wrong
            for r, p, q in wrong[:20]:
                fails.add("L1", "the proxy puts route %s on partition %s, hashtext(route) & (N - 1) is %d" % (r, p, q))
        except CallError as e:
            facts["proxy_partition_of_agrees"] = "not asked: %s %s" % (e.sqlstate, e.msg)
    scen = scenario_metrics(ledger, events, parts)
    for m in scen:
        if m.get("writes_acknowledged_by_old_primary_after_promotion"):
            fails.add("L2", "shard %s: %d completions acknowledged by the old primary after its standby was promoted"
                      % (m["shard"], m["writes_acknowledged_by_old_primary_after_promotion"]))
    result = {"facts": facts, "checks": {k: {"ok": not v, "failures": len(v), "first": v[:20]}
                                         for k, v in fails.items.items()},
              "scenarios": scen}
    with open(os.path.join(args.dir, "report.json"), "w") as f:
        json.dump(result, f, indent=1)
    for c in conns:
        c.close()
    print_report(result)
    return 0 if all(not v for v in fails.items.values()) else 1


NAMES = {"L1": "every acknowledged insert exists once, on its route's shard",
         "L2": "every acknowledged completion is final, with its token",
         "L3": "num_signals = unfinished predecessors, no deferred signals left",
         "L4": "every task completed, every run succeeded (none stranded)",
         "L5": "every unacknowledged call consistent after its retry"}


def print_report(res):
    f = res["facts"]
    print("ledger: %d lines; %d tasks, %d runs on the shards; %d inserts and %d completions acknowledged;"
          % (f["ledger_lines"], f["tasks"], f["runs"], f["acknowledged_inserts"], f["acknowledged_completions"]))
    print("        %d calls unknown at first, %d claims lost in flight; duplicates (claimed under 2+ tokens): %d;"
          " tried more than once: %d; retention %s"
          % (f["unknown_calls"], f["unknown_claims"], f["duplicates"], f["tasks_tried_more_than_once"],
             ",".join(sorted(set(f["retention"])))))
    if "proxy_partition_of_agrees" in f:
        print("        taskq_proxy.partition_of agrees with hashtext(route) & (N - 1): %s" % f["proxy_partition_of_agrees"])
    for k, c in res["checks"].items():
        print("%s %-4s %s%s" % ("ok  " if c["ok"] else "FAIL", k, NAMES[k],
                                "" if c["ok"] else " (%d)" % c["failures"]))
        for x in c["first"][:10]:
            print("       ", x)
    for m in res["scenarios"]:
        print("fault %s (%s) on shard %s:" % (m["scenario"], m["what"], m["shard"]))
        print("   errors on the shard %d, first after %s s; first success after them %s s; back for good %s s"
              % (m["errors_on_shard"], m.get("first_error_s", "-"), m.get("first_ok_after_first_error_s", "-"),
                 m["recovered_s"]))
        print("   errors on the other shards: %d%s" % (m["errors_on_other_shards"],
                                                       (" e.g. " + "; ".join(m["errors_on_other_shards_sample"]))
                                                       if m["errors_on_other_shards"] else ""))
        print("   tasks/s before %s, during %s (lowest 1 s: %s), after %s"
              % (m["tasks_per_s_before"], m["tasks_per_s_during"], m["tasks_per_s_min_1s_during"],
                 m["tasks_per_s_after"]))
        if "writes_acknowledged_by_old_primary_after_promotion" in m:
            print("   completions acknowledged by the old primary after the promotion: %d"
                  % m["writes_acknowledged_by_old_primary_after_promotion"])


# --------------------------------------------------------------------------
# plant: what each checker must see (the self-test).

def cmd_plant(args):
    global WATCHDOG
    WATCHDOG = Watchdog()
    shards, _ = config(args)
    n = len(shards)
    conns = [Conn(d, 30) for d in shards]
    ledger = read_jsonl(os.path.join(args.dir, "ledger.jsonl"))
    parts = Partitions(n, shards)
    chains = [r for r in ledger if r["op"] == "chain" and r["outcome"] == "ok"]
    chords = [r for r in ledger if r["op"] == "chord" and r["outcome"] == "ok"]
    done = [r for r in ledger if r["op"] == "return" and r["outcome"] == "ok" and r["ids"][0] not in
            {i for c in chains[:2] for i in c["ids"]}]
    planted = {}
    # L1: an acknowledged insert lost, another on a second shard.
    lost = chains[0]["ids"][2]
    conns[parts.one(route_of(lost))].call("DELETE FROM taskq.tasks WHERE id = %s", (lost,))
    planted["L1"] = [lost]
    twin = chains[1]["ids"][2]
    k = parts.one(route_of(twin))
    rows, _ = conns[k].call("SELECT row_to_json(t)::text FROM taskq.tasks AS t WHERE id = %s", (twin,))
    conns[(k + 1) % n].call("INSERT INTO taskq.tasks SELECT * FROM json_populate_record(NULL::taskq.tasks, %s::json)",
                            (rows[0][0],))
    planted["L1"].append(twin)
    # L2: an acknowledged completion whose token is not the task's.
    wrong = done[0]["ids"][0]
    conns[parts.one(route_of(wrong))].call(
        "UPDATE taskq.tasks SET performance_token = gen_random_uuid() WHERE id = %s", (wrong,))
    planted["L2"] = [wrong]
    # L3: a join that counts a signal no predecessor owes it.
    join = chords[0]["ids"][-1]
    conns[parts.one(route_of(join))].call("UPDATE taskq.tasks SET num_signals = 1 WHERE id = %s", (join,))
    planted["L3"] = [join]
    # L4: a task left pending for good.
    route = "stranded-%d" % os.getpid()
    conns[parts.one(route)].call(
        "INSERT INTO taskq.tasks (id, action, not_before) VALUES (%s, 'ha_chain', now() + interval '1 day')",
        (route + "/1",))
    planted["L4"] = [route + "/1"]
    # L5: a return whose answer was lost, never retried.
    opid = str(uuid.uuid4())
    with open(os.path.join(args.dir, "ledger.jsonl"), "a") as f:
        f.write(json.dumps({"t0": now(), "t": now(), "who": "plant", "op": "return", "opid": opid, "try": 1,
                            "ids": [done[1]["ids"][0]], "token": str(uuid.uuid4()),
                            "route": route_of(done[1]["ids"][0]), "outcome": "unknown", "sqlstate": "08006",
                            "msg": "planted"}) + "\n")
    planted["L5"] = [opid]
    print(json.dumps(planted))
    return 0


def cmd_wait_ok(args):
    """Wait until the load acknowledged a write on a shard after a moment (the driver's probe)."""
    path = os.path.join(args.dir, "ledger.jsonl")
    t_end = now() + args.timeout
    pos = 0
    while now() < t_end:
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                f.seek(pos)
                chunk = f.read()
            cut = chunk.rfind("\n") + 1
            pos += len(chunk[:cut].encode("utf-8"))
            for line in chunk[:cut].splitlines():
                r = json.loads(line)
                if (r["outcome"] == "ok" and r["t"] > args.after and r["op"] in INSERT_OPS + FINISH_OPS
                        and r.get("shard") == args.shard):
                    print("%.3f" % r["t"])
                    return 0
        time.sleep(0.3)
    return 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("wait-ok", help="wait for an acknowledged write on a shard after a moment")
    w.add_argument("--dir", required=True)
    w.add_argument("--shard", type=int, required=True)
    w.add_argument("--after", type=float, required=True)
    w.add_argument("--timeout", type=float, default=120)
    for name in ("load", "check", "plant"):
        s = sub.add_parser(name)
        s.add_argument("--dir", required=True, help="the run's directory: ledger.jsonl, events.jsonl, report.json")
        s.add_argument("--cluster-env", help="the cluster state file (default $TASKQ_CLUSTER_DIR/cluster.env)")
        s.add_argument("--shard", action="append", help="a shard's connection string, in partition order")
        s.add_argument("--proxy", help="the proxy's connection string")
        s.add_argument("--no-proxy", action="store_true", help="route calls to the shards, ignoring TQC_PROXY")
        if name == "load":
            s.add_argument("--duration", type=float, default=30, help="seconds of load (0: until DIR/stop exists)")
            s.add_argument("--tag", help="prefix of the routes (default: from the clock)")
            s.add_argument("--producers", type=int, default=2)
            s.add_argument("--rate", type=float, default=15, help="workflows per second per producer")
            s.add_argument("--workers", type=int, default=2, help="waiting claimers per shard")
            s.add_argument("--proxy-claimers", type=int, default=1)
            s.add_argument("--batch", type=int, default=4, help="tasks per claim")
            s.add_argument("--lease", type=int, default=15, help="seconds of each claim's lease")
            s.add_argument("--work-ms", type=float, default=1.0, help="milliseconds of 'work' per task")
            s.add_argument("--call-timeout", type=float, default=8, help="seconds before a hanging call is cut")
            s.add_argument("--retry-grace", type=float, default=90,
                           help="seconds the producers keep retrying after the load")
            s.add_argument("--drain", type=float, default=120, help="longest drain, seconds")
        if name == "check":
            s.add_argument("--settle", type=float, default=15,
                           help="seconds L3 and L4 may take to hold (deferred signals, expiring leases)")
    args = p.parse_args()
    return {"load": cmd_load, "check": cmd_check, "plant": cmd_plant, "wait-ok": cmd_wait_ok}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
