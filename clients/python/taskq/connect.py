"""Connecting to one of several hosts, each with a connect timeout of its own.

libpq tries the hosts of a multi-host connection string ("host=a,b
target_session_attrs=read-write", as pg_auto_failover hands out) one after
the other, each within its own connect_timeout.  psycopg 3.1 drives libpq's
non-blocking connect under one timeout for the whole attempt: a first host
that accepts the TCP connection and never answers (a stopped server, a
machine cut off after the handshake) uses all of it, or, without
connect_timeout, waits for ever, and the second host, the promoted standby,
is never tried.  connect() does what libpq does: one attempt per host, in
order, each bounded by connect_timeout (DEFAULT_HOST_TIMEOUT when the
string sets none), the next host after any failure; the error of the last
attempt names every host's failure.
"""

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

# Seconds a host may take to connect when the connection string sets no
# connect_timeout (libpq waits for ever; a worker must move on).
DEFAULT_HOST_TIMEOUT = 10

# Keyword arguments of psycopg.connect that are not connection parameters.
_CONNECTION_ARGS = ("autocommit", "prepare_threshold", "row_factory", "cursor_factory", "context")


def host_attempts(conninfo="", **params):
    """The connection parameters of each host of conninfo (with params), in
    order: one dict per host, or one dict when there is one host.  Lists of
    host, hostaddr and port follow libpq's rules (one port for all hosts, or
    one per host); lists that do not match are left to libpq to refuse."""
    p = conninfo_to_dict(conninfo, **params)
    lists = {k: p[k].split(",") for k in ("host", "hostaddr", "port") if p.get(k)}
    n = max((len(v) for k, v in lists.items() if k != "port"), default=1)
    if n <= 1:
        return [p]
    for k, v in lists.items():
        if len(v) not in (1, n) or (k != "port" and len(v) != n):
            return [p]
    attempts = []
    for i in range(n):
        one = dict(p)
        for k, v in lists.items():
            one[k] = v[i] if len(v) == n else v[0]
        attempts.append(one)
    return attempts


def connect(conninfo="", **kwargs):
    """psycopg.connect, trying the hosts of a multi-host conninfo in turn."""
    args = {k: kwargs.pop(k) for k in _CONNECTION_ARGS if k in kwargs}
    attempts = host_attempts(conninfo, **kwargs)
    if len(attempts) == 1:
        return psycopg.connect(conninfo, **args, **kwargs)
    failures = []
    for p in attempts:
        p.setdefault("connect_timeout", str(DEFAULT_HOST_TIMEOUT))
        where = p.get("host") or p.get("hostaddr")
        if p.get("port"):
            where += f":{p['port']}"
        try:
            return psycopg.connect(make_conninfo(**p), **args)
        except psycopg.OperationalError as e:
            failures.append(f"{where}: {str(e).strip()}")
    raise psycopg.OperationalError("no host of the connection string accepted the connection: "
                                   + "; ".join(failures))
