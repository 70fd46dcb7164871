"""The taskq-console command: parse the options, build the app, serve it.

Owns: the command line (databases, listen address, Basic auth, log), and
serving with waitress (a production WSGI server from Debian's packages; the
console parses no HTTP of its own).  Stops on SIGINT or SIGTERM.
"""

import argparse
import logging
import sys

from . import __version__, create_app
from .db import Database, databases_from_proxy


# The keywords of a libpq connection string: "dbname=x" is a connection
# string, not a database named "dbname".
_LIBPQ_KEYWORDS = {"host", "hostaddr", "port", "dbname", "user", "password", "passfile",
                   "sslmode", "application_name", "options", "service", "connect_timeout",
                   "target_session_attrs", "channel_binding", "sslrootcert", "sslcert", "sslkey"}


def _database_args(values):
    """--dsn NAME=CONNSTR, or --dsn CONNSTR (then named db0, db1, ...)."""
    out = []
    for i, v in enumerate(values):
        name, sep, dsn = v.partition("=")
        if sep and name.isidentifier() and name not in _LIBPQ_KEYWORDS:
            out.append((name, dsn))
        else:
            out.append((f"db{i}", v))
    return out


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="taskq-console",
        description="A web console for taskq: the queue, workers, tasks, runs, dead letters, "
                    "limits and schedules of one or more databases.")
    p.add_argument("--dsn", action="append", default=[], metavar="[NAME=]CONNSTR",
                   help="a database with the taskq extension (repeat for several; "
                        "default: the PG* environment)")
    p.add_argument("--shards-from-proxy", metavar="CONNSTR",
                   help="every partition of a taskq_proxy cluster, named p0, p1, ...")
    p.add_argument("--listen", default="127.0.0.1:8080", metavar="HOST:PORT",
                   help="address to serve on (default 127.0.0.1:8080, loopback only)")
    p.add_argument("--basic-auth-file", metavar="FILE",
                   help="a file holding one line USER:PASSWORD; every page but /healthz asks for it")
    p.add_argument("--refresh", type=int, default=5, metavar="SECONDS",
                   help="how often live pages refresh (default 5)")
    p.add_argument("--sample-seconds", type=float, default=15.0, metavar="SECONDS",
                   help="how often the counters are sampled for the rates (default 15)")
    p.add_argument("--stuck-minutes", type=float, default=10.0, metavar="MINUTES",
                   help="flag an action with tasks in progress and none completed for this "
                        "long (default 10; a fraction is allowed)")
    p.add_argument("--threads", type=int, default=8, help="request threads (default 8)")
    p.add_argument("--log-file", metavar="FILE", help="log here instead of standard error")
    p.add_argument("--version", action="version", version=f"taskq-console {__version__}")
    args = p.parse_args(argv)
    host, sep, port = args.listen.rpartition(":")
    if not sep or not port.isdigit():
        p.error(f"--listen: expected HOST:PORT, not \"{args.listen}\"")
    if args.sample_seconds <= 0 or args.stuck_minutes <= 0:
        p.error("--sample-seconds and --stuck-minutes must be positive")
    args.host, args.port = host.strip("[]") or "127.0.0.1", int(port)
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(filename=args.log_file, level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    named = _database_args(args.dsn)
    if args.shards_from_proxy:
        named += databases_from_proxy(args.shards_from_proxy)
    if not named:
        named = [("db0", "")]                # libpq's environment: PGHOST, PGDATABASE, ...
    names = [n for n, _ in named]
    if len(set(names)) != len(names):
        sys.exit("taskq-console: two databases have the same name; name them with --dsn NAME=CONNSTR")
    basic = None
    if args.basic_auth_file:
        with open(args.basic_auth_file, encoding="utf-8") as f:
            user, sep, password = f.readline().rstrip("\n").partition(":")
        if not sep or not user or not password:
            sys.exit(f"taskq-console: {args.basic_auth_file}: expected one line USER:PASSWORD")
        basic = (user, password)
    app = create_app([Database(n, d) for n, d in named], basic_auth=basic,
                     refresh_seconds=args.refresh,
                     config={"TASKQ_SAMPLE_SECONDS": args.sample_seconds,
                             "TASKQ_STUCK_MINUTES": args.stuck_minutes})
    import waitress
    logging.getLogger("taskq.console").info(
        "taskq-console %s on http://%s:%d/ for %s", __version__, args.host, args.port,
        ", ".join(names))
    waitress.serve(app, host=args.host, port=args.port, threads=args.threads,
                   ident="taskq-console", clear_untrusted_proxy_headers=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
