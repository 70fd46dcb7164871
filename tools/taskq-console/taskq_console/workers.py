"""The Workers page: taskq.workers, and the tasks each worker's actor holds.

Owns: /d/<db>/workers.  Reads the view taskq.workers (the registry the
workers heartbeat into) and taskq.tasks_in_progress for the tasks held;
a stale worker (not seen for three heartbeat intervals) is marked.
"""

from flask import g, render_template

from . import db_blueprint

bp = db_blueprint("workers", __name__)

# How many held tasks are listed per worker (the count is always whole).
HELD_SHOWN = 20


@bp.route("/workers")
def page():
    workers = g.db.read(
        "SELECT worker_id, actor, host, pid, version, actions, concurrency, started_at,"
        " last_seen, now() - last_seen AS last_seen_ago, in_progress, stale"
        " FROM taskq.workers ORDER BY stale, worker_id")
    held = {}
    actors = sorted({w["actor"] for w in workers if w["actor"]})
    if actors:
        for r in g.db.read(
                "SELECT actor_id, id, action, action_deadline, lease_expired"
                " FROM (SELECT t.*, row_number() OVER (PARTITION BY actor_id"
                "        ORDER BY action_deadline NULLS LAST, id) AS n"
                "       FROM taskq.tasks_in_progress AS t WHERE actor_id = ANY(%s)) AS x"
                " WHERE n <= %s ORDER BY actor_id, n", (actors, HELD_SHOWN)):
            held.setdefault(r["actor_id"], []).append(r)
    return render_template("workers.html", workers=workers, held=held, held_shown=HELD_SHOWN)

