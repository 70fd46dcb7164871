"""The Runs page: runs of state machines and sagas, one run, and the definitions.

Owns: /d/<db>/runs (the list, by kind, definition and status, in id order
a page of 50 by keyset), /d/<db>/runs/<id> (a run: its row, parent and
children, steps, timers and its live graph), /d/<db>/run-graph/<id> (the
graph alone, which the run's page refetches every 2 s while the run is
unfinished), and /d/<db>/definitions (each definition and version: its
graph and taskq.state_stats).

Indexes: a status of an unfinished run (running, waiting, undoing) reads
runs_unfinished_idx (definition, version) WHERE finished_at IS NULL; a
finished one runs_finished_idx or runs_pkey in id order; children
runs_parent_idx; a machine's step tasks "<run>/<n>" tasks_pkey (with
workflow = the run's id).  A run's context and inputs are read in a query
of their own, only when the role may read them.
"""

import datetime

from flask import abort, g, make_response, render_template, request

from . import db_blueprint, graphs
from .tasks import PAGE, keyset_page, keyset_where, pager_args

bp = db_blueprint("runs", __name__)

UNFINISHED = ("running", "waiting", "undoing")
FINISHED = ("succeeded", "failed", "dismal", "cancelled", "merged")
KINDS = ("machine", "saga")
# Children, steps and timers listed on a run's page.
SHOWN = 200
# How long after a run finished its graph is still sent to pages that poll
# it (with X-Live-Final: the page stops polling); later: 204.
FINAL_GRACE = datetime.timedelta(seconds=60)

RUN_COLUMNS = ("r.id, r.kind, r.definition, r.version, r.status, r.state, r.parent, r.error,"
               " r.created_at, r.finished_at, r.deadline")



def list_query(filters, after, before, limit):
    where, params = [], {"limit": limit}
    status = filters["status"]
    if status == "unfinished":
        where.append("r.finished_at IS NULL")
    elif status == "finished":
        where.append("r.finished_at IS NOT NULL")
    elif status in UNFINISHED:
        where.append("r.finished_at IS NULL AND r.status = %(status)s")
    elif status in FINISHED:
        where.append("r.finished_at IS NOT NULL AND r.status = %(status)s")
    params["status"] = status
    if filters["definition"]:
        where.append("r.definition = %(definition)s")
        params["definition"] = filters["definition"]
    if filters["kind"]:
        where.append("r.kind = %(kind)s")
        params["kind"] = filters["kind"]
    keyset_where(where, params, "r.id", after, before)
    return (f"SELECT {RUN_COLUMNS}, now() AS now FROM taskq.runs AS r"
            + (" WHERE " + " AND ".join(where) if where else "")
            + " ORDER BY r.id" + (" DESC" if before is not None else "") + " LIMIT %(limit)s"), params


@bp.route("/runs")
def page():
    args = request.args
    filters = {k: args.get(k, "").strip() for k in ("kind", "definition", "status")}
    if filters["kind"] not in ("",) + KINDS:
        abort(400, description=f"unknown kind \"{filters['kind']}\" in parameter \"kind\" (machine or saga)")
    if filters["status"] not in ("", "unfinished", "finished") + UNFINISHED + FINISHED:
        abort(400, description=f"unknown status \"{filters['status']}\" in parameter \"status\"")
    rows, nxt, prev = keyset_page(
        lambda after, before, limit: g.db.read(*list_query(filters, after, before, limit)))
    return render_template("runs.html", rows=rows, filters=filters, kinds=KINDS,
                           statuses=("unfinished",) + UNFINISHED + ("finished",) + FINISHED,
                           page_size=PAGE,
                           next_args=nxt and pager_args(args, after=nxt),
                           prev_args=prev and pager_args(args, before=prev))


def _run_graph(run_id):
    return graphs.draw(g.db.name, "run", run_id, "SELECT taskq.run_graph(%s, 'dot')", (run_id,))


@bp.route("/runs/<path:id>")
def detail(id):
    run = g.db.read_one(f"SELECT {RUN_COLUMNS}, now() AS now FROM taskq.runs AS r WHERE r.id = %s", (id,))
    if run is None:
        abort(404, description=f"no run \"{id}\"")
    data = g.db.read_one_data("SELECT jsonb_pretty(context) AS context, jsonb_pretty(inputs) AS inputs"
                              " FROM taskq.runs WHERE id = %s", (id,))
    children = g.db.read(f"SELECT {RUN_COLUMNS} FROM taskq.runs AS r WHERE r.parent = %s"
                         " ORDER BY r.id LIMIT %s", (id, SHOWN + 1))
    saga_steps = []
    if run["kind"] == "saga":
        saga_steps = g.db.read(
            "SELECT s.step, s.do_task, s.do_state, s.undo_task, s.undo_state"
            " FROM taskq.saga_steps AS s WHERE s.run = %s"
            " ORDER BY length(s.do_task), s.do_task LIMIT %s", (id, SHOWN))
    # the run's step tasks "<id>/<n>" (workflow = the run), in the order they were made
    steps = g.db.read(
        "SELECT t.id, t.action, t.status_code::text AS status_code, t.status, t.num_tries,"
        " t.max_tries, t.claimed_at, t.finished_at, t.created_at FROM taskq.tasks AS t"
        " WHERE t.workflow = %s AND t.id > %s AND t.id < %s ORDER BY t.seq LIMIT %s",
        (id, id + "/", id + "0", SHOWN + 1))
    timers = g.db.read("SELECT kind, state, due_at FROM taskq.run_timers WHERE run_id = %s"
                       " ORDER BY due_at", (id,))
    graph, graph_note = _run_graph(id)
    return render_template("runs_detail.html", r=run, data=data, children=children[:SHOWN],
                           more_children=len(children) > SHOWN, saga_steps=saga_steps,
                           steps=steps[:SHOWN], more_steps=len(steps) > SHOWN, timers=timers,
                           graph=graph, graph_note=graph_note, live=graph_note != graphs.SLOW)


@bp.route("/run-graph/<path:id>")
def graph(id):
    """The run's graph as an HTML fragment: 200 while it runs; once finished,
    200 with X-Live-Final (the last picture) for a while, then 204."""
    run = g.db.read_one("SELECT status, state, finished_at, now() - finished_at AS since"
                        " FROM taskq.runs WHERE id = %s", (id,))
    if run is None:
        abort(404, description=f"no run \"{id}\"")
    if run["finished_at"] is not None and run["since"] > FINAL_GRACE:
        return "", 204
    picture, note = _run_graph(id)
    if note == graphs.SLOW:
        return "", 204          # no use asking again every 2 s
    resp = make_response(render_template("runs_graph.html", graph=picture, graph_note=note, r=run))
    if run["finished_at"] is not None:
        resp.headers["X-Live-Final"] = "1"
    return resp


@bp.route("/definitions")
def definitions():
    name = request.args.get("name", "").strip()
    summary = [] if name else g.db.read(
        "SELECT definition, kind, array_agg(DISTINCT version ORDER BY version DESC) AS versions,"
        " sum(in_state) FILTER (WHERE right(state, 5) <> ':undo') AS in_state"
        " FROM taskq.state_stats GROUP BY definition, kind ORDER BY definition")
    versions = []
    if name:
        stats = g.db.read("SELECT version, state, in_state, entered, succeeded, failed_tries,"
                          " avg_seconds, p95_seconds FROM taskq.state_stats WHERE definition = %s",
                          (name,))
        if not stats:
            abort(404, description=f"no definition \"{name}\"")
        by_version = {}
        for s in stats:
            by_version.setdefault(s["version"], []).append(s)
        for v in sorted(by_version, reverse=True):
            picture, note = graphs.draw(g.db.name, "definition", f"{name} v{v}",
                                        "SELECT taskq.definition_graph(%s, 'dot', %s)", (name, v))
            versions.append({"version": v, "stats": by_version[v], "graph": picture, "note": note})
    return render_template("definitions.html", summary=summary, name=name, versions=versions)
