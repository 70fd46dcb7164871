"""The Dead letters page and the console's write actions: the list as
taskq.dead_letters has it, its filters and pages; redriving one task or
every one a filter matches after a confirmation that counts them (and
refuses when they changed meanwhile); cancelling and redriving runs; and
the safety rules: read-only roles see no write control and are refused,
a POST without this session's CSRF token is refused, every write is in
the audit log."""

import datetime
import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request

from psycopg.types.json import Jsonb
from selenium.webdriver.common.by import By

from conftest import csp_violations, shot, wait_until


# ---------------------------------------------------------------- helpers

def abort_tasks(db, action, ids, status="boom", workflow=None):
    """Dead letters the way a worker makes them: inserted with max_tries 1,
    owned, returned aborted."""
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb(
        [dict({"id": i, "action": action, "max_tries": 1},
              **({"workflow": workflow} if workflow else {})) for i in ids]),))
    owned = db.execute("SELECT id, token FROM taskq.own_tasks(%s, %s, ARRAY[%s], '1 hour')",
                       (action + "-w", len(ids), action)).fetchall()
    assert sorted(r[0] for r in owned) == sorted(ids)
    for id, token in owned:
        db.execute("SELECT taskq.return_task(%s, %s, %s, 'aborted')", (id, token, status))


def dead_ids(db, where, params=()):
    return [r[0] for r in db.execute(
        "SELECT id FROM taskq.dead_letters WHERE " + where + " ORDER BY finished_at DESC, id",
        params)]


def states(db, prefix):
    return {r[0]: (r[1], r[2], r[3]) for r in db.execute(
        "SELECT id, status_code::text, status, num_tries FROM taskq.tasks WHERE id LIKE %s",
        (prefix + "%",))}


def cleanup(db, prefix):
    db.execute("DELETE FROM taskq.tasks WHERE id LIKE %s", (prefix + "%",))


def table_ids(browser):
    return [r.get_attribute("data-id") for r in browser.find_elements(By.CSS_SELECTOR, "#dead tbody tr")]


def submit_confirmed(browser, form):
    """Submit a form[data-confirm]: console.js asks; say yes."""
    question = form.get_attribute("data-confirm")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    alert = wait_until(lambda: _alert(browser), what="the confirm dialog")
    assert alert.text == question
    alert.accept()


def _alert(browser):
    try:
        return browser.switch_to.alert
    except Exception:           # noqa: BLE001 — not there yet
        return None


class Session:
    """A client with a cookie jar (one console session), not following redirects."""

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    def __init__(self, base):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar),
                                                  self._NoRedirect)

    def request(self, path, data=None):
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        try:
            with self.opener.open(self.base + path, data=body, timeout=10) as r:
                return r.status, r.headers, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers, e.read().decode()

    def token(self, path="/d/main/dead"):
        """The CSRF token of this session, from any page (base.html's meta)."""
        status, _, body = self.request(path)
        assert status == 200
        return re.search(r'<meta name="csrf-token" content="([^"]+)"', body).group(1)

    def flashes(self, path):
        status, _, body = self.request(path)
        return re.findall(r'<p class="flash (\w+)">([^<]*)</p>', body)


# ---------------------------------------------------------------- the list

def test_list_matches_the_view_and_filters(browser, console, db, name):
    a, b = f"{name}-a", f"{name}-b"
    abort_tasks(db, a, [f"{name}-a{i}" for i in range(4)], status="disk full")
    abort_tasks(db, b, [f"{name}-b{i}" for i in range(3)], status="timeout talking to api",
                workflow=f"{name}-wf")
    # a task that is not a dead letter: pending
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb([{"id": f"{name}-a-pending", "action": a}]),))
    # spread finished_at so that the time filter and the order have something to show
    base = datetime.datetime(2026, 1, 1, 12, 0, tzinfo=datetime.timezone.utc)
    for i in range(4):
        db.execute("UPDATE taskq.tasks SET finished_at = %s WHERE id = %s",
                   (base + datetime.timedelta(hours=i), f"{name}-a{i}"))
    try:
        browser.get(console.url + f"/d/main/dead?action={a}")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Dead letters"
        assert table_ids(browser) == dead_ids(db, "action = %s", (a,)) == \
            [f"{name}-a3", f"{name}-a2", f"{name}-a1", f"{name}-a0"]
        row = browser.find_element(By.CSS_SELECTOR, f"#dead tr[data-id='{name}-a2']")
        cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
        assert cells[:7] == [f"{name}-a2", a, "disk full", "1/1", "", "", "2026-01-01 14:00:00"]
        link = row.find_element(By.TAG_NAME, "a").get_attribute("href")
        assert link == console.url + f"/d/main/tasks/{name}-a2"
        shot(browser, "dead.png")

        # the filter form, as a person uses it
        browser.get(console.url + "/d/main/dead")
        form = browser.find_element(By.ID, "dead-filter")
        form.find_element(By.NAME, "workflow").send_keys(f"{name}-wf")
        form.find_element(By.NAME, "status").send_keys("API")       # case-insensitive substring
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_until(lambda: "workflow=" in browser.current_url, what="the filtered page")
        assert sorted(table_ids(browser)) == sorted(dead_ids(db, "workflow = %s", (f"{name}-wf",))) \
            == [f"{name}-b{i}" for i in range(3)]

        # the time range: since inclusive, until exclusive
        browser.get(console.url + f"/d/main/dead?action={a}&since=2026-01-01+13:00&until=2026-01-01T15:00")
        assert table_ids(browser) == [f"{name}-a2", f"{name}-a1"]
        assert browser.find_element(By.NAME, "since").get_attribute("value") == "2026-01-01 13:00"
        # status filter that matches nothing of ours
        browser.get(console.url + f"/d/main/dead?action={a}&status=timeout")
        assert table_ids(browser) == [] and browser.find_element(By.ID, "dead-empty")
        assert csp_violations(browser) == []
    finally:
        cleanup(db, name)


def test_pages_of_fifty_by_keyset(browser, console, db, name):
    act = f"{name}-p"
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb(
        [{"id": f"{name}-{i:03d}", "action": act} for i in range(57)]),))
    # cancelling a pending task aborts it at once: 57 dead letters
    assert db.execute("SELECT taskq.cancel_tasks(ARRAY(SELECT id FROM taskq.tasks WHERE action = %s))",
                      (act,)).fetchone()[0] == 57
    # ties on finished_at: the keyset goes on by id
    db.execute("UPDATE taskq.tasks SET finished_at = '2026-02-01 00:00:00+00' WHERE action = %s"
               " AND id < %s", (act, f"{name}-030"))
    try:
        browser.get(console.url + f"/d/main/dead?action={act}")
        first = table_ids(browser)
        assert len(first) == 50
        browser.find_element(By.ID, "next-page").click()
        second = table_ids(browser)
        assert first + second == dead_ids(db, "action = %s", (act,)) and len(second) == 7
        assert not browser.find_elements(By.ID, "next-page")
        assert browser.find_element(By.ID, "first-page")
    finally:
        cleanup(db, name)


def test_an_unindexed_filter_searches_a_window_at_a_time(browser, console, db, name):
    """An action's dead letters have no index: a page looks at the newest
    20,000 finished tasks, says so, and goes on from there."""
    old, new = f"{name}-old", f"{name}-new"
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb(
        [{"id": f"{name}-n{i:05d}", "action": new} for i in range(20001)]
        + [{"id": f"{name}-o", "action": old}]),))
    db.execute("SELECT taskq.cancel_tasks(ARRAY(SELECT id FROM taskq.tasks WHERE action = ANY(%s)))",
               ([old, new],))
    # older than every other finished task of the tests: 20,001 newer ones stand before it
    db.execute("UPDATE taskq.tasks SET finished_at = '2025-06-01 00:00:00+00' WHERE id = %s", (f"{name}-o",))
    try:
        browser.get(console.url + f"/d/main/dead?action={old}")
        pages = 1
        while not table_ids(browser):
            assert "looked at 20,000 finished tasks" in browser.find_element(By.ID, "searched-to").text
            link = browser.find_element(By.ID, "next-page")
            assert link.text == "search older »"
            link.click()
            pages += 1
            assert pages < 100
        assert table_ids(browser) == [f"{name}-o"] and pages >= 2
        assert not browser.find_elements(By.ID, "next-page")
    finally:
        cleanup(db, name)


def test_bad_input_is_400(console):
    s = Session(console.url)
    status, _, body = s.request("/d/main/dead?since=yesterday")
    assert status == 400 and "since:" in body
    status, _, body = s.request("/d/main/dead?after_at=nope&after_id=x")
    assert status == 400 and "after_at:" in body


# ---------------------------------------------------------------- redrive

def test_bulk_redrive_exactly_the_matching_ones(browser, console, db, name):
    a, b = f"{name}-a", f"{name}-b"
    abort_tasks(db, a, [f"{name}-a{i}" for i in range(5)], status="quota exceeded")
    abort_tasks(db, a, [f"{name}-a-other{i}" for i in range(2)], status="bad input")
    abort_tasks(db, b, [f"{name}-b{i}" for i in range(3)], status="quota exceeded")
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb([{"id": f"{name}-a-pending", "action": a}]),))
    before = states(db, name)
    try:
        browser.get(console.url + f"/d/main/dead?action={a}&status=quota")
        assert sorted(table_ids(browser)) == [f"{name}-a{i}" for i in range(5)]
        browser.find_element(By.CSS_SELECTOR, "#bulk-redrive button").click()
        count = wait_until(lambda: browser.find_elements(By.ID, "confirm-count"), what="confirmation")[0]
        assert count.get_attribute("data-count") == "5"
        assert "This will redrive 5 tasks" in count.text
        assert browser.find_element(By.ID, "confirm-filter").text == \
            f'Filter: action is "{a}" and status contains "quota".'
        assert csp_violations(browser) == []
        shot(browser, "confirm.png")
        submit_confirmed(browser, browser.find_element(By.ID, "confirm-form"))
        flash = wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, ".flash.ok"), what="the flash")
        assert flash[0].text == "redriven 5 tasks"
        after = states(db, name)
        for i in range(5):
            assert after[f"{name}-a{i}"] == ("pending", "redriven", 0)
        changed = {k for k in before if after[k] != before[k]}
        assert changed == {f"{name}-a{i}" for i in range(5)}
        assert table_ids(browser) == []        # back on the filtered list: nothing left
        log = console.logged()
        assert re.search(rf"taskq\.console\.audit INFO redrive on main by - from 127\.0\.0\.1: "
                         rf"filter='action is \"{a}\" and status contains \"quota\"', count=5", log)
    finally:
        cleanup(db, name)


def test_bulk_redrive_refuses_a_changed_set(browser, console, db, name):
    a = f"{name}-a"
    abort_tasks(db, a, [f"{name}-a{i}" for i in range(3)])
    try:
        browser.get(console.url + f"/d/main/dead/bulk?action={a}")
        assert browser.find_element(By.ID, "confirm-count").get_attribute("data-count") == "3"
        abort_tasks(db, a, [f"{name}-a-late"])           # one more matches now
        before = states(db, name)
        submit_confirmed(browser, browser.find_element(By.ID, "confirm-form"))
        msg = wait_until(lambda: browser.find_elements(By.ID, "conflict"), what="the 409 page")[0]
        assert "now matches 4 tasks, not the 3 you confirmed" in msg.text
        assert states(db, name) == before               # nothing changed
        # the same count, other tasks: refused too (the confirmation carries their digest)
        browser.get(console.url + f"/d/main/dead/bulk?action={a}")
        assert browser.find_element(By.ID, "confirm-count").get_attribute("data-count") == "4"
        db.execute("SELECT taskq.redrive_tasks(ARRAY[%s])", (f"{name}-a0",))
        abort_tasks(db, a + "x", [f"{name}-x0"])        # keep one of ours aborted elsewhere
        db.execute("UPDATE taskq.tasks SET action = %s WHERE id = %s", (a, f"{name}-x0"))
        before = states(db, name)
        submit_confirmed(browser, browser.find_element(By.ID, "confirm-form"))
        msg = wait_until(lambda: browser.find_elements(By.ID, "conflict"), what="the 409 page")[0]
        assert "now matches 4 other tasks" in msg.text
        assert states(db, name) == before
        assert "redrive refused on main" in console.logged()
    finally:
        cleanup(db, name)


def test_bulk_preview_edges(console, name):
    # the preview of a filter that matches nothing offers no form
    s = Session(console.url)
    status, _, body = s.request(f"/d/main/dead/bulk?action={name}-none")
    assert status == 200 and 'data-count="0"' in body and "confirm-form" not in body
    # a POST whose expected count is out of range is refused before any SQL
    token = s.token()
    status, _, body = s.request("/d/main/dead/bulk", {"csrf_token": token, "action": name,
                                                      "expected": "10001", "digest": ""})
    assert status == 400 and "expected:" in body


def test_redrive_one(browser, console, db, name):
    a = f"{name}-a"
    abort_tasks(db, a, [f"{name}-1", f"{name}-2"])
    try:
        browser.get(console.url + f"/d/main/dead?action={a}")
        form = browser.find_element(By.CSS_SELECTOR, f"#dead tr[data-id='{name}-2'] form.redrive")
        submit_confirmed(browser, form)
        flash = wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, ".flash"), what="the flash")
        assert flash[0].text == f"redriven task {name}-2"
        assert f"/d/main/dead?action={a}" in browser.current_url      # back where it was
        assert states(db, name) == {f"{name}-1": ("aborted", "boom", 1),
                                    f"{name}-2": ("pending", "redriven", 0)}
        assert table_ids(browser) == [f"{name}-1"]
        assert f"redrive task on main by - from 127.0.0.1: id='{name}-2'" in console.logged()
    finally:
        cleanup(db, name)


def test_cancel_task(console, db, name):
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb([{"id": f"{name}-1", "action": name}]),))
    s = Session(console.url)
    try:
        status, headers, _ = s.request("/d/main/cancel-task", {"csrf_token": s.token(), "id": f"{name}-1",
                                                               "next": "/d/main/dead"})
        assert status == 302 and headers["Location"].endswith("/d/main/dead")
        assert states(db, name) == {f"{name}-1": ("aborted", "cancelled", 0)}
        assert s.flashes("/d/main/dead") == [("ok", f"cancelled task {name}-1")]
        # a finished task: cancel_tasks skips it, and the console says so
        s.request("/d/main/cancel-task", {"csrf_token": s.token(), "id": f"{name}-1"})
        assert s.flashes("/d/main/dead") == [("ok", f"task {name}-1 was not cancelled: it is finished already")]
        # an outside "next" is not followed
        status, headers, _ = s.request("/d/main/cancel-task", {"csrf_token": s.token(), "id": f"{name}-1",
                                                               "next": "//evil.example/"})
        assert status == 302 and "evil" not in headers["Location"]
    finally:
        cleanup(db, name)


# ---------------------------------------------------------------- runs

def failed_run(db, name):
    """A machine whose first state fails: the run ends failed."""
    machine = f"{name}-m"
    db.execute("SELECT taskq.define_machine(%s, %s)", (machine, Jsonb({"states": [
        {"name": "Check", "action": f"{name}-check", "initial": True,
         "transitions": [{"event": "ok", "to": "Done"}]},
        {"name": "Done", "action": f"{name}-done", "final": True}]})))
    run = f"{name}-r"
    db.execute("SELECT taskq.start_machine(%s, %s, '{}')", (machine, run))
    id, token = db.execute("SELECT id, token FROM taskq.own_tasks(%s, 1, ARRAY[%s])",
                           (f"{name}-w", f"{name}-check")).fetchone()
    db.execute("SELECT taskq.return_task(%s, %s, 'no stock', 'aborted')", (id, token))
    assert db.execute("SELECT status FROM taskq.runs WHERE id = %s", (run,)).fetchone()[0] == "failed"
    return run


def run_status(db, run):
    return tuple(db.execute("SELECT status, state FROM taskq.runs WHERE id = %s", (run,)).fetchone())


def test_redrive_and_cancel_a_run(browser, console, db, name):
    run = failed_run(db, name)
    s = Session(console.url)
    try:
        # its failed step is a dead letter, redriven only with its run
        browser.get(console.url + f"/d/main/dead?workflow={run}")
        row = browser.find_element(By.CSS_SELECTOR, f"#dead tr[data-id='{run}/1']")
        assert not row.find_elements(By.TAG_NAME, "form")
        assert row.find_element(By.CSS_SELECTOR, "[data-run]").get_attribute("data-run") == run
        status, _, body = s.request(f"/d/main/dead/bulk?workflow={run}")
        assert 'data-count="0"' in body and 'id="confirm-steps"' in body

        status, headers, _ = s.request(f"/d/main/runs/{run}/redrive",
                                       {"csrf_token": s.token(), "next": "/d/main/dead"})
        assert status == 302
        assert run_status(db, run) == ("running", "Check")
        assert s.flashes("/d/main/dead") == [("ok", f"run {run} redriven: Check")]
        # redriving a run that is not failed: the database refuses; a message, not a 502
        status, headers, _ = s.request(f"/d/main/runs/{run}/redrive", {"csrf_token": s.token()})
        assert status == 302 and headers["Location"].endswith("/d/main/runs")
        [(category, text)] = s.flashes("/d/main/dead")
        assert category == "error" and text.startswith(f"redrive run {run}: ") and "(SQLSTATE 55000)" in text
        assert run_status(db, run) == ("running", "Check")

        status, _, _ = s.request(f"/d/main/runs/{run}/cancel", {"csrf_token": s.token()})
        assert status == 302 and run_status(db, run)[0] == "cancelled"
        assert s.flashes("/d/main/dead") == [("ok", f"run {run}: cancelled")]
        s.request(f"/d/main/runs/{run}/cancel", {"csrf_token": s.token()})
        [(category, text)] = s.flashes("/d/main/dead")
        assert category == "error" and "(SQLSTATE 55000)" in text
        log = console.logged()
        assert f"redrive run on main by - from 127.0.0.1: id='{run}', result='Check'" in log
        assert f"cancel run on main by - from 127.0.0.1: id='{run}', result='cancelled'" in log
    finally:
        db.execute("DELETE FROM taskq.runs WHERE id = %s", (run,))
        cleanup(db, name)


def test_the_task_and_run_pages_act(browser, console, console_ro, db, name):
    """The buttons of a task's page and a run's page, clicked in the browser."""
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb([{"id": f"{name}-p", "action": name}]),))
    abort_tasks(db, f"{name}-a", [f"{name}-d"])
    run = failed_run(db, name)
    try:
        browser.get(console.url + f"/d/main/tasks/{name}-p")
        assert not browser.find_elements(By.ID, "redrive-task")
        submit_confirmed(browser, browser.find_element(By.ID, "cancel-task"))
        wait_until(lambda: states(db, name)[f"{name}-p"][0] == "aborted", what="the task cancelled")
        assert states(db, name)[f"{name}-p"][1] == "cancelled"
        assert not browser.find_elements(By.ID, "cancel-task"), "back on the page, finished now"

        browser.get(console.url + f"/d/main/tasks/{name}-d")
        submit_confirmed(browser, browser.find_element(By.ID, "redrive-task"))
        wait_until(lambda: states(db, name)[f"{name}-d"][0] == "pending", what="the task redriven")

        browser.get(console.url + f"/d/main/tasks/{run}/1")      # a step: act on its run
        assert not browser.find_elements(By.CSS_SELECTOR, "#task-actions form")
        browser.get(console.url + f"/d/main/runs/{run}")
        submit_confirmed(browser, browser.find_element(By.ID, "redrive-run"))
        wait_until(lambda: run_status(db, run) == ("running", "Check"), what="the run redriven")
        assert not browser.find_elements(By.ID, "redrive-run")
        submit_confirmed(browser, browser.find_element(By.ID, "cancel-run"))
        wait_until(lambda: run_status(db, run)[0] == "cancelled", what="the run cancelled")
        assert not browser.find_elements(By.CSS_SELECTOR, "#run-actions form")
        assert csp_violations(browser) == []

        for path in (f"/d/main/tasks/{name}-d", f"/d/main/runs/{run}"):   # read-only: no buttons
            browser.get(console_ro.url + path)
            assert browser.find_elements(By.CSS_SELECTOR, "form[method=post]") == [], path
    finally:
        db.execute("DELETE FROM taskq.runs WHERE id = %s", (run,))
        cleanup(db, name)


# ---------------------------------------------------------------- safety

def test_read_only_sees_no_controls_and_is_refused(browser, console_ro, db, name):
    a = f"{name}-a"
    abort_tasks(db, a, [f"{name}-1"])
    run = failed_run(db, name)
    before, run_before = states(db, name), run_status(db, run)
    try:
        browser.get(console_ro.url + f"/d/main/dead?action={a}")
        assert table_ids(browser) == [f"{name}-1"]
        assert browser.find_elements(By.CSS_SELECTOR, "form[method=post]") == []
        assert browser.find_elements(By.ID, "bulk-redrive") == []
        assert [b.text for b in browser.find_elements(By.CSS_SELECTOR, "main button")] == ["Filter"]
        s = Session(console_ro.url)
        token = s.token()
        assert s.request(f"/d/main/dead/bulk?action={a}")[0] == 403
        for path, data in (("/d/main/dead/redrive", {"id": f"{name}-1"}),
                           ("/d/main/dead/bulk", {"action": a, "expected": "1", "digest": ""}),
                           ("/d/main/cancel-task", {"id": f"{name}-1"}),
                           (f"/d/main/runs/{run}/redrive", {}),
                           (f"/d/main/runs/{run}/cancel", {})):
            status, _, body = s.request(path, dict(data, csrf_token=token))
            assert status == 403 and "read-only" in body, path
        assert states(db, name) == before and run_status(db, run) == run_before
    finally:
        db.execute("DELETE FROM taskq.runs WHERE id = %s", (run,))
        cleanup(db, name)


def test_forged_posts_are_refused(console, db, name):
    a = f"{name}-a"
    abort_tasks(db, a, [f"{name}-1"])
    before = states(db, name)
    try:
        mine, other = Session(console.url), Session(console.url)
        mine.token()                                   # a session of its own
        other_token = other.token()
        for data in ({"id": f"{name}-1"},                              # no token
                     {"id": f"{name}-1", "csrf_token": other_token},   # another session's
                     {"id": f"{name}-1", "csrf_token": "forged"}):
            status, _, body = mine.request("/d/main/dead/redrive", data)
            assert status == 403 and "refused" in body, data
        # no session at all
        status, _, _ = Session(console.url).request("/d/main/dead/redrive",
                                                    {"id": f"{name}-1", "csrf_token": other_token})
        assert status == 403
        assert states(db, name) == before
        # the same POST with this session's token goes through
        status, _, _ = mine.request("/d/main/dead/redrive", {"id": f"{name}-1", "csrf_token": mine.token()})
        assert status == 302 and states(db, name)[f"{name}-1"][0] == "pending"
    finally:
        cleanup(db, name)


def test_writes_are_post_only(console):
    s = Session(console.url)
    # (a GET of /d/main/runs/<id>/cancel is the runs page's to answer: a run's path may hold '/')
    for path in ("/d/main/dead/redrive", "/d/main/cancel-task"):
        assert s.request(path)[0] == 405, path
