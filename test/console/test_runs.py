"""The Runs page, a run's page and its live graph, and the definitions:
what they show is what SQL sees, and the graph follows the run."""

import html
import re
import time
import urllib.parse

import pytest
from psycopg.types.json import Jsonb
from selenium.webdriver.common.by import By

from conftest import csp_violations, http, shot, wait_until


def machine_def(name):
    return {"states": [
        {"name": "A", "action": f"{name}-a", "initial": True, "transitions": [{"event": "ok", "to": "B"}]},
        {"name": "B", "action": f"{name}-b", "transitions": [{"event": "ok", "to": "C"}]},
        {"name": "C", "action": f"{name}-c", "final": True}]}


def saga_def(name):
    return {"steps": [{"name": "A", "do": f"{name}-sa", "undo": f"{name}-ua"},
                      {"name": "B", "do": f"{name}-sb", "after": ["A"]}]}


@pytest.fixture
def defs(db, name):
    db.execute("SELECT taskq.define_machine(%s, %s)", (f"{name}-m", Jsonb(machine_def(name))))
    db.execute("SELECT taskq.define_saga(%s, %s)", (f"{name}-s", Jsonb(saga_def(name))))
    yield {"machine": f"{name}-m", "saga": f"{name}-s"}
    db.execute("DELETE FROM taskq.saga_steps WHERE run LIKE %s", (f"{name}-%",))
    db.execute("DELETE FROM taskq.run_timers WHERE run_id LIKE %s", (f"{name}-%",))
    db.execute("DELETE FROM taskq.runs WHERE id LIKE %s", (f"{name}-%",))
    db.execute("DELETE FROM taskq.tasks WHERE id LIKE %s", (f"{name}-%",))
    db.execute("DELETE FROM taskq.definitions WHERE name LIKE %s", (f"{name}-%",))


def step(db, name, action, event):
    """Claim the run's step task of action and move the machine on event."""
    tid, token = db.execute("SELECT id, token FROM taskq.own_tasks(%s, 1, ARRAY[%s])",
                            (f"{name}-w", action)).fetchone()
    db.execute("SELECT taskq.transition(%s, %s, %s)", (tid, token, event))
    return tid


PICTURE_JS = """
var svg = document.querySelector('#graph svg');
if (!svg) { return null; }
var nodes = [], current = null;
svg.querySelectorAll('g.node').forEach(function (g) {
    var n = g.querySelector('title').textContent;
    if (n === '__start') { return; }
    nodes.push(n);
    if (g.querySelector('[stroke-width="3"]')) { current = n; }
});
nodes.sort();
return [svg.querySelector('g.graph > title').textContent, nodes, current];
"""


def picture(browser):
    """(graph title, node names, the current node) of the run's graph in the
    page, read in one script (the page replaces the graph every 2 s)."""
    p = browser.execute_script(PICTURE_JS)
    return p and (p[0], p[1], p[2])


def test_live_graph_follows_the_run(browser, console, db, name, defs):
    run = f"{name}-live"
    db.execute("SELECT taskq.start_machine(%s, %s, %s)", (defs["machine"], run, Jsonb({"n": 1})))
    browser.get(console.url + "/d/main/runs/" + run)
    assert browser.find_element(By.CSS_SELECTOR, "#run td[data-field='state']").text == "A"
    assert browser.find_element(By.ID, "graph").get_attribute("data-live").endswith("/run-graph/" + run)
    assert picture(browser) == (f"run {run} (running)", ["A"], "A")
    # the page is not reloaded while the graph changes: this mark would go
    browser.execute_script("window.taskqMark = 42;")
    step(db, name, f"{name}-a", "ok")
    wait_until(lambda: picture(browser) == (f"run {run} (running)", ["A", "B"], "B"), 30,
               "the graph to show state B")
    assert browser.find_element(By.ID, "graph-status").text == "running · in B"
    shot(browser, "run.png")
    step(db, name, f"{name}-b", "ok")
    wait_until(lambda: picture(browser) == (f"run {run} (running)", ["A", "B", "C"], "C"), 30,
               "the graph to show state C")
    # the fragment of a run that runs: 200, not the last
    status, headers, body = http(console.url + "/d/main/run-graph/" + run)
    assert status == 200 and "<svg" in body and headers.get("X-Live-Final") is None
    step(db, name, f"{name}-c", None)
    assert db.execute("SELECT status FROM taskq.runs WHERE id = %s", (run,)).fetchone()[0] == "succeeded"
    wait_until(lambda: picture(browser) == (f"run {run} (succeeded)", ["A", "B", "C"], "C"), 30,
               "the graph to show the finished run")
    assert browser.execute_script("return window.taskqMark;") == 42
    assert browser.find_element(By.ID, "graph-status").text == "succeeded · in C"
    # polling has stopped: once a fetch still under way is in, content put in the element stays
    time.sleep(4)
    browser.execute_script("document.getElementById('graph').setAttribute('data-seen', 'final');"
                           "document.getElementById('graph').appendChild(document.createElement('hr'));")
    time.sleep(5)
    assert browser.find_elements(By.CSS_SELECTOR, "#graph > hr"), "the graph was fetched again"
    assert picture(browser)[0] == f"run {run} (succeeded)"
    status, headers, body = http(console.url + "/d/main/run-graph/" + run)
    assert status == 200 and headers.get("X-Live-Final") == "1" and "(succeeded)" in body
    # a finished run's page does not poll at all
    browser.get(console.url + "/d/main/runs/" + run)
    assert browser.find_element(By.ID, "graph").get_attribute("data-live") is None
    assert picture(browser) == (f"run {run} (succeeded)", ["A", "B", "C"], "C")
    # its step tasks, as SQL has them
    want = [r[0] for r in db.execute("SELECT id FROM taskq.tasks WHERE workflow = %s ORDER BY seq", (run,))]
    assert [r.get_attribute("data-id") for r in browser.find_elements(By.CSS_SELECTOR, "#steps tr[data-id]")] == want
    assert len(want) == 3
    assert browser.find_element(By.ID, "context").text.replace(" ", "").replace("\n", "") == '{"n":1}'
    assert csp_violations(browser) == []


def test_a_finished_run_stops_the_polling_with_204(console, db, name, defs):
    run = f"{name}-old"
    db.execute("SELECT taskq.start_machine(%s, %s)", (defs["machine"], run))
    for action, event in (("a", "ok"), ("b", "ok"), ("c", None)):
        step(db, name, f"{name}-{action}", event)
    db.execute("UPDATE taskq.runs SET finished_at = now() - interval '1 hour' WHERE id = %s", (run,))
    assert http(console.url + "/d/main/run-graph/" + run)[0] == 204
    assert http(console.url + "/d/main/run-graph/" + name + "-nosuch")[0] == 404
    assert http(console.url + "/d/main/runs/" + name + "-nosuch")[0] == 404


def test_saga_steps_match_sql(browser, console, console_ro, db, name, defs):
    run = f"{name}-saga"
    db.execute("SELECT taskq.start_saga(%s, %s, %s)", (defs["saga"], run, Jsonb({"who": "ann"})))

    def check():
        browser.get(console.url + "/d/main/runs/" + run)
        shown = [[c.text for c in r.find_elements(By.TAG_NAME, "td")]
                 for r in browser.find_elements(By.CSS_SELECTOR, "#saga-steps tbody tr")]
        want = [[s, d, ds, u or "", us or ""] for s, d, ds, u, us in db.execute(
            "SELECT step, do_task, do_state, undo_task, undo_state FROM taskq.saga_steps"
            " WHERE run = %s ORDER BY length(do_task), do_task", (run,))]
        assert shown == want and want
        status = db.execute("SELECT status FROM taskq.runs WHERE id = %s", (run,)).fetchone()[0]
        assert browser.find_element(By.CSS_SELECTOR, "#run td[data-field='status']").text == status
        assert browser.find_elements(By.CSS_SELECTOR, "#graph svg")
        return want

    assert [r[2] for r in check()] == ["ready"]
    tid, token = db.execute("SELECT id, token FROM taskq.own_tasks(%s, 1, ARRAY[%s])",
                            (f"{name}-w", f"{name}-sa")).fetchone()
    db.execute("SELECT taskq.return_step(%s, %s, 'success', %s)", (tid, token, Jsonb({"a": 1})))
    assert [r[2] for r in check()] == ["succeeded", "ready"]
    tid, token = db.execute("SELECT id, token FROM taskq.own_tasks(%s, 1, ARRAY[%s])",
                            (f"{name}-w", f"{name}-sb")).fetchone()
    db.execute("SELECT taskq.return_step(%s, %s, 'fatal', NULL, 'no room')", (tid, token))
    steps = check()
    assert steps[0][4] == "ready" and steps[0][3]       # A's undo is on its way
    assert "ann" in browser.find_element(By.ID, "inputs").text
    assert csp_violations(browser) == []
    # a monitor: the same steps, no context
    browser.get(console_ro.url + "/d/main/runs/" + run)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#saga-steps tbody tr")) == len(steps)
    assert browser.find_element(By.ID, "no-data") and not browser.find_elements(By.ID, "context")
    assert browser.find_elements(By.CSS_SELECTOR, "#graph svg")
    assert csp_violations(browser) == []


def run_ids(body):
    return [html.unescape(i) for i in re.findall(r'<tr data-id="([^"]*)"', body)]


def test_runs_list_filters_match_sql(browser, console, db, name, defs):
    for i in range(3):
        db.execute("SELECT taskq.start_machine(%s, %s)", (defs["machine"], f"{name}-m{i}"))
    db.execute("SELECT taskq.start_saga(%s, %s)", (defs["saga"], f"{name}-s0"))
    step(db, name, f"{name}-a", "ok")            # one machine run moves on
    tid, token = db.execute("SELECT id, token FROM taskq.own_tasks(%s, 1, ARRAY[%s])",
                            (f"{name}-w", f"{name}-sa")).fetchone()
    db.execute("SELECT taskq.return_step(%s, %s, 'fatal', NULL, 'broken')", (tid, token))
    cases = [
        ({"definition": defs["machine"]}, "definition = %s", (defs["machine"],)),
        ({"definition": defs["machine"], "status": "running"},
         "definition = %s AND status = 'running'", (defs["machine"],)),
        ({"definition": defs["machine"], "status": "unfinished"},
         "definition = %s AND finished_at IS NULL", (defs["machine"],)),
        ({"definition": defs["saga"], "kind": "saga"}, "definition = %s AND kind = 'saga'", (defs["saga"],)),
        ({"definition": defs["saga"], "status": "finished"},
         "definition = %s AND finished_at IS NOT NULL", (defs["saga"],)),
        ({"definition": defs["saga"], "kind": "machine"}, "definition = %s AND kind = 'machine'", (defs["saga"],)),
    ]
    for query, where, params in cases:
        status, _, body = http(console.url + "/d/main/runs?" + urllib.parse.urlencode(query))
        assert status == 200, body
        want = [r[0] for r in db.execute(f"SELECT id FROM taskq.runs WHERE {where} ORDER BY id", params)]
        assert run_ids(body) == want, query
    assert len(run_ids(http(console.url + "/d/main/runs?" + urllib.parse.urlencode(
        {"definition": defs["machine"]}))[2])) == 3
    assert http(console.url + "/d/main/runs?status=sleeping")[0] == 400
    assert http(console.url + "/d/main/runs?after=zzz")[0] == 400
    # the run filter of the Tasks page: a run's step tasks
    run = f"{name}-m0"
    status, _, body = http(console.url + "/d/main/tasks?" + urllib.parse.urlencode({"run": run}))
    want = [r[0] for r in db.execute("SELECT id FROM taskq.tasks WHERE workflow = %s ORDER BY id", (run,))]
    assert want and run_ids(body) == want
    browser.get(console.url + "/d/main/runs?" + urllib.parse.urlencode({"definition": defs["machine"]}))
    rows = browser.find_elements(By.CSS_SELECTOR, "#runs tbody tr[data-id]")
    sql = {r[0]: r[1:] for r in db.execute(
        "SELECT id, status, coalesce(state, '') FROM taskq.runs WHERE definition = %s", (defs["machine"],))}
    for r in rows:
        cells = [c.text for c in r.find_elements(By.TAG_NAME, "td")]
        assert (cells[3], cells[4]) == sql[r.get_attribute("data-id")]
    assert csp_violations(browser) == []
    browser.get(console.url + "/d/main/runs")         # every run, for the picture
    shot(browser, "runs.png")


def test_definitions_show_graph_and_state_stats(browser, console, db, name, defs):
    run = f"{name}-d0"
    db.execute("SELECT taskq.start_machine(%s, %s)", (defs["machine"], run))
    step(db, name, f"{name}-a", "ok")
    db.execute("SELECT taskq.start_machine(%s, %s)", (defs["machine"], f"{name}-d1"))
    browser.get(console.url + "/d/main/definitions")
    row = browser.find_element(By.CSS_SELECTOR, f"#definitions tr[data-definition='{defs['machine']}']")
    assert [c.text for c in row.find_elements(By.TAG_NAME, "td")] == [defs["machine"], "machine", "1", "2"]
    row.find_element(By.TAG_NAME, "a").click()
    section = browser.find_element(By.CSS_SELECTOR, "section.version[data-version='1']")
    svg = section.find_element(By.CSS_SELECTOR, ".graph svg")
    nodes = sorted(t.get_attribute("textContent") for t in svg.find_elements(By.CSS_SELECTOR, "g.node > title"))
    assert [n for n in nodes if n != "__start"] == ["A", "B", "C"]
    shown = {r.get_attribute("data-state"): [c.text for c in r.find_elements(By.TAG_NAME, "td")[1:5]]
             for r in section.find_elements(By.CSS_SELECTOR, "table.state-stats tbody tr")}
    want = {s: [str(a), str(b), str(c), str(d)] for s, a, b, c, d in db.execute(
        "SELECT state, in_state, entered, succeeded, failed_tries FROM taskq.state_stats"
        " WHERE definition = %s AND version = 1", (defs["machine"],))}
    assert shown == want and want["A"] == ["1", "2", "1", "0"] and want["B"][0] == "1"
    browser.get(console.url + "/d/main/definitions?" + urllib.parse.urlencode({"name": defs["saga"]}))
    assert browser.find_elements(By.CSS_SELECTOR, "section.version .graph svg")
    assert [r.get_attribute("data-state") for r in
            browser.find_elements(By.CSS_SELECTOR, "table.state-stats tbody tr")] == ["A", "A:undo", "B"]
    assert csp_violations(browser) == []
    assert http(console.url + "/d/main/definitions?name=" + name + "-nosuch")[0] == 404
