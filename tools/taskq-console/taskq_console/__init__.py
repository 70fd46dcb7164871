"""taskq-console: a web console for the taskq PostgreSQL extension.

Owns: the Flask application (create_app): the databases it shows, the
pages (one blueprint per page, each under /d/<database>/), /healthz, the
error pages.  Pages read the views and functions of taskq's SQL contract
and, where a page browses, the indexed columns of taskq.tasks and
taskq.runs a monitor may read, a page at a time by keyset; writes go
through the contract's functions in one transaction (security.py).

Locking: none; the app is built once and read by waitress's threads.
"""

import datetime

from flask import Blueprint, Flask, abort, current_app, g, redirect, render_template, url_for
from werkzeug.exceptions import HTTPException

from . import security

__version__ = "0.6.0"


def db_blueprint(name, import_name):
    """A page's blueprint: its routes live under /d/<db>/ and find g.db."""
    bp = Blueprint(name, import_name, url_prefix="/d/<db>")

    @bp.url_value_preprocessor
    def _pick(endpoint, values):
        name = values.pop("db")
        db = current_app.config["TASKQ_DATABASES"].get(name)
        if db is None:
            abort(404, description=f"no database \"{name}\" in this console")
        g.db = db

    @bp.url_defaults
    def _keep(endpoint, values):
        if "db" not in values and "db" in g:
            values["db"] = g.db.name

    return bp


def create_app(databases, *, basic_auth=None, secret_key=None, refresh_seconds=5, config=None):
    """The console over databases, an ordered list of db.Database; config: more
    app settings (TASKQ_SAMPLE_SECONDS, TASKQ_STUCK_MINUTES, ...)."""
    import os

    app = Flask(__name__)
    app.config.update(
        TASKQ_DATABASES={d.name: d for d in databases},
        TASKQ_BASIC_AUTH=basic_auth,
        TASKQ_REFRESH_SECONDS=refresh_seconds,
        SECRET_KEY=secret_key or os.urandom(32),
        WTF_CSRF_TIME_LIMIT=None,          # the token lives as long as the session cookie
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Strict",
    )
    app.config.update(config or {})
    app.jinja_env.autoescape = True        # also for templates not named .html
    security.init_app(app)

    from . import overview, workers, tasks, runs, repair, flow
    for module in (overview, workers, tasks, runs, repair, flow):
        app.register_blueprint(module.bp)
        if hasattr(module, "init_app"):
            module.init_app(app)

    @app.context_processor
    def _everywhere():
        db = g.get("db")
        return {"databases": list(app.config["TASKQ_DATABASES"].values()), "db": db,
                "utc": datetime.timezone.utc,
                "admin": db.is_admin() if db is not None else False,
                "refresh_seconds": app.config["TASKQ_REFRESH_SECONDS"]}

    @app.route("/")
    def index():
        first = next(iter(app.config["TASKQ_DATABASES"]))
        return redirect(url_for("overview.page", db=first))

    @app.route("/healthz")
    def healthz():
        """200 if every database answers, 503 naming those that do not."""
        down = []
        for db in app.config["TASKQ_DATABASES"].values():
            try:
                db.read_one("SELECT 1")
            except Exception as e:           # noqa: BLE001 — a probe reports, it does not fail
                down.append(f"{db.name}: {str(e).strip().splitlines()[0] if str(e) else type(e).__name__}")
        if down:
            return "unavailable\n" + "\n".join(down) + "\n", 503, {"Content-Type": "text/plain"}
        return "ok\n", 200, {"Content-Type": "text/plain"}

    @app.errorhandler(HTTPException)
    def _http_error(e):
        return render_template("error.html", code=e.code, name=e.name,
                               description=e.description), e.code

    import psycopg

    @app.errorhandler(psycopg.errors.QueryCanceled)
    def _too_slow(e):
        # the statement timeout every page runs under (db.py): say what it
        # means rather than pass on "canceling statement due to ..."
        from .db import STATEMENT_TIMEOUT_MS
        return render_template(
            "error.html", code=503, name="too slow",
            description=f"The database did not answer within {STATEMENT_TIMEOUT_MS / 1000:g} s: a lock"
                        " held by another session, or a filter that no index serves on a large"
                        " table. Try again, or narrow the filter (an action, a time range).",
            sqlstate=getattr(getattr(e, "diag", None), "sqlstate", None)), 503

    @app.errorhandler(psycopg.Error)
    def _db_error(e):
        diag = getattr(e, "diag", None)
        return render_template("error.html", code=502, name="database error",
                               description=str(e).strip(),
                               sqlstate=getattr(diag, "sqlstate", None)), 502

    return app
