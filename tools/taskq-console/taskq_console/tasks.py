"""The Tasks page: taskq.tasks browsed by filters, a page at a time, and one task.

Owns: /d/<db>/tasks (the list) and /d/<db>/tasks/<id> (a task: its row,
its attempts, its predecessors and successors, the picture of its
workflow), and the keyset cursors the list pages and the Runs page use.

The list is in id order (tasks_pkey), 50 a page, by keyset: "next" carries
the last id of the page, "previous" the first; there is no count.  Each
filter is a predicate written so that an index of taskq.tasks fits it, and
the planner picks between walking tasks_pkey in id order (a common filter)
and reading the filter's index and sorting its rows (a rare one):

    state pending, ready, delayed, blocked   tasks_ready_action_idx (with an
        action) or tasks_not_before_idx (delayed) or tasks_blocked_idx; a
        state of several indexes (pending) is a UNION ALL of one query per
        index, each LIMIT 51, merged
    state in_progress                        tasks_running_idx / tasks_lease_idx
    state completed, aborted                 tasks_finished_idx, or tasks_pkey
    workflow                                 tasks_workflow_idx (workflow, status_code)
    run (its step tasks "<run>/<n>")         tasks_pkey, the range of ids "<run>/..."
    action, concurrency key                  with the above, or tasks_pkey in order

An unfinished state (pending to in progress) of at most SORT_MAX tasks is
always read from its indexes and sorted, never by the walk: see
STATE_GAUGES.

A monitor reads every column but body, result and performance_token; the
body and result of a task are read in a query of their own, and only when
the role may read them.
"""

import base64
import binascii

from flask import abort, g, render_template, request

from . import db_blueprint, graphs

bp = db_blueprint("tasks", __name__)


PAGE = 50
# A workflow with more tasks than this is not drawn on a task's page.
GRAPH_MAX_TASKS = 300
# Predecessors and successors listed on a task's page.
NEIGHBOURS_SHOWN = 200

# Each state: the predicates of one query each (each fits an index), joined
# by UNION ALL.  None: no predicate (any state).
STATES = {
    "": [None],
    "pending": ["t.status_code = 'pending' AND t.num_signals = 0",
                "t.status_code = 'pending' AND t.num_signals > 0"],
    "ready": ["t.status_code = 'pending' AND t.num_signals = 0 AND t.not_before <= now()"],
    "delayed": ["t.status_code = 'pending' AND t.num_signals = 0"
                " AND t.not_before > t.created_at AND t.not_before > now()"],
    "blocked": ["t.status_code = 'pending' AND t.num_signals > 0"],
    "in_progress": ["t.status_code = 'in_progress'"],
    "completed": ["t.status_code = 'completed'"],
    "aborted": ["t.status_code = 'aborted'"],
}

# The unfinished states, and the gauges of taskq.metrics() that count their
# rows.  Their tasks are the newest: in id order they come after every
# finished task, so walking tasks_pkey to the first 51 of them reads nearly
# the whole table (0.2 s at a million tasks).  While they are at most
# SORT_MAX rows (as the background worker last counted them), the page reads
# them from their own index and sorts them instead (about 150 ms for 70,000
# on 2 cores); past that a sort alone would pass the page's 300 ms, and the
# walk, which stops at the 51st row it meets, is the better bet.
STATE_GAUGES = {
    "pending": ("taskq_tasks_ready", "taskq_tasks_delayed", "taskq_tasks_blocked"),
    "ready": ("taskq_tasks_ready",),
    "delayed": ("taskq_tasks_delayed",),
    "blocked": ("taskq_tasks_blocked",),
    "in_progress": ("taskq_tasks_in_progress",),
}
SORT_MAX = 100000

LIST_COLUMNS = (
    "t.id, t.action, t.status_code::text AS status_code, t.status, t.num_tries, t.max_tries,"
    " t.num_signals, t.priority, t.not_before, t.created_at, t.finished_at, t.workflow,"
    " t.concurrency_key, t.actor_id, t.action_deadline,"
    " CASE WHEN t.status_code <> 'pending' THEN t.status_code::text"
    "      WHEN t.num_signals > 0 THEN 'blocked'"
    "      WHEN t.not_before > now() THEN 'delayed' ELSE 'ready' END AS state")


# ------------------------------------------------------------ keyset cursors

def encode_cursor(key):
    """An opaque cursor for the URL: the key (text) in base64url."""
    return "k" + base64.urlsafe_b64encode(key.encode()).decode().rstrip("=")


def decode_cursor(param):
    """The key in request.args[param], or None; 400 naming param if it is not a cursor."""
    value = request.args.get(param)
    if value is None or value == "":
        return None
    try:
        if not value.startswith("k"):
            raise ValueError
        raw = value[1:]
        key = base64.b64decode(raw + "=" * (-len(raw) % 4), altchars=b"-_", validate=True).decode()
        if not key:
            raise ValueError
        return key
    except (ValueError, binascii.Error, UnicodeDecodeError):
        abort(400, description=f"parameter \"{param}\" is not a cursor of this page")


def keyset_page(query_fn):
    """One page by keyset on a text key: query_fn(after, before, limit) returns
    rows in key order (ascending for after, descending for before) and the
    page is rows, next cursor, previous cursor."""
    after, before = decode_cursor("after"), decode_cursor("before")
    if after is not None and before is not None:
        abort(400, description="parameters \"after\" and \"before\" together")
    rows = query_fn(after, before, PAGE + 1)
    more = len(rows) > PAGE
    rows = rows[:PAGE]
    if before is not None:
        rows.reverse()
        has_prev, has_next = more, True
    else:
        has_prev, has_next = after is not None, more
    nxt = encode_cursor(rows[-1]["id"]) if rows and has_next else None
    prev = encode_cursor(rows[0]["id"]) if rows and has_prev else None
    if before is not None and not rows:
        nxt = None
    return rows, nxt, prev


def keyset_where(where, params, column, after, before):
    """The condition of a page after or before a cursor on a text key."""
    if after is not None:
        where.append(f"{column} > %(cursor)s")
        params["cursor"] = after
    if before is not None:
        where.append(f"{column} < %(cursor)s")
        params["cursor"] = before


def pager_args(args, **cursor):
    """The page's query parameters, with the cursor replaced."""
    out = {k: v for k, v in args.items() if k not in ("after", "before") and v != ""}
    out.update(cursor)
    return out


# ------------------------------------------------------------ the list

def sorted_read(filters, state):
    """Should the page read the state's rows from their index and sort them?
    Yes for an unfinished state of at most SORT_MAX tasks (of the action, if
    one is given), unless a workflow or run names fewer rows by its own index."""
    if state not in STATE_GAUGES or filters["workflow"] or filters["run"]:
        return False
    row = g.db.read_one(
        "SELECT coalesce(sum(m.value), 0) AS n FROM taskq.metrics() AS m"
        " WHERE m.name = ANY(%s) AND (%s = '' OR m.labels->>'action' = %s)",
        (list(STATE_GAUGES[state]), filters["action"], filters["action"]))
    return row["n"] <= SORT_MAX


def list_query(filters, state, after, before, limit, sort=False):
    """The SQL and parameters of one page of the list (sort: see sorted_read)."""
    where, params = [], {}
    if filters["action"]:
        where.append("t.action = %(action)s")
        params["action"] = filters["action"]
    if filters["workflow"]:
        where.append("t.workflow = %(workflow)s")
        params["workflow"] = filters["workflow"]
    if filters["run"]:
        # a run's step tasks are "<run>/<n>", with workflow = the run's id:
        # ids between "<run>/" and "<run>0" ('0' follows '/' bytewise)
        where.append("t.workflow = %(run)s AND t.id > %(run_lo)s AND t.id < %(run_hi)s")
        params.update(run=filters["run"], run_lo=filters["run"] + "/", run_hi=filters["run"] + "0")
    if filters["key"]:
        where.append("t.concurrency_key = %(key)s")
        params["key"] = filters["key"]
    keyset_where(where, params, "t.id", after, before)
    order = "t.id DESC" if before is not None else "t.id"
    params["limit"] = limit
    parts = []
    for pred in STATES[state]:
        conds = ([pred] if pred else []) + where
        sql = (f"SELECT {LIST_COLUMNS} FROM taskq.tasks AS t"
               + (" WHERE " + " AND ".join(conds) if conds else ""))
        if sort:
            # all its rows from its index, then sorted (OFFSET 0 keeps the
            # planner from walking tasks_pkey in id order instead)
            sql = f"SELECT * FROM ({sql} OFFSET 0) AS t"
        parts.append(sql + f" ORDER BY {order} LIMIT %(limit)s")
    if len(parts) == 1:
        return parts[0], params
    union = " UNION ALL ".join(f"({p})" for p in parts)
    return f"SELECT * FROM ({union}) AS t ORDER BY {order} LIMIT %(limit)s", params


def list_filters():
    args = request.args
    filters = {k: args.get(k, "").strip() for k in ("action", "workflow", "run", "key")}
    state = args.get("state", "").strip()
    if state not in STATES:
        abort(400, description=f"unknown state \"{state}\" in parameter \"state\" (one of "
                               + ", ".join(s for s in STATES if s) + ")")
    return filters, state


@bp.route("/tasks")
def page():
    filters, state = list_filters()
    sort = sorted_read(filters, state)
    rows, nxt, prev = keyset_page(
        lambda after, before, limit: g.db.read(*list_query(filters, state, after, before, limit, sort)))
    return render_template("tasks.html", rows=rows, filters=filters, state=state,
                           states=[s for s in STATES if s], page_size=PAGE,
                           next_args=nxt and pager_args(request.args, after=nxt),
                           prev_args=prev and pager_args(request.args, before=prev))


# ------------------------------------------------------------ one task

TASK_COLUMNS = (
    "id, action, status_code::text AS status_code, status, num_tries, max_tries, num_signals,"
    " total_dependencies, num_completed, num_failed, to_signal_after, actor_id, action_deadline,"
    " claimed_at, priority, not_before, created_at, finished_at, workflow, cancelled,"
    " \"trigger\"::text AS trigger_rule, retry, concurrency_key, spontaneous, post_result,"
    " now() AS now,"
    " CASE WHEN status_code <> 'pending' THEN status_code::text"
    "      WHEN num_signals > 0 THEN 'blocked'"
    "      WHEN not_before > now() THEN 'delayed' ELSE 'ready' END AS state")


@bp.route("/tasks/<path:id>")
def detail(id):
    task = g.db.read_one(f"SELECT {TASK_COLUMNS} FROM taskq.tasks WHERE id = %s", (id,))
    if task is None:
        abort(404, description=f"no task \"{id}\"")
    data = g.db.read_one_data("SELECT jsonb_pretty(body) AS body, jsonb_pretty(result) AS result"
                              " FROM taskq.tasks WHERE id = %s", (id,))
    attempts = g.db.read("SELECT try, actor, claimed_at, finished_at, outcome, status"
                         " FROM taskq.task_attempts(%s) ORDER BY try", (id,))
    # predecessors: the tasks whose successors hold this one (tasks_successors_idx)
    preds = g.db.read("SELECT id, action, status_code::text AS status_code, status"
                      " FROM taskq.tasks WHERE to_signal_after @> ARRAY[%s]::text[]"
                      " ORDER BY id LIMIT %s", (id, NEIGHBOURS_SHOWN + 1))
    succ_ids = (task["to_signal_after"] or [])[:NEIGHBOURS_SHOWN]
    succs = g.db.read("SELECT id, action, status_code::text AS status_code, status,"
                      " \"trigger\"::text AS trigger_rule FROM taskq.tasks"
                      " WHERE id = ANY(%s::text[]) ORDER BY id", (succ_ids,)) if succ_ids else []
    found = {s["id"] for s in succs}
    succs += [{"id": s, "action": None, "status_code": None, "status": "(gone)",
               "trigger_rule": None} for s in succ_ids if s not in found]
    run = None
    graph = graph_note = None
    if task["workflow"] is not None:
        run = g.db.read_one("SELECT id, kind, definition FROM taskq.runs WHERE id = %s",
                            (task["workflow"],))
        n = g.db.read_one("SELECT count(*) AS n FROM (SELECT 1 FROM taskq.tasks WHERE workflow = %s"
                          " LIMIT %s) AS x", (task["workflow"], GRAPH_MAX_TASKS + 1))["n"]
        if n > GRAPH_MAX_TASKS:
            graph_note = f"the workflow has more than {GRAPH_MAX_TASKS} tasks: not drawn"
        else:
            graph, graph_note = graphs.draw(g.db.name, "task", task["workflow"],
                                            "SELECT taskq.task_graph(%s, 'dot')", (task["workflow"],))
    return render_template("tasks_detail.html", t=task, data=data, attempts=attempts,
                           timeline=timeline(attempts, task["now"]),
                           preds=preds[:NEIGHBOURS_SHOWN], more_preds=len(preds) > NEIGHBOURS_SHOWN,
                           succs=succs, more_succs=len(task["to_signal_after"] or []) > NEIGHBOURS_SHOWN,
                           run=run, graph=graph, graph_note=graph_note)


# The attempts timeline: one bar per try from its claim to its end (or now).
TIMELINE_WIDTH = 640
OUTCOME_FILL = {"completed": "#b7e1a1", "aborted": "#f4a6a6", "pending": "#fff2a8",
                "released": "#dddddd", "expired": "#f6c28b", "cancelled": "#cccccc", None: "#a6c8f4"}


def timeline(attempts, now):
    """Bars (x, width, y, fill, label) of the attempts on a common time axis."""
    if not attempts:
        return None
    start = min(a["claimed_at"] for a in attempts)
    end = max((a["finished_at"] or now) for a in attempts)
    span = max((end - start).total_seconds(), 0.001)
    bars = []
    for i, a in enumerate(attempts):
        x0 = (a["claimed_at"] - start).total_seconds() / span * TIMELINE_WIDTH
        x1 = ((a["finished_at"] or now) - start).total_seconds() / span * TIMELINE_WIDTH
        bars.append({"x": round(x0 + 120, 1), "w": round(max(x1 - x0, 2), 1), "y": 4 + i * 22,
                     "fill": OUTCOME_FILL.get(a["outcome"], "#eeeeee"),
                     "label": f"try {a['try']} · {a['actor']} · {a['outcome'] or 'held'}"})
    return {"bars": bars, "height": 8 + len(attempts) * 22, "width": TIMELINE_WIDTH + 130,
            "span": span}
