"""Pictures of task graphs, machines and sagas: taskq's DOT drawn by graphviz.

Owns: turning the DOT text that taskq's own functions return
(taskq.task_graph, taskq.definition_graph, taskq.run_graph) into inline
SVG, by running graphviz's `dot -Tsvg` with a timeout, and a short cache
of the results.

The one exception to the console's rule that database text is never
trusted markup lives here, and only here: the SVG that `dot` makes is
returned as markupsafe.Markup so that Jinja embeds it.  That is safe
because (1) the DOT comes from taskq's graph functions, which quote every
name and label with taskq._dot_quote (never an HTML-like label, never a
URL attribute), (2) graphviz escapes label text into SVG text (&lt; &amp;
...), and (3) what dot prints is cut to its <svg> element: the XML prolog,
the DOCTYPE and every comment are removed.  The Content-Security-Policy
(no inline script) is the second line of defence.  No other text becomes
Markup anywhere in the console.

Locking: the cache is a dict under one lock; dot runs outside it (two
threads may draw the same graph at once: both results are equal).
"""

import hashlib
import re
import subprocess
import threading
import time

import psycopg
from flask import g
from markupsafe import Markup

# The longest a drawing may take; a bigger graph is not drawn.
DOT_TIMEOUT_SECONDS = 5.0
# DOT longer than this is not drawn (a workflow of thousands of tasks).
MAX_DOT_CHARS = 400_000
# How long a drawing is reused for the same DOT text of the same object.
CACHE_SECONDS = 10.0
CACHE_MAX = 200
# The longest taskq may take to make the DOT of one graph.
GRAPH_BUDGET_MS = 2000
# How long a graph that took too long is not asked for again.
SLOW_SECONDS = 60.0
SLOW = f"taskq took longer than {GRAPH_BUDGET_MS / 1000:g} s to make this graph: not drawn"

_COMMENT = re.compile(r"<!--.*?-->", re.S)
_cache = {}
_lock = threading.Lock()


class GraphError(Exception):
    """The graph could not be drawn (too big, too slow, no graphviz)."""


def svg(db, kind, key, dot):
    """The SVG of DOT text from taskq's graph functions, as Markup.

    db, kind and key (the database's name, "task"/"run"/"definition" and
    the object's id) with a hash of the text key the cache."""
    if len(dot) > MAX_DOT_CHARS:
        raise GraphError(f"the graph is too big to draw ({len(dot)} characters of DOT)")
    ck = (db, kind, key, hashlib.sha256(dot.encode()).hexdigest())
    now = time.monotonic()
    with _lock:
        hit = _cache.get(ck)
        if hit is not None and hit[0] > now:
            return hit[1]
    try:
        done = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True,
                              timeout=DOT_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise GraphError(f"graphviz took longer than {DOT_TIMEOUT_SECONDS:g} s") from None
    except OSError as e:
        raise GraphError(f"graphviz's dot could not run: {e}") from None
    if done.returncode != 0:
        raise GraphError("graphviz failed: " + done.stderr.decode(errors="replace").strip()[:300])
    text = done.stdout.decode()
    start = text.find("<svg")
    if start < 0:
        raise GraphError("graphviz printed no <svg>")
    picture = Markup(_COMMENT.sub("", text[start:]).strip())
    with _lock:
        if len(_cache) >= CACHE_MAX:
            for k in [k for k, v in _cache.items() if v[0] <= now] or list(_cache)[:CACHE_MAX // 2]:
                del _cache[k]
        _cache[ck] = (now + CACHE_SECONDS, picture)
    return picture


def draw(db, kind, key, sql, params):
    """(svg, None) of the DOT a query of taskq's graph functions returns, or
    (None, why) when it cannot be drawn.  The query has GRAPH_BUDGET_MS: the
    graphs with live figures (definition_graph, a saga's run_graph) read
    taskq.state_stats, which grows with the runs' tasks, and a page must not
    wait for them for the whole statement timeout."""
    slow_key = (db, kind, key, "slow")
    with _lock:
        hit = _cache.get(slow_key)
        if hit is not None and hit[0] > time.monotonic():
            return None, SLOW
    try:
        with g.db.connection() as conn:
            with conn.transaction():
                conn.execute(f"SET LOCAL statement_timeout = {GRAPH_BUDGET_MS}")
                row = conn.execute(sql, params).fetchone()
    except psycopg.errors.QueryCanceled:
        with _lock:          # not asked again for a while: each try costs the budget
            _cache[slow_key] = (time.monotonic() + SLOW_SECONDS, None)
        return None, SLOW
    dot = row and next(iter(row.values()))
    if not dot:
        return None, "no graph"
    try:
        return svg(db, kind, key, dot), None
    except GraphError as e:
        return None, str(e)
