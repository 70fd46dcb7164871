"""The Dead letters page and the console's write actions.

Owns: /d/<db>/dead (taskq.dead_letters, filtered by action, workflow, a
status substring and a finished_at range, 50 a page by keyset on
(finished_at DESC, id) over tasks_finished_idx); redriving one dead
letter or every one a filter matches (taskq.redrive_tasks) after a
confirmation page that states how many tasks it touches; cancelling an
unfinished task (taskq.cancel_tasks, for the task's page: a dead letter is
finished, and cancel_tasks skips finished tasks); cancelling and
redriving a run (taskq.cancel_run, taskq.redrive_run, for the runs'
pages).  And the rule that a forged POST (no CSRF token, or another
session's) is answered 403.

Every write is a POST that carries the CSRF token, needs a role in
taskq_admin (security.admin_required), runs in one transaction through
taskq's functions (g.db.write) and is written to the audit log
(security.log_write).  A bulk redrive re-selects the matching ids in the
same statement that redrives them and refuses (409, nothing changed)
when they are not exactly the ones the confirmation page counted (their
number and a digest of their ids).  An error the database raises for a
write (a run that is not failed, a task that is a step of a run) is
shown as a flash message with the database's text and SQLSTATE.

Locking: none of its own; taskq's functions take the row and workflow
locks.
"""

import datetime
import urllib.parse

import psycopg
from flask import abort, flash, g, redirect, render_template, request, url_for
from flask_wtf.csrf import CSRFError

from . import db_blueprint
from .security import admin_required, log_write

bp = db_blueprint("repair", __name__)

PAGE = 50
# A filter no index serves (an action, a status text) looks at this many of
# the newest finished tasks at a time, and offers to go on from there.
WINDOW = 20000
# A bulk action touches at most this many tasks; above it, narrow the filter.
BULK_CAP = 10000

# The run a task is a step of, if any: its id up to the last '/' names a run
# (taskq_run_of_task in src/workflow/run.c).  redrive_tasks and cancel_tasks
# refuse steps (55000): a run is redriven or cancelled as a whole.
_RUN_OF = "substring({id} from '^(.+)/[^/]*$')"

# The rows of the view taskq.dead_letters, read from taskq.tasks with the
# view's own condition (the columns a monitor may read): the view's ORDER BY
# keeps the planner from pushing a page's LIMIT into it, so that it sorts
# every aborted task (a seq scan of 1,000,000 tasks: 0.8 s) where the
# table gives an index scan backward on tasks_finished_idx (its WHERE,
# status_code >= 'completed', is implied) and an incremental sort on id
# (0.2 ms).
DEAD = ("taskq.tasks AS d WHERE d.status_code OPERATOR(pg_catalog.=) 'aborted'"
        " AND d.status IS DISTINCT FROM 'skipped'")

_FILTER_KEYS = ("action", "workflow", "status", "since", "until")


def init_app(app):
    @app.errorhandler(CSRFError)
    def _csrf_refused(e):
        # Flask-WTF answers 400; a forged or stale POST is a refusal, not a bad request.
        return render_template("error.html", code=403, name="Forbidden",
                               description=f"refused: {e.description} Reload the page and try again."), 403


# ----------------------------------------------------------------- filters

def _parse_time(key, value):
    """A UTC time from the form: YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS] (or with T)."""
    v = value.strip().replace("T", " ")
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.datetime.strptime(v, fmt).replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            pass
    abort(400, description=f"{key}: expected a UTC time YYYY-MM-DD[ HH:MM[:SS]], not \"{value}\"")


def _filters(source):
    """The filter of a request (its query string or its form), checked."""
    f = {}
    for key in _FILTER_KEYS:
        value = (source.get(key) or "").strip()
        if len(value) > 500:
            abort(400, description=f"{key}: longer than 500 characters")
        if value:
            f[key] = value
    for key in ("since", "until"):
        if key in f:
            f[key + "_t"] = _parse_time(key, f[key])
    return f


def _where(f, split=False):
    """SQL conditions and parameters over the dead letters (DEAD) for a
    filter; with split, (conditions on finished_at, the others, params)."""
    rng, other, params = [], [], {}
    if "action" in f:
        other.append("d.action = %(action)s")
        params["action"] = f["action"]
    if "workflow" in f:
        other.append("d.workflow = %(workflow)s")
        params["workflow"] = f["workflow"]
    if "status" in f:
        other.append("strpos(lower(d.status), lower(%(status)s)) > 0")
        params["status"] = f["status"]
    if "since" in f:
        rng.append("d.finished_at >= %(since)s")
        params["since"] = f["since_t"]
    if "until" in f:
        rng.append("d.finished_at < %(until)s")
        params["until"] = f["until_t"]
    if split:
        return rng, other, params
    return rng + other, params


def _in_words(f):
    """The filter as a person reads it."""
    parts = []
    if "action" in f:
        parts.append(f"action is \"{f['action']}\"")
    if "workflow" in f:
        parts.append(f"workflow is \"{f['workflow']}\"")
    if "status" in f:
        parts.append(f"status contains \"{f['status']}\"")
    if "since" in f:
        parts.append(f"finished at or after {f['since_t']:%Y-%m-%d %H:%M:%S} UTC")
    if "until" in f:
        parts.append(f"finished before {f['until_t']:%Y-%m-%d %H:%M:%S} UTC")
    return " and ".join(parts) if parts else "every dead letter (no filter)"


def _query_args(f):
    return {k: f[k] for k in _FILTER_KEYS if k in f}


# ----------------------------------------------------------------- the page

@bp.route("/dead")
def page():
    f = _filters(request.args)
    rng, other, params = _where(f, split=True)
    after_at, after_id = request.args.get("after_at"), request.args.get("after_id")
    if after_at is not None or after_id is not None:
        try:
            at = datetime.datetime.fromisoformat(after_at or "")
        except ValueError:
            abort(400, description="after_at: not a time; follow the page's Next link")
        if at.tzinfo is None or after_id is None:
            abort(400, description="after_at, after_id: an incomplete cursor; follow the page's Next link")
        rng.append("d.finished_at <= %(after_at)s"
                   " AND (d.finished_at < %(after_at)s OR d.id > %(after_id)s)")
        params.update(after_at=at, after_id=after_id)
    params.update(limit=PAGE + 1, window=WINDOW)
    windowed = ("action" in f or "status" in f) and "workflow" not in f
    if not windowed:
        # an index finds them: tasks_finished_idx backward (its range), or
        # tasks_workflow_idx (workflow, status_code)
        rows = g.db.read(
            "SELECT d.*, now() - d.finished_at AS age, r.id AS run, true AS hit, 0 AS n"
            " FROM (SELECT id, action, status, num_tries, max_tries, workflow, cancelled, finished_at"
            "       FROM " + DEAD + "".join(" AND " + c for c in rng + other) +
            "       ORDER BY d.finished_at DESC, d.id LIMIT %(limit)s) AS d"
            " LEFT JOIN taskq.runs AS r ON r.id = " + _RUN_OF.format(id="d.id") +
            " ORDER BY d.finished_at DESC, d.id", params)
    else:
        # no index finds an action's or a status's dead letters: look at the
        # newest WINDOW finished tasks (tasks_finished_idx backward), and
        # say where that stopped (the row numbered WINDOW) to go on from
        rows = g.db.read(
            "SELECT d.*, now() - d.finished_at AS age, r.id AS run"
            " FROM (SELECT d.*, (d.status_code = 'aborted' AND d.status IS DISTINCT FROM 'skipped'"
            + "".join(" AND " + c for c in other) + ") AS hit"
            "       FROM (SELECT i.*, row_number() OVER (ORDER BY i.finished_at DESC, i.id) AS n"
            "             FROM (SELECT id, action, status, status_code, num_tries, max_tries,"
            "                          workflow, cancelled, finished_at"
            "                   FROM taskq.tasks AS d WHERE d.status_code >= 'completed'"
            + "".join(" AND " + c for c in rng) +
            "                   ORDER BY d.finished_at DESC, d.id LIMIT %(window)s) AS i) AS d"
            "       WHERE (d.status_code = 'aborted' AND d.status IS DISTINCT FROM 'skipped'"
            + "".join(" AND " + c for c in other) + ") OR d.n = %(window)s"
            "       ORDER BY d.finished_at DESC, d.id LIMIT %(limit)s + 1) AS d"
            " LEFT JOIN taskq.runs AS r ON r.id = " + _RUN_OF.format(id="d.id") +
            " ORDER BY d.finished_at DESC, d.id", params)
    edge = next((r for r in rows if r["n"] == WINDOW), None)
    rows = [r for r in rows if r["hit"]]
    next_url = searched_to = None
    if len(rows) > PAGE:
        rows = rows[:PAGE]
        last = rows[-1]
    elif edge is not None:
        last = searched_to = edge
    else:
        last = None
    if last is not None:
        next_url = url_for("repair.page", **_query_args(f),
                           after_at=last["finished_at"].isoformat(), after_id=last["id"])
    return render_template("repair.html", rows=rows, f=f, words=_in_words(f),
                           filter_args=_query_args(f), next_url=next_url,
                           searched_to=searched_to, window=WINDOW,
                           paged=after_id is not None, utc=datetime.timezone.utc)


# ----------------------------------------------------------------- bulk redrive

def _matching_sql(f, steps=False):
    """The ids a bulk redrive of filter f touches, at most BULK_CAP + 1 of
    them, as the CTE "m", and its parameters.  The steps of runs are left
    out (redrive_tasks refuses them: a run is redriven whole); with steps,
    those steps instead."""
    conds, params = _where(f)
    conds.append(("" if steps else "NOT ") + "EXISTS (SELECT 1 FROM taskq.runs AS r WHERE r.id = "
                 + _RUN_OF.format(id="d.id") + ")")
    sql = ("WITH m AS MATERIALIZED (SELECT d.id FROM " + DEAD + "".join(" AND " + c for c in conds)
           + " LIMIT %(cap)s)")
    return sql, dict(params, cap=BULK_CAP + 1)


_DIGEST = "coalesce(md5(string_agg(id, E'\\n' ORDER BY id)), '')"


@bp.route("/dead/bulk", methods=["GET"])
@admin_required
def bulk_preview():
    """The confirmation page of a bulk redrive: how many tasks, which filter."""
    f = _filters(request.args)
    sql, params = _matching_sql(f)
    row = g.db.read_one(sql + f" SELECT count(*) AS n, {_DIGEST} AS digest FROM m", params)
    sql, params = _matching_sql(f, steps=True)
    steps = g.db.read_one(sql + " SELECT count(*) AS n FROM m", params)["n"]
    return render_template("repair_confirm.html", f=f, words=_in_words(f),
                           filter_args=_query_args(f), count=row["n"], digest=row["digest"],
                           steps=steps, cap=BULK_CAP)


@bp.route("/dead/bulk", methods=["POST"])
@admin_required
def bulk_redrive():
    """Redrive every dead letter the filter matches, if they are exactly the
    ones the confirmation counted; one statement, one transaction."""
    f = _filters(request.form)
    try:
        expected = int(request.form.get("expected", ""))
    except ValueError:
        abort(400, description="expected: the count from the confirmation page is missing")
    digest = request.form.get("digest", "")
    if expected < 1 or expected > BULK_CAP:
        abort(400, description=f"expected: must be 1 to {BULK_CAP}")
    sql, params = _matching_sql(f)
    params.update(expected=expected, digest=digest)
    try:
        [[row]] = g.db.write([(
            sql + f", s AS (SELECT count(*) AS n, {_DIGEST} AS digest FROM m)"
            " SELECT s.n AS matched,"
            "  CASE WHEN s.n = %(expected)s AND s.digest = %(digest)s"
            "       THEN taskq.redrive_tasks(ARRAY(SELECT id FROM m ORDER BY id)) END AS redriven"
            " FROM s", params)])
    except psycopg.Error as e:
        if getattr(e.diag, "sqlstate", None) is None:
            raise
        log_write("redrive refused", filter=_in_words(f), expected=expected,
                  error=_db_message(e))
        flash(f"nothing redriven: {_db_message(e)}", "error")
        return redirect(url_for("repair.page", **_query_args(f)))
    back = url_for("repair.page", **_query_args(f))
    if row["redriven"] is None:
        log_write("redrive refused", filter=_in_words(f), expected=expected,
                  matched=row["matched"])
        matched = (f"more than {BULK_CAP}" if row["matched"] > BULK_CAP else str(row["matched"]))
        return render_template(
            "repair_conflict.html", words=_in_words(f), matched=matched, expected=expected,
            same_count=row["matched"] == expected, filter_args=_query_args(f), back=back), 409
    log_write("redrive", filter=_in_words(f), count=row["redriven"])
    flash(f"redriven {row['redriven']} task{'' if row['redriven'] == 1 else 's'}", "ok")
    return redirect(back)


# ----------------------------------------------------------------- one task

def _db_message(e):
    d = e.diag
    msg = d.message_primary or str(e).strip().splitlines()[0]
    return f"{msg} (SQLSTATE {d.sqlstate})"


def _back(default):
    """Where a write returns to: the form's "next" if it is a path of this
    console, else default."""
    nxt = request.form.get("next", "")
    parts = urllib.parse.urlsplit(nxt)
    if nxt.startswith("/") and not nxt.startswith("//") and "\\" not in nxt \
            and not parts.scheme and not parts.netloc:
        return nxt
    return default


def _one(what, sql, id, done, default_back):
    """Run one write of one id; flash the outcome; redirect back."""
    try:
        [[row]] = g.db.write([(sql, (id,))])
    except psycopg.Error as e:
        if getattr(e.diag, "sqlstate", None) is None:
            raise
        log_write(what + " refused", id=id, error=_db_message(e))
        flash(f"{what} {id}: {_db_message(e)}", "error")
        return redirect(_back(default_back))
    value = row["value"]
    log_write(what, id=id, result=value)
    flash(done(value), "ok")
    return redirect(_back(default_back))


@bp.route("/dead/redrive", methods=["POST"])
@admin_required
def redrive_task():
    """Redrive one aborted task (form field id)."""
    id = request.form.get("id", "")
    if not id:
        abort(400, description="id: which task to redrive")
    return _one("redrive task", "SELECT taskq.redrive_tasks(ARRAY[%s]) AS value", id,
                lambda n: f"redriven task {id}" if n else f"task {id} was not redriven",
                url_for("repair.page"))


@bp.route("/cancel-task", methods=["POST"])
@admin_required
def cancel_task():
    """Cancel one unfinished task (form field id): for the task's page."""
    id = request.form.get("id", "")
    if not id:
        abort(400, description="id: which task to cancel")
    return _one("cancel task", "SELECT taskq.cancel_tasks(ARRAY[%s]) AS value", id,
                lambda n: f"cancelled task {id}" if n else
                f"task {id} was not cancelled: it is finished already",
                url_for("tasks.detail", id=id))


@bp.route("/runs/<path:id>/cancel", methods=["POST"])
@admin_required
def cancel_run(id):
    return _one("cancel run", "SELECT taskq.cancel_run(%s) AS value", id,
                lambda status: f"run {id}: {status}", url_for("runs.page"))


@bp.route("/runs/<path:id>/redrive", methods=["POST"])
@admin_required
def redrive_run(id):
    return _one("redrive run", "SELECT taskq.redrive_run(%s) AS value", id,
                lambda v: f"run {id} redriven: {v}", url_for("runs.page"))
