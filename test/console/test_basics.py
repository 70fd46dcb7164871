"""The console as a whole: it starts, probes, protects itself, and the
Workers page shows the registry as SQL sees it."""

import psycopg
from selenium.webdriver.common.by import By

from conftest import Console, csp_violations, http, role_dsn, shot


def test_healthz_and_headers(console):
    status, headers, body = http(console.url + "/healthz")
    assert (status, body) == (200, "ok\n")
    status, headers, body = http(console.url + "/d/main/workers")
    assert status == 200
    csp = headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_unknown_database_is_404(console):
    status, _, body = http(console.url + "/d/nosuch/workers")
    assert status == 404 and "no database &#34;nosuch&#34;" in body


def test_a_statement_over_the_timeout_is_a_503_that_says_so(console, dsn):
    """A page whose statement waits past the console's statement timeout (here
    on a lock another session holds) answers 503 with what it means."""
    with psycopg.connect(dsn) as other:
        other.execute("LOCK TABLE taskq.definitions IN ACCESS EXCLUSIVE MODE")
        status, _, body = http(console.url + "/d/main/definitions")
        other.rollback()
    assert status == 503, body
    assert "too slow" in body and "did not answer within 5 s" in body and "57014" in body
    # and the next request is served as usual
    assert http(console.url + "/d/main/definitions")[0] == 200


def test_healthz_names_a_database_that_is_down(dsn, roles):
    bad = psycopg.conninfo.make_conninfo(dsn, port="1", host="127.0.0.1", connect_timeout="2")
    c = Console([("main", role_dsn(dsn, roles["admin"])), ("gone", bad)])
    try:
        status, _, body = http(c.url + "/healthz")
        assert status == 503 and "gone:" in body and "main:" not in body
    finally:
        c.stop()


def test_basic_auth(dsn, roles, tmp_path):
    f = tmp_path / "auth"
    f.write_text("ops:s3cret\n")
    c = Console([("main", role_dsn(dsn, roles["monitor"]))], extra=["--basic-auth-file", str(f)])
    try:
        assert http(c.url + "/healthz")[0] == 200, "probes need no password"
        assert http(c.url + "/d/main/workers")[0] == 401
        import base64
        good = {"Authorization": "Basic " + base64.b64encode(b"ops:s3cret").decode()}
        bad = {"Authorization": "Basic " + base64.b64encode(b"ops:wrong").decode()}
        assert http(c.url + "/d/main/workers", headers=good)[0] == 200
        assert http(c.url + "/d/main/workers", headers=bad)[0] == 401
    finally:
        c.stop()


def test_role_shown(browser, console, console_ro, roles):
    browser.get(console.url + "/d/main/workers")
    assert browser.find_element(By.ID, "role").text == f"{roles['admin']} · admin"
    browser.get(console_ro.url + "/d/main/workers")
    assert browser.find_element(By.ID, "role").text == f"{roles['monitor']} · read-only"


def test_workers_page_matches_the_registry(browser, console, db, name):
    db.execute("SELECT taskq.worker_heartbeat(%s, %s)",
               (f"{name}-live", psycopg.types.json.Jsonb(
                   {"actor": f"{name}-a", "host": "h1", "pid": 42, "actions": ["x", "y"],
                    "concurrency": 4, "heartbeat_interval": 3600})))
    db.execute("SELECT taskq.worker_heartbeat(%s, %s)",
               (f"{name}-old", psycopg.types.json.Jsonb({"actor": f"{name}-b", "heartbeat_interval": 1})))
    db.execute("UPDATE taskq.worker_registry SET last_seen = now() - interval '1 hour'"
               " WHERE worker_id = %s", (f"{name}-old",))
    db.execute("SELECT taskq.insert_tasks(%s)", (psycopg.types.json.Jsonb(
        [{"id": f"{name}-t{i}", "action": f"{name}-x"} for i in range(3)]),))
    db.execute("SELECT * FROM taskq.own_tasks(%s, 2, ARRAY[%s], '1 hour')",
               (f"{name}-a", f"{name}-x"))
    browser.get(console.url + "/d/main/workers")
    rows = {r.get_attribute("data-worker"): r
            for r in browser.find_elements(By.CSS_SELECTOR, "#workers tr[data-worker]")}
    live, old = rows[f"{name}-live"], rows[f"{name}-old"]
    cells = [c.text for c in live.find_elements(By.TAG_NAME, "td")]
    assert cells[1:5] == [f"{name}-a", "h1", "42", ""] and cells[5] == "x, y"
    assert cells[6:8] == ["4", "2"] and cells[-1] == "live"
    assert "flag" in old.get_attribute("class") and old.find_elements(By.TAG_NAME, "td")[-1].text == "stale"
    held = browser.find_element(By.XPATH, f"//tr[@data-worker='{name}-live']/following-sibling::tr[1]")
    assert sorted(a.text for a in held.find_elements(By.TAG_NAME, "a")) == \
        sorted(r[0] for r in db.execute("SELECT id FROM taskq.tasks WHERE actor_id = %s"
                                        " AND status_code = 'in_progress'", (f"{name}-a",)))
    assert csp_violations(browser) == []
    shot(browser, "workers.png")
    db.execute("DELETE FROM taskq.worker_registry WHERE worker_id LIKE %s", (f"{name}-%",))
    db.execute("DELETE FROM taskq.tasks WHERE id LIKE %s", (f"{name}-%",))


def test_hostile_worker_fields_are_text(browser, console, db, name):
    hostile = "<script>document.title='owned'</script><b>x</b>"
    db.execute("SELECT taskq.worker_heartbeat(%s, %s)",
               (f"{name}-h", psycopg.types.json.Jsonb({"actor": hostile, "host": hostile})))
    browser.get(console.url + "/d/main/workers")
    row = browser.find_element(By.CSS_SELECTOR, f"#workers tr[data-worker='{name}-h']")
    assert row.find_elements(By.TAG_NAME, "td")[1].text == hostile
    assert browser.title != "owned" and not row.find_elements(By.TAG_NAME, "b")
    db.execute("DELETE FROM taskq.worker_registry WHERE worker_id = %s", (f"{name}-h",))
