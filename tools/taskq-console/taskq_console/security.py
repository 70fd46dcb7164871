"""What keeps the console safe to leave running.

Owns: the response headers every page carries (a Content-Security-Policy
that allows the console's own static files and nothing inline, no framing,
no MIME sniffing, no referrer), optional HTTP Basic authentication (one
user and password from the command line's file, compared in constant
time), CSRF protection of every POST (Flask-WTF's), the rule that a write
needs a role that is a member of taskq_admin (asked of PostgreSQL for the
database written), and the audit log of every write.

Locking: none; state is per request (flask.g) or read-only after start.
"""

import functools
import hmac
import logging

from flask import abort, current_app, g, request, Response
from flask_wtf.csrf import CSRFProtect

csrf = CSRFProtect()
audit = logging.getLogger("taskq.console.audit")

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


def init_app(app):
    csrf.init_app(app)
    app.after_request(_headers)
    app.before_request(_basic_auth)


def _headers(resp):
    resp.headers["Content-Security-Policy"] = CSP
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["X-Frame-Options"] = "DENY"
    resp.headers["Referrer-Policy"] = "no-referrer"
    resp.headers.setdefault("Cache-Control", "no-store")
    return resp


def _basic_auth():
    """With --basic-auth, every page but /healthz asks for the user and password."""
    creds = current_app.config.get("TASKQ_BASIC_AUTH")
    if not creds or request.endpoint in ("healthz", "static"):
        return None
    auth = request.authorization
    user, password = creds
    if (auth is not None and auth.type == "basic"
            and hmac.compare_digest((auth.username or "").encode(), user.encode())
            and hmac.compare_digest((auth.password or "").encode(), password.encode())):
        return None
    return Response("authentication required\n", 401,
                    {"WWW-Authenticate": 'Basic realm="taskq-console", charset="UTF-8"'})


def admin_required(view):
    """A write: refused (403) unless the role on g.db is a member of taskq_admin."""
    @functools.wraps(view)
    def wrapped(*args, **kwargs):
        if not g.db.is_admin():
            abort(403, description="this console connects as a role that is not a member of "
                                   "taskq_admin (or to a standby): it is read-only")
        return view(*args, **kwargs)
    return wrapped


def log_write(what, **details):
    """One line per write action, with who asked (the HTTP user and address)."""
    user = request.authorization.username if request.authorization else "-"
    audit.info("%s on %s by %s from %s: %s", what, g.db.name, user, request.remote_addr,
               ", ".join(f"{k}={v!r}" for k, v in details.items()))
