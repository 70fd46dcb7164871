"""The Overview page: the queue per action, its rates, and what looks stuck.

Owns: /d/<db>/ and the counter samplers (sampler.py), one per database,
started with the app and sampling whether or not anyone looks.

Where each figure comes from:
- ready, delayed, blocked, in progress, oldest ready age, workers live and
  stale: the gauges of taskq.metrics(), as the background worker last
  counted them (taskq_gauges_age_seconds says how long ago);
- lease expired: the rows of taskq.tasks_in_progress whose lease_expired,
  read from taskq.tasks through the lease index (in-progress rows only), at
  most LEASE_EXPIRED_CAP of them counted;
- aborted: the counter taskq_tasks_aborted_total, since the server started;
- rates per minute over the last 1 h, 6 h and 24 h and the window before
  each: the sampler's ring of the counters' increases;
- the stuck flag: the sampler's history of taskq_tasks_completed_total and
  of the in-progress gauge of the action.

Locking: the samplers lock themselves; the page only reads them.
"""

from datetime import datetime, timezone

from flask import current_app, g, render_template, request

from . import charts, db_blueprint
from .sampler import COUNTERS, Sampler, minute_of

bp = db_blueprint("overview", __name__)

DEFAULT_SAMPLE_SECONDS = 15.0
DEFAULT_STUCK_MINUTES = 10.0
# Rows of taskq.tasks_in_progress with an expired lease counted at most.
LEASE_EXPIRED_CAP = 10000
# The windows of the rates: (key, minutes, label).
WINDOWS = [("1h", 60, "1 h"), ("6h", 360, "6 h"), ("24h", 1440, "24 h")]
RATES = list(COUNTERS)                 # enqueued, completed, failed, expired
GAUGES = {"taskq_tasks_ready": "ready", "taskq_tasks_delayed": "delayed",
          "taskq_tasks_blocked": "blocked", "taskq_tasks_in_progress": "in_progress",
          "taskq_oldest_ready_age_seconds": "oldest_ready_age",
          "taskq_tasks_aborted_total": "aborted"}
GLOBAL = ("taskq_workers_live", "taskq_workers_stale", "taskq_gauges_age_seconds")


def init_app(app):
    """Start a sampler per database (TASKQ_SAMPLER = False: none)."""
    app.config.setdefault("TASKQ_SAMPLE_SECONDS", DEFAULT_SAMPLE_SECONDS)
    app.config.setdefault("TASKQ_STUCK_MINUTES", DEFAULT_STUCK_MINUTES)
    samplers = {}
    for name, database in app.config["TASKQ_DATABASES"].items():
        samplers[name] = Sampler(database.read, app.config["TASKQ_SAMPLE_SECONDS"])
        if app.config.get("TASKQ_SAMPLER", True):
            samplers[name].start(name=f"taskq-console-sampler-{name}")
    app.extensions["taskq_samplers"] = samplers


def format_rate(per_minute):
    """A rate per minute as shown: 0, "<0.01", two decimals below 10, one below
    1000, else whole."""
    if per_minute == 0:
        return "0"
    if per_minute < 0.005:
        return "<0.01"
    if per_minute < 10:
        return f"{per_minute:.2f}"
    if per_minute < 1000:
        return f"{per_minute:.1f}"
    return f"{per_minute:,.0f}"


def format_age(seconds):
    """An age as "12 s", "3 min", "2 h 5 min", "3 d 4 h"."""
    if seconds is None:
        return ""
    s = int(seconds)
    if s < 120:
        return f"{s} s" if seconds >= 1 or seconds == 0 else f"{seconds:.1f} s"
    if s < 3600:
        return f"{s // 60} min"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def utc(t, fmt="%Y-%m-%d %H:%M:%S"):
    return datetime.fromtimestamp(t, timezone.utc).strftime(fmt)


def _since_label(t, now):
    """"since 17:42:10", with the date when not today (UTC)."""
    if utc(t, "%Y-%m-%d") == utc(now, "%Y-%m-%d"):
        return "since " + utc(t, "%H:%M:%S")
    return "since " + utc(t, "%Y-%m-%d %H:%M")


def _coverage(w, now):
    if not w["seen"]:
        return "not seen"
    parts = []
    if w["covered_from"] is not None:
        parts.append(_since_label(w["covered_from"], now))
    if w["gaps"]:
        parts.append("gap " + ", ".join(f"{utc(a, '%H:%M')}–{utc(b, '%H:%M')}" for a, b in w["gaps"]))
    return "; ".join(parts)


@bp.route("/")
def page():
    sampler = current_app.extensions["taskq_samplers"][g.db.name]
    stuck_seconds = float(current_app.config["TASKQ_STUCK_MINUTES"]) * 60
    rows = g.db.read(
        "SELECT m.name, COALESCE(m.labels->>'action', '') AS action, m.value"
        " FROM taskq.metrics() AS m WHERE m.name = ANY(%s)",
        (list(GAUGES) + list(GLOBAL),))
    # the rows of taskq.tasks_in_progress WHERE lease_expired, read from the
    # table: the view sorts all of them before a LIMIT, the lease index does not
    expired_rows = g.db.read(
        "SELECT action, count(*)::int AS n FROM (SELECT t.action FROM taskq.tasks AS t"
        " WHERE t.status_code = 'in_progress' AND t.action_deadline <= now() LIMIT %s) AS s"
        " GROUP BY action", (LEASE_EXPIRED_CAP + 1,))
    server = g.db.read_one("SELECT pg_catalog.pg_postmaster_start_time() AS started")
    now = sampler.clock()

    glob = {}
    actions = {}
    for r in rows:
        if r["name"] in GLOBAL:
            glob[r["name"]] = r["value"]
        else:
            a = actions.setdefault(r["action"], {})
            a[GAUGES[r["name"]]] = r["value"]
    expired_capped = sum(r["n"] for r in expired_rows) > LEASE_EXPIRED_CAP
    for r in expired_rows:
        actions.setdefault(r["action"], {})["lease_expired"] = r["n"]

    windows = []
    for key, minutes, label in WINDOWS:
        cur = sampler.window(minutes, 0, now)
        prev = sampler.window(minutes, 1, now)
        windows.append({"key": key, "minutes": minutes, "label": label, "cur": cur, "prev": prev,
                        "cur_note": _coverage(cur, now), "prev_note": _coverage(prev, now)})
        for w in (cur, prev):
            for (_, action) in w["counts"]:
                actions.setdefault(action, {})

    end_minute = minute_of(now)
    table = []
    for action, a in actions.items():
        row = {"action": action}
        for k in ("ready", "delayed", "blocked", "in_progress", "lease_expired", "aborted"):
            row[k] = int(a.get(k, 0))
        row["oldest_ready_age"] = a.get("oldest_ready_age", 0)
        row["rates"] = {}
        busy = False
        for w in windows:
            for c in RATES:
                n = w["cur"]["counts"].get((c, action), 0)
                p = w["prev"]["counts"].get((c, action), 0)
                busy = busy or n > 0
                row["rates"][(w["key"], c)] = {
                    "count": n, "value": n / w["minutes"], "text": format_rate(n / w["minutes"]),
                    "prev_count": p, "prev_value": p / w["minutes"],
                    "prev_text": format_rate(p / w["minutes"]) if w["prev"]["seen"] else "—"}
        row["stuck"] = sampler.stuck(action, row["in_progress"], stuck_seconds, now)
        last = sampler.last_completed(action)
        row["last_completed"] = format_age(now - last) + " ago" if last else None
        row["idle"] = not busy and not any(row[k] for k in (
            "ready", "delayed", "blocked", "in_progress", "lease_expired", "aborted"))
        done, first_seen = sampler.per_minute("completed", action, 60, now)
        failed, _ = sampler.per_minute("failed", action, 60, now)
        row["chart"] = charts.minute_bars(done, failed, first_seen, end_minute)
        table.append(row)
    table.sort(key=lambda r: (not r["stuck"], r["idle"],
                              -(r["in_progress"] + r["ready"] + r["blocked"]), r["action"]))
    show_all = request.args.get("all") == "1"
    idle = sum(1 for r in table if r["idle"])
    if not show_all:
        table = [r for r in table if not r["idle"]]

    age = glob.get("taskq_gauges_age_seconds")
    return render_template(
        "overview.html", rows=table, windows=windows, rates=RATES, idle=idle, show_all=show_all,
        gauges_age=age, gauges_age_text=format_age(age) if age is not None else None,
        workers_live=int(glob.get("taskq_workers_live", 0)),
        workers_stale=int(glob.get("taskq_workers_stale", 0)),
        expired_capped=expired_capped, expired_cap=LEASE_EXPIRED_CAP,
        stuck_minutes=current_app.config["TASKQ_STUCK_MINUTES"],
        stuck_text=format_age(stuck_seconds),
        sampler_since=utc(sampler.since) if sampler.since else None,
        sampler_interval=sampler.interval, sampler_error=sampler.last_error,
        server_started=server["started"], format_age=format_age)
