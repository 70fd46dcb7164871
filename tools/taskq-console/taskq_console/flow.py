"""The Limits and schedules page: taskq.limits and taskq.schedules, read-only.

Owns: /d/<db>/flow.  Reads the view taskq.limits (per action with a limit:
the concurrency limits, in all and per concurrency key, the tasks holding a
slot now, the rate limit and the claims in its current window) and the view
taskq.schedules (cron expression, time zone, catch-up, task, last and next
tick).  Setting them is for SQL: the page shows, per row, the statement
that makes it as it is, and the ones that remove it.  A schedule's task
(which carries the body of the tasks it inserts) is shown whole only to a
role that may read task bodies; others see its action.
"""

from flask import g, render_template

from . import db_blueprint
from .overview import format_age

bp = db_blueprint("flow", __name__)


def sql_literal(value):
    """A SQL literal of a value (standard_conforming_strings), for the SQL shown."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _interval(td):
    """An interval as PostgreSQL reads it back: '90 seconds', '1 day 02:00:00'."""
    s = td.total_seconds()
    if s == int(s):
        s = int(s)
    return f"{s} seconds"


def _pretty_interval(td):
    s = td.total_seconds()
    for unit, n in (("day", 86400), ("h", 3600), ("min", 60)):
        if s >= n and s % n == 0:
            k = int(s // n)
            return f"{k} {unit}{'s' if unit == 'day' and k != 1 else ''}"
    return f"{s:g} s"


@bp.route("/flow")
def page():
    limits = g.db.read(
        "SELECT action, max_running, max_running_per_key, rate_max, rate_per, by_key,"
        " running, window_claims FROM taskq.limits ORDER BY action")
    for r in limits:
        stmts = []
        if r["max_running"] is not None or r["max_running_per_key"] is not None:
            stmts.append(f"SELECT taskq.set_concurrency_limit({sql_literal(r['action'])}, "
                         f"{sql_literal(r['max_running'])}, {sql_literal(r['max_running_per_key'])});")
        if r["rate_max"] is not None:
            stmts.append(f"SELECT taskq.set_rate_limit({sql_literal(r['action'])}, "
                         f"{sql_literal(r['rate_max'])}, {sql_literal(_interval(r['rate_per']))}, "
                         f"{sql_literal(bool(r['by_key']))});")
        r["sql"] = stmts
        r["clear_sql"] = f"SELECT taskq.clear_limits({sql_literal(r['action'])});"
        r["rate_per_text"] = _pretty_interval(r["rate_per"]) if r["rate_per"] is not None else None
        r["full"] = r["max_running"] is not None and r["running"] >= r["max_running"]
        r["rate_full"] = r["rate_max"] is not None and not r["by_key"] \
            and (r["window_claims"] or 0) >= r["rate_max"]
    schedules = g.db.read(
        "SELECT name, cron, time_zone, catch_up, task->>'action' AS action, last_tick, next_tick,"
        " now() - last_tick AS last_ago, next_tick - now() AS next_in,"
        " (next_tick AT TIME ZONE time_zone) AS next_local"
        " FROM taskq.schedules ORDER BY name")
    tasks = {}
    if schedules and g.db.role()["reads_data"]:
        tasks = {r["name"]: r["task"] for r in g.db.read(
            "SELECT name, task::text AS task FROM taskq.schedules ORDER BY name")}
    for s in schedules:
        s["sql"] = (f"SELECT taskq.schedule({sql_literal(s['name'])}, {sql_literal(s['cron'])}, "
                    f"{sql_literal(tasks[s['name']]) if s['name'] in tasks else '<task>'}, "
                    f"{sql_literal(s['time_zone'])}, {sql_literal(s['catch_up'])});")
        s["unschedule_sql"] = f"SELECT taskq.unschedule({sql_literal(s['name'])});"
    return render_template("flow.html", limits=limits, schedules=schedules, tasks=tasks,
                           format_age=format_age)
