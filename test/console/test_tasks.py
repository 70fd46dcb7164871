"""The Tasks page and a task's page: what they list and show is what SQL
sees, a page at a time, and what a task holds is shown as text."""

import html
import re
import urllib.parse

import pytest
from psycopg.types.json import Jsonb
from selenium.webdriver.common.by import By

from conftest import csp_violations, http, shot

N = 120
HOSTILE = "<script>document.title='owned'</script><img src=x onerror=alert(1)>"


def ids_of(body):
    return [html.unescape(i) for i in re.findall(r'<tr data-id="([^"]*)"', body)]


def next_of(body):
    m = re.search(r'<a id="next" rel="next" href="([^"]*)"', body)
    return html.unescape(m.group(1)) if m else None


def walk(console, query):
    """Every id the list shows for query, following "next" to the end over HTTP."""
    url = console.url + "/d/main/tasks?" + urllib.parse.urlencode(query)
    seen, pages = [], 0
    while url:
        status, _, body = http(url)
        assert status == 200, body
        seen += ids_of(body)
        pages += 1
        nxt = next_of(body)
        url = console.url + nxt if nxt else None
        assert pages < 20
    return seen


@pytest.fixture
def tasks(db, name):
    """N tasks of two actions in mixed states: ready, delayed, blocked, in
    progress, completed, aborted; three workflows; four concurrency keys."""
    a, b = f"{name}-a", f"{name}-b"
    db.execute("SELECT taskq.set_action_policy(%s, NULL, NULL, true)", (a,))
    rows = []
    for i in range(N):
        # a blocked task (i % 10 == 8) is in the workflow of its predecessor
        t = {"id": f"{name}-{i:03d}", "action": a if i < 100 else b,
             "workflow": f"{name}-w{(i - (i % 10 == 8)) % 3}", "body": {"i": i}, "priority": i % 3}
        if i % 2 == 0:
            t["concurrency_key"] = f"{name}-k{i % 4}"
        if i % 10 == 7:
            t["not_before"] = "2099-01-01 00:00+00"
            t["to_signal_after"] = [f"{name}-{i + 1:03d}"]
        rows.append(t)
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb(rows),))
    owned = db.execute("SELECT id, token FROM taskq.own_tasks(%s, 40, ARRAY[%s, %s], '1 hour')",
                       (f"{name}-actor", a, b)).fetchall()
    assert len(owned) == 40
    for k, (tid, token) in enumerate(owned[:25]):
        code = "completed" if k < 18 else "aborted"
        db.execute("SELECT taskq.return_task(%s, %s, %s, %s)", (tid, token, f"done {k}", code))
    yield {"a": a, "b": b}
    db.execute("DELETE FROM taskq.tasks WHERE id LIKE %s", (f"{name}-%",))
    db.execute("SELECT taskq.set_action_policy(%s, NULL, NULL, false)", (a,))


def sql_ids(db, where, params=()):
    return [r[0] for r in db.execute(f"SELECT id FROM taskq.tasks WHERE {where} ORDER BY id", params)]


def test_paging_follows_next_to_the_end(browser, console, db, name, tasks):
    want = sql_ids(db, "action = %s", (tasks["a"],))
    assert len(want) == 100
    browser.get(console.url + "/d/main/tasks?" + urllib.parse.urlencode({"action": tasks["a"]}))
    seen, pages = [], 0
    while True:
        rows = browser.find_elements(By.CSS_SELECTOR, "#tasks tbody tr[data-id]")
        assert len(rows) <= 50
        seen += [r.get_attribute("data-id") for r in rows]
        pages += 1
        nxt = browser.find_elements(By.ID, "next")
        if not nxt:
            break
        nxt[0].click()
        assert pages < 10
    assert seen == want and pages == 2
    # and back: "previous" from the last page shows the first 50 again
    browser.find_element(By.ID, "prev").click()
    assert [r.get_attribute("data-id") for r in
            browser.find_elements(By.CSS_SELECTOR, "#tasks tbody tr[data-id]")] == want[:50]
    assert not browser.find_elements(By.ID, "prev")
    assert csp_violations(browser) == []
    shot(browser, "tasks.png")


@pytest.mark.parametrize("state, where", [
    ("pending", "status_code = 'pending'"),
    ("ready", "status_code = 'pending' AND num_signals = 0 AND not_before <= now()"),
    ("delayed", "status_code = 'pending' AND num_signals = 0 AND not_before > now()"),
    ("blocked", "status_code = 'pending' AND num_signals > 0"),
    ("in_progress", "status_code = 'in_progress'"),
    ("completed", "status_code = 'completed'"),
    ("aborted", "status_code = 'aborted'"),
])
def test_state_filters_match_sql(console, db, name, tasks, state, where):
    for action in (tasks["a"], tasks["b"]):
        want = sql_ids(db, f"action = %s AND {where}", (action,))
        assert walk(console, {"action": action, "state": state}) == want
    # each state is present in the data, so that the comparison means something
    assert sql_ids(db, f"action LIKE %s AND {where}", (f"{name}-%",))


def prev_of(body):
    m = re.search(r'<a id="prev" rel="prev" href="([^"]*)"', body)
    return html.unescape(m.group(1)) if m else None


def test_tasks_in_progress_page_forward_and_back(console, db, name):
    """The tasks in progress are read from their own index and sorted (not by
    walking tasks_pkey): over several pages, forward and back, they are SQL's."""
    action = f"{name}-ip"
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb(
        [{"id": f"{name}-ip-{i:03d}", "action": action, "body": {}} for i in range(130)]),))
    owned = db.execute("SELECT count(*) FROM taskq.own_tasks(%s, 120, ARRAY[%s], '1 hour')",
                       (f"{name}-actor", action)).fetchone()[0]
    assert owned == 120
    want = sql_ids(db, "action = %s AND status_code = 'in_progress'", (action,))
    query = {"action": action, "state": "in_progress"}
    assert walk(console, query) == want
    # back from the last page by "previous"
    url = console.url + "/d/main/tasks?" + urllib.parse.urlencode(query)
    for _ in range(2):
        url = console.url + next_of(http(url)[2])
    body = http(url)[2]
    assert ids_of(body) == want[100:]
    status, _, body = http(console.url + prev_of(body))
    assert status == 200 and ids_of(body) == want[50:100]
    db.execute("DELETE FROM taskq.tasks WHERE action = %s", (action,))


def test_workflow_key_and_run_filters_match_sql(console, db, name, tasks):
    for w in range(3):
        wf = f"{name}-w{w}"
        assert walk(console, {"workflow": wf}) == sql_ids(db, "workflow = %s", (wf,))
        assert walk(console, {"workflow": wf, "state": "completed"}) == \
            sql_ids(db, "workflow = %s AND status_code = 'completed'", (wf,))
    for k in (0, 2):
        key = f"{name}-k{k}"
        want = sql_ids(db, "concurrency_key = %s", (key,))
        assert want and walk(console, {"key": key}) == want
        assert walk(console, {"key": key, "action": tasks["a"], "state": "in_progress"}) == \
            sql_ids(db, "concurrency_key = %s AND action = %s AND status_code = 'in_progress'",
                    (key, tasks["a"]))
    assert walk(console, {"action": f"{name}-none"}) == []


def test_bad_parameters_are_400(console, tasks):
    status, _, body = http(console.url + "/d/main/tasks?after=not-a-cursor")
    assert status == 400 and "after" in body
    status, _, body = http(console.url + "/d/main/tasks?before=k%25%25%25")
    assert status == 400 and "before" in body
    status, _, body = http(console.url + "/d/main/tasks?state=sleeping")
    assert status == 400 and "state" in body
    assert http(console.url + "/d/main/tasks/no-such-task-here")[0] == 404


def field(browser, f):
    return browser.find_element(By.CSS_SELECTOR, f"#task td[data-field='{f}']")


def test_detail_matches_sql(browser, console, db, name, tasks):
    tid = db.execute("SELECT id FROM taskq.tasks WHERE action = %s AND status_code = 'in_progress'"
                     " AND concurrency_key IS NOT NULL ORDER BY id LIMIT 1", (tasks["a"],)).fetchone()[0]
    row = db.execute(
        "SELECT status_code::text, status, num_tries, max_tries, action, priority, workflow,"
        " concurrency_key, \"trigger\"::text, actor_id,"
        " to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS'),"
        " to_char(action_deadline AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"
        " FROM taskq.tasks WHERE id = %s", (tid,)).fetchone()
    browser.get(console.url + "/d/main/tasks/" + urllib.parse.quote(tid))
    assert browser.find_element(By.ID, "task-id").text == tid
    assert field(browser, "status_code").find_element(By.CSS_SELECTOR, "[data-state]") \
        .get_attribute("data-state") == row[0] == "in_progress"
    assert field(browser, "tries").text == f"{row[2]} of {row[3] if row[3] else 'unlimited'}"
    assert field(browser, "action").text == row[4]
    assert field(browser, "priority").text == str(row[5])
    assert field(browser, "workflow").text.startswith(row[6])
    assert field(browser, "concurrency_key").text == row[7]
    assert field(browser, "trigger").text.startswith(row[8])
    assert field(browser, "actor_id").text == row[9]
    assert field(browser, "created_at").text.startswith(row[10])
    assert field(browser, "action_deadline").text.startswith(row[11])
    # the attempts, as taskq.task_attempts has them
    att = db.execute("SELECT try, actor, outcome FROM taskq.task_attempts(%s) ORDER BY try", (tid,)).fetchall()
    shown = browser.find_elements(By.CSS_SELECTOR, "#attempts tbody tr")
    assert len(shown) == len(att) == 1
    cells = [c.text for c in shown[0].find_elements(By.TAG_NAME, "td")]
    assert cells[0] == str(att[0][0]) and cells[1] == att[0][1] and cells[5] == "held"
    assert browser.find_elements(By.CSS_SELECTOR, "svg#timeline rect")
    # the body, pretty-printed, for an admin
    assert '"i": ' in browser.find_element(By.ID, "body").text
    # a finished task: status text and finish time
    done = db.execute("SELECT id, status, to_char(finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"
                      " FROM taskq.tasks WHERE action = %s AND status_code = 'aborted' ORDER BY id LIMIT 1",
                      (tasks["a"],)).fetchone()
    browser.get(console.url + "/d/main/tasks/" + urllib.parse.quote(done[0]))
    assert field(browser, "status").text == done[1]
    assert field(browser, "finished_at").text == done[2]
    assert field(browser, "status_code").find_element(By.CSS_SELECTOR, "[data-state]") \
        .get_attribute("data-state") == "aborted"
    assert [r.find_elements(By.TAG_NAME, "td")[5].text
            for r in browser.find_elements(By.CSS_SELECTOR, "#attempts tbody tr")] == ["aborted"]
    assert csp_violations(browser) == []


def test_neighbours_and_graph(browser, console, db, name, tasks):
    # in the mixed tasks: 007 (delayed) holds back 008 (blocked)
    pred, succ = f"{name}-007", f"{name}-008"
    assert db.execute("SELECT to_signal_after FROM taskq.tasks WHERE id = %s", (pred,)).fetchone()[0] == [succ]
    browser.get(console.url + "/d/main/tasks/" + succ)
    links = browser.find_elements(By.CSS_SELECTOR, "#predecessors a")
    assert [a.text for a in links] == [pred]
    assert field(browser, "status_code").find_element(By.CSS_SELECTOR, "[data-state]") \
        .get_attribute("data-state") == "blocked"
    links[0].click()
    assert browser.find_element(By.ID, "task-id").text == pred
    assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, "#successors a")] == [succ]
    svg = browser.find_element(By.CSS_SELECTOR, ".graph svg")
    titles = [t.get_attribute("textContent") for t in svg.find_elements(By.CSS_SELECTOR, "g.node > title")]
    assert sorted(titles) == sql_ids(db, "workflow = %s", (f"{name}-w1",))
    edges = [t.get_attribute("textContent") for t in svg.find_elements(By.CSS_SELECTOR, "g.edge > title")]
    assert f"{pred}->{succ}" in edges
    # a small DAG of its own: two extracts, a load that needs one, an alert if one fails
    w = f"{name}-etl"
    ea, eb, load, alert = (f"{w}/extract-a", f"{w}/extract-b", f"{w}/load", f"{w}/alert")
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb([
        {"id": ea, "action": f"{name}-extract", "workflow": w, "to_signal_after": [load, alert]},
        {"id": eb, "action": f"{name}-extract", "workflow": w, "to_signal_after": [load, alert]},
        {"id": load, "action": f"{name}-load", "workflow": w, "trigger": "one_success"},
        {"id": alert, "action": f"{name}-alert", "workflow": w, "trigger": "one_failed"}]),))
    tid, token = db.execute("SELECT id, token FROM taskq.own_tasks(%s, 1, ARRAY[%s])",
                            (f"{name}-w", f"{name}-extract")).fetchone()
    db.execute("SELECT taskq.return_task(%s, %s, 'copied', 'completed')", (tid, token))
    browser.get(console.url + "/d/main/tasks/" + urllib.parse.quote(load))
    assert sorted(a.text for a in browser.find_elements(By.CSS_SELECTOR, "#predecessors a")) == [ea, eb]
    assert field(browser, "trigger").text.startswith("one_success")
    svg = browser.find_element(By.CSS_SELECTOR, ".graph svg")
    edges = sorted(t.get_attribute("textContent") for t in svg.find_elements(By.CSS_SELECTOR, "g.edge > title"))
    assert edges == sorted(f"{a}->{b}" for a in (ea, eb) for b in (load, alert))
    labels = " ".join(t.get_attribute("textContent") for t in svg.find_elements(By.TAG_NAME, "text"))
    assert "completed" in labels and "one_success" in labels
    assert csp_violations(browser) == []
    shot(browser, "task.png")


def test_hostile_body_and_status_are_text(browser, console, console_ro, db, name):
    tid = f"{name}-evil"
    action = f"{name}-evil"
    db.execute("SELECT taskq.set_action_policy(%s, NULL, NULL, true)", (action,))
    try:
        db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb([{"id": tid, "action": action,
                                                              "workflow": f"{name}-evil",
                                                              "body": {"x": HOSTILE}}]),))
        token = db.execute("SELECT token FROM taskq.own_tasks(%s, 1, ARRAY[%s])", (HOSTILE, action)).fetchone()[0]
        db.execute("SELECT taskq.return_task(%s, %s, %s, 'completed', NULL, %s)",
                   (tid, token, HOSTILE, Jsonb({"y": HOSTILE})))
        browser.get(console.url + "/d/main/tasks/" + tid)
        assert HOSTILE in browser.find_element(By.ID, "body").text
        assert HOSTILE in browser.find_element(By.ID, "result").text
        assert field(browser, "status").text == HOSTILE
        assert field(browser, "actor_id").text == HOSTILE
        assert browser.find_element(By.CSS_SELECTOR, "#attempts tbody tr").find_elements(
            By.TAG_NAME, "td")[1].text == HOSTILE
        assert browser.title.startswith("Task ") and "owned" not in browser.title
        assert browser.find_elements(By.TAG_NAME, "img") == []
        assert browser.find_elements(By.CSS_SELECTOR, "main script") == []
        browser.get(console.url + "/d/main/tasks?" + urllib.parse.urlencode({"action": action}))
        assert browser.find_elements(By.TAG_NAME, "img") == [] and "owned" not in browser.title
        assert csp_violations(browser) == []
        # a monitor sees the task but not its body or result, and nothing fails
        status, _, body = http(console_ro.url + "/d/main/tasks/" + tid)
        assert status == 200 and 'id="no-data"' in body and 'id="body"' not in body
        assert "&lt;script&gt;" in body and "<script>document" not in body
        browser.get(console_ro.url + "/d/main/tasks/" + tid)
        assert browser.find_elements(By.ID, "body") == [] and browser.find_element(By.ID, "no-data")
        assert browser.find_elements(By.CSS_SELECTOR, ".graph svg")
        assert csp_violations(browser) == []
    finally:
        db.execute("DELETE FROM taskq.tasks WHERE id = %s", (tid,))
        db.execute("SELECT taskq.set_action_policy(%s, NULL, NULL, false)", (action,))


def test_monitor_pages_through_tasks(console_ro, db, name, tasks):
    want = sql_ids(db, "action = %s", (tasks["a"],))
    assert walk(console_ro, {"action": tasks["a"]}) == want
    status, _, body = http(console_ro.url + "/d/main/tasks/" + want[0])
    assert status == 200 and 'id="no-data"' in body
