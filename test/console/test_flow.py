"""The Limits and schedules page shows taskq.limits and taskq.schedules as
SQL reads them, and the SQL that makes each row; a schedule's task (which
carries the body of the tasks it inserts) only to a role that reads bodies."""

import json
import os
import sys
from datetime import timedelta

import pytest
from psycopg.types.json import Jsonb
from selenium.webdriver.common.by import By

from conftest import CONSOLE, Console, csp_violations, role_dsn, shot

sys.path.insert(0, os.path.dirname(CONSOLE))
from taskq_console.flow import sql_literal  # noqa: E402


@pytest.fixture(scope="module")
def consoles(dsn, roles):
    """An admin's and a monitor's console that do not reload while a test reads."""
    out = {k: Console([("main", role_dsn(dsn, roles[k]))], extra=["--refresh", "300"])
           for k in ("admin", "monitor")}
    yield out
    for c in out.values():
        c.stop()


def cells(row):
    return {c.get_attribute("data-col"): c for c in row.find_elements(By.CSS_SELECTOR, "td[data-col]")}


def test_limits_and_schedules_match_the_views(browser, consoles, db, name):
    console, console_ro = consoles["admin"], consoles["monitor"]
    both, rate = f"{name}-both", f"{name}'rate"          # a quote, for the SQL shown
    sched = f"{name}/nightly"
    db.execute("SELECT taskq.set_concurrency_limit(%s, 2, 1)", (both,))
    db.execute("SELECT taskq.set_rate_limit(%s, 5, '30 seconds')", (both,))
    db.execute("SELECT taskq.set_rate_limit(%s, 100, '1 hour', true)", (rate,))
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb(
        [{"id": f"{name}-{i}", "action": both, "concurrency_key": f"k{i}"} for i in range(4)]),))
    claimed = db.execute("SELECT id, token FROM taskq.own_tasks(%s, 4, ARRAY[%s], '1 hour')",
                         (f"{name}-actor", both)).fetchall()
    assert len(claimed) == 2                              # max_running
    db.execute("SELECT taskq.return_tasks(ARRAY[%s], ARRAY[%s]::uuid[], NULL,"
               " ARRAY['completed']::taskq.status[])", claimed[0])   # 1 running, 2 claims
    task = {"action": f"{name}-report", "body": {"to": "<b>ops</b>"}, "priority": 3}
    db.execute("SELECT taskq.schedule(%s, '30 2 * * 1-5', %s, 'Europe/Berlin', 'all')",
               (sched, Jsonb(task)))
    db.execute("UPDATE taskq.schedule_registry SET last_tick = now() - interval '1 day'"
               " WHERE name = %s", (sched,))
    try:
        browser.get(console.url + "/d/main/flow")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Limits and schedules"
        view = {r[0]: r for r in db.execute(
            "SELECT action, max_running, max_running_per_key, rate_max, rate_per, by_key,"
            " running, window_claims FROM taskq.limits WHERE action IN (%s, %s)", (both, rate))}
        assert view[both][6] == 1 and view[both][7] == 2
        for action in (both, rate):
            _, max_running, per_key, rate_max, rate_per, by_key, running, claims = view[action]
            row = browser.find_element(By.CSS_SELECTOR, f"#limits tr[data-action=\"{action}\"]")
            c = cells(row)
            blank = lambda v: "" if v is None else str(v)      # noqa: E731
            assert c["running"].text == str(running)
            assert c["max_running"].text == blank(max_running)
            assert c["max_running_per_key"].text == blank(per_key)
            assert c["window_claims"].text == blank(claims)
            assert c["rate"].get_attribute("data-max") == str(rate_max)
            assert c["rate"].get_attribute("data-per-seconds") == str(int(rate_per.total_seconds()))
            assert c["by_key"].text == ("per key" if by_key else "in all")
        assert cells(browser.find_element(By.CSS_SELECTOR, f"#limits tr[data-action=\"{both}\"]"))[
            "rate"].text == "5 per 30 s"
        assert cells(browser.find_element(By.CSS_SELECTOR, f"#limits tr[data-action=\"{rate}\"]"))[
            "rate"].text == "100 per 1 h"
        # the SQL shown makes the same limits again
        row = browser.find_element(By.CSS_SELECTOR, f"#limits tr[data-action=\"{rate}\"]")
        shown_sql = row.find_element(By.CSS_SELECTOR, "code[data-sql='set']").text
        assert shown_sql == (f"SELECT taskq.set_rate_limit({sql_literal(rate)}, 100, "
                             f"'3600 seconds', true);")
        db.execute("SELECT taskq.clear_limits(%s)", (rate,))
        db.execute(shown_sql)
        assert db.execute("SELECT rate_max, rate_per, by_key FROM taskq.limits WHERE action = %s",
                          (rate,)).fetchone() == (100, timedelta(hours=1), True)

        s = db.execute("SELECT cron, time_zone, catch_up, task->>'action', last_tick, next_tick,"
                       " (next_tick AT TIME ZONE time_zone) FROM taskq.schedules WHERE name = %s",
                       (sched,)).fetchone()
        browser.get(console.url + "/d/main/flow")
        row = browser.find_element(By.CSS_SELECTOR, f"#schedules tr[data-schedule=\"{sched}\"]")
        c = cells(row)
        assert [c[k].text for k in ("cron", "time_zone", "catch_up", "action")] == list(s[:4])
        assert c["last_tick"].text.startswith(s[4].strftime("%Y-%m-%d %H:%M:%S"))
        assert c["last_tick"].text.endswith("(1 d 0 h ago)")
        assert c["next_tick"].text.startswith(s[5].strftime("%Y-%m-%d %H:%M:%S") + " (in ")
        assert c["next_local"].text == s[6].strftime("%Y-%m-%d %H:%M:%S")
        assert s[6].strftime("%H:%M") == "02:30"
        extra = browser.find_element(By.CSS_SELECTOR, f"tr[data-schedule-sql=\"{sched}\"]")
        task_shown = extra.find_element(By.CSS_SELECTOR, "pre[data-col='task']").text
        assert json.loads(task_shown) == task
        assert extra.find_element(By.CSS_SELECTOR, "code[data-sql='clear']").text == \
            f"SELECT taskq.unschedule({sql_literal(sched)});"
        assert csp_violations(browser) == []
        shot(browser, "flow.png")

        # a monitor sees the schedule and its action, not its task's body
        browser.get(console_ro.url + "/d/main/flow")
        extra = browser.find_element(By.CSS_SELECTOR, f"tr[data-schedule-sql=\"{sched}\"]")
        assert not extra.find_elements(By.CSS_SELECTOR, "pre[data-col='task']")
        assert "<b>ops</b>" not in browser.page_source and "&lt;b&gt;ops" not in browser.page_source
        assert cells(browser.find_element(By.CSS_SELECTOR, f"#schedules tr[data-schedule=\"{sched}\"]"))[
            "action"].text == f"{name}-report"
        assert browser.find_element(By.ID, "role").text.endswith("read-only")
        assert csp_violations(browser) == []
    finally:
        db.execute("SELECT taskq.clear_limits(%s)", (both,))
        db.execute("SELECT taskq.clear_limits(%s)", (rate,))
        db.execute("SELECT taskq.unschedule(%s)", (sched,))
        db.execute("DELETE FROM taskq.tasks WHERE id LIKE %s", (f"{name}-%",))
    browser.get(console.url + "/d/main/flow")
    assert not browser.find_elements(By.CSS_SELECTOR, f"#limits tr[data-action=\"{both}\"]")
    assert not browser.find_elements(By.CSS_SELECTOR, f"#schedules tr[data-schedule=\"{sched}\"]")
