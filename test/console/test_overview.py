"""The Overview page: gauges per action as taskq.metrics() has them, rates
from the console's samples of the counters, the stuck flag, and the
sampler's window and reset arithmetic (plain pytest, no browser).

The test cluster runs without taskq's background worker, so nothing
refreshes the gauges of taskq.metrics() by itself: the fixture `gauges`
does what the worker does every taskq.metrics_interval (queue/gauges.c and
worker/loop.c: replace the rows of taskq.metric_gauges with the counts of
the task rows), in a thread, every half second, while a test runs.
"""

import os
import sys
import threading
from datetime import datetime, timezone

import psycopg
import pytest
from psycopg.types.json import Jsonb
from selenium.webdriver.common.by import By

from conftest import CONSOLE, Console, csp_violations, role_dsn, shot, wait_until

sys.path.insert(0, os.path.dirname(CONSOLE))
from taskq_console.sampler import MINUTES, Sampler  # noqa: E402

SAMPLE_SECONDS = 0.5
STUCK_SECONDS = 4.0

# What taskq's background worker writes into taskq.metric_gauges at each refresh.
REFRESH_GAUGES = """
WITH r AS (
  SELECT t.action,
         count(*) FILTER (WHERE t.not_before <= now()) AS ready,
         count(*) FILTER (WHERE t.not_before > now()) AS delayed,
         min(t.not_before) FILTER (WHERE t.not_before <= now()) AS oldest
    FROM taskq.tasks AS t WHERE t.status_code = 'pending' AND t.num_signals = 0 GROUP BY t.action),
 b AS (SELECT t.action, count(*) AS n FROM taskq.tasks AS t
        WHERE t.status_code = 'pending' AND t.num_signals > 0 GROUP BY t.action),
 p AS (SELECT t.action, count(*) AS n FROM taskq.tasks AS t
        WHERE t.status_code = 'in_progress' GROUP BY t.action)
INSERT INTO taskq.metric_gauges (name, action, value, refreshed_at)
SELECT g.name, g.action, g.value, now() FROM (
  SELECT 'taskq_tasks_ready' AS name, r.action, r.ready::float8 AS value FROM r
  UNION ALL SELECT 'taskq_tasks_delayed', r.action, r.delayed::float8 FROM r
  UNION ALL SELECT 'taskq_oldest_ready_age_seconds', r.action,
         COALESCE(date_part('epoch', now() - r.oldest), 0) FROM r
  UNION ALL SELECT 'taskq_tasks_blocked', b.action, b.n::float8 FROM b
  UNION ALL SELECT 'taskq_tasks_in_progress', p.action, p.n::float8 FROM p) AS g
 WHERE g.value <> 0
"""
REFRESH_WORKERS = """
INSERT INTO taskq.metric_gauges (name, action, value, refreshed_at)
SELECT v.name, '', v.value, now()
  FROM (SELECT count(*) FILTER (WHERE NOT s.stale) AS live, count(*) FILTER (WHERE s.stale) AS stale
          FROM (SELECT w.heartbeat_interval * 3::float8 + w.last_seen < now() AS stale
                  FROM taskq.worker_registry AS w) AS s) AS c,
       LATERAL (VALUES ('taskq_workers_live', c.live::float8),
                       ('taskq_workers_stale', c.stale::float8)) AS v(name, value)
"""


def refresh_gauges(conn):
    with conn.transaction():
        conn.execute("DELETE FROM taskq.metric_gauges")
        conn.execute(REFRESH_GAUGES)
        conn.execute(REFRESH_WORKERS)


@pytest.fixture
def gauges(dsn):
    """The background worker's refresh of the gauges, every half second."""
    stop = threading.Event()
    failure = []

    def loop():
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                while not stop.is_set():
                    refresh_gauges(conn)
                    stop.wait(0.5)
        except Exception as e:      # noqa: BLE001 — surfaced in the test's thread
            failure.append(e)
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    yield
    stop.set()
    t.join(10)
    if failure:
        raise failure[0]


@pytest.fixture(scope="module")
def fast(dsn, roles):
    """taskq-console (admin) sampling every half second, flagging after 4 s."""
    c = Console([("main", role_dsn(dsn, roles["admin"]))],
                extra=["--refresh", "300",          # no reload while a test reads the page
                       "--sample-seconds", str(SAMPLE_SECONDS),
                       "--stuck-minutes", str(STUCK_SECONDS / 60)])
    yield c
    c.stop()


def cleanup(db, name):
    db.execute("DELETE FROM taskq.tasks WHERE id LIKE %s", (f"{name}-%",))


def metrics_of(db, action, counts_only=False):
    """{metric name: value} of taskq.metrics() for one action (counts_only:
    without the oldest ready task's age, which grows at each refresh)."""
    return {n: v for n, v in db.execute(
        "SELECT name, value FROM taskq.metrics() WHERE labels->>'action' = %s", (action,))
        if not (counts_only and n == "taskq_oldest_ready_age_seconds")}


def row_of(browser, table, action):
    rows = browser.find_elements(By.CSS_SELECTOR, f"#{table} tr[data-action='{action}']")
    return rows[0] if rows else None


def gauge_cells(browser, action):
    row = row_of(browser, "queue", action)
    if row is None:
        return None
    return {c.get_attribute("data-gauge"): c.text
            for c in row.find_elements(By.CSS_SELECTOR, "td[data-gauge]")}


def insert(db, tasks):
    db.execute("SELECT taskq.insert_tasks(%s)", (Jsonb(tasks),))


def own(db, actor, n, action, lease="1 hour"):
    return db.execute("SELECT id, token FROM taskq.own_tasks(%s, %s, ARRAY[%s], %s)",
                      (actor, n, action, lease)).fetchall()


def give_back(db, owned, status):
    db.execute("SELECT taskq.return_tasks(%s, %s, NULL, %s::taskq.status[])",
               ([i for i, _ in owned], [t for _, t in owned], [status] * len(owned)))


# ------------------------------------------------------------------ the page

def test_gauges_match_metrics(browser, fast, db, name, gauges):
    a, p = f"{name}-a", f"{name}-p"
    future = "2099-01-01 00:00+00"
    insert(db, [{"id": f"{name}-r{i}", "action": a} for i in range(3)]
           + [{"id": f"{name}-d{i}", "action": a, "not_before": future} for i in range(2)]
           + [{"id": f"{name}-b", "action": a},
              {"id": f"{name}-pre", "action": p, "to_signal_after": [f"{name}-b"]}])
    insert(db, [{"id": f"{name}-w{i}", "action": a} for i in range(4)])
    owned = own(db, f"{name}-actor", 4, a)        # 4 in progress, of 10 ready ones
    give_back(db, owned[:1], "aborted")           # 1 aborted
    db.execute("UPDATE taskq.tasks SET action_deadline = now() - interval '1 minute'"
               " WHERE id = %s", (owned[1][0],))   # 1 lease expired (no sweep here)
    try:
        def settled():
            # the gauges as SQL reads them just before and just after the page
            before = metrics_of(db, a, counts_only=True)
            browser.get(fast.url + "/d/main/")
            shown = gauge_cells(browser, a)
            m = metrics_of(db, a, counts_only=True)
            if shown is None or m != before or shown["in_progress"] != "3":
                return None
            return shown, m
        shown, m = wait_until(settled, what="the gauges refreshed and shown")
        expired = db.execute("SELECT count(*) FROM taskq.tasks_in_progress"
                             " WHERE action = %s AND lease_expired", (a,)).fetchone()[0]
        want = {"ready": m["taskq_tasks_ready"], "delayed": m["taskq_tasks_delayed"],
                "blocked": m["taskq_tasks_blocked"], "in_progress": m["taskq_tasks_in_progress"],
                "aborted": m["taskq_tasks_aborted_total"], "lease_expired": expired}
        assert {k: int(v) for k, v in want.items()} == \
            {"ready": 3, "delayed": 2, "blocked": 1, "in_progress": 3, "aborted": 1, "lease_expired": 1}
        assert {k: shown[k] for k in want} == {k: str(int(v)) for k, v in want.items()}
        # the oldest ready task's age: as taskq.metrics() has it, give or take the refreshes
        age = row_of(browser, "queue", a).find_element(
            By.CSS_SELECTOR, "td[data-gauge='oldest_ready_age']")
        oldest = metrics_of(db, a)["taskq_oldest_ready_age_seconds"]
        assert 0 < float(age.get_attribute("data-value")) <= oldest < float(age.get_attribute("data-value")) + 5
        assert gauge_cells(browser, p)["ready"] == str(int(metrics_of(db, p)["taskq_tasks_ready"]))
        # the figures without an action, and how fresh the gauges are
        glob = {n: v for n, v in db.execute(
            "SELECT name, value FROM taskq.metrics() WHERE name IN"
            " ('taskq_workers_live', 'taskq_workers_stale', 'taskq_gauges_age_seconds')")}
        assert browser.find_element(By.ID, "workers-live").text == str(int(glob["taskq_workers_live"]))
        assert browser.find_element(By.ID, "workers-stale").text == str(int(glob["taskq_workers_stale"]))
        shown_age = float(browser.find_element(By.ID, "gauges-age").get_attribute("data-seconds"))
        assert 0 <= shown_age < 5 and glob["taskq_gauges_age_seconds"] < 5
        assert csp_violations(browser) == []
    finally:
        cleanup(db, name)


def test_rates_count_what_completed(browser, fast, db, name, gauges):
    a = f"{name}-c"
    k = 6
    insert(db, [{"id": f"{name}-{i}", "action": a} for i in range(k + 2)])
    try:
        give_back(db, own(db, f"{name}-actor", k, a), "completed")
        give_back(db, own(db, f"{name}-actor", 2, a), "aborted")

        def shown():
            browser.get(fast.url + "/d/main/")
            row = row_of(browser, "rates", a)
            if row is None:
                return None
            cells = {(c.get_attribute("data-window"), c.get_attribute("data-rate")): c
                     for c in row.find_elements(By.CSS_SELECTOR, "td[data-rate]")}
            if cells[("1h", "completed")].get_attribute("data-count") != str(k):
                return None
            return cells
        cells = wait_until(shown, what="the completions sampled")
        # per minute over the window's 60 minutes, two decimals below 10
        assert cells[("1h", "completed")].find_element(By.CLASS_NAME, "now").text == f"{k / 60:.2f}"
        assert cells[("1h", "enqueued")].get_attribute("data-count") == str(k + 2)
        assert cells[("1h", "failed")].get_attribute("data-count") == "2"
        assert cells[("1h", "failed")].find_element(By.CLASS_NAME, "now").text == f"{2 / 60:.2f}"
        assert cells[("6h", "completed")].find_element(By.CLASS_NAME, "now").text == f"{k / 360:.2f}"
        assert cells[("24h", "completed")].get_attribute("data-count") == str(k)
        assert cells[("1h", "expired")].get_attribute("data-count") == "0"
        # the console started a moment ago: every window is partial, the ones before unseen
        header = browser.find_element(By.CSS_SELECTOR, "#rates th[data-window='1h']")
        assert header.get_attribute("data-covered") == "partial"
        assert "since " in header.text and "before: not seen" in header.text
        assert cells[("1h", "completed")].find_element(By.CLASS_NAME, "prev").text == "—"
        # the chart of the last hour has the k completed and 2 failed in this minute's bar
        bars = row_of(browser, "queue", a).find_elements(By.CSS_SELECTOR, "svg g[data-completed]")
        assert sum(int(b.get_attribute("data-completed")) for b in bars) == k
        assert sum(int(b.get_attribute("data-failed")) for b in bars) == 2
        assert csp_violations(browser) == []
    finally:
        cleanup(db, name)


def test_stuck_flag(browser, fast, db, dsn, name, gauges):
    stuck, busy = f"{name}-stuck", f"{name}-busy"
    insert(db, [{"id": f"{name}-s", "action": stuck}]
           + [{"id": f"{name}-b{i}", "action": busy} for i in range(40)])
    own(db, f"{name}-actor", 1, stuck)                  # claimed, never returned
    own(db, f"{name}-actor", 1, busy)                   # held, while others complete
    stop = threading.Event()

    def complete_busy():
        with psycopg.connect(dsn, autocommit=True) as conn:
            while not stop.is_set():
                owned = own(conn, f"{name}-actor2", 1, busy)
                if owned:
                    give_back(conn, owned, "completed")
                stop.wait(1.0)
    t = threading.Thread(target=complete_busy, daemon=True)
    t.start()
    try:
        def flagged():
            browser.get(fast.url + "/d/main/")
            row = row_of(browser, "queue", stuck)
            return row is not None and row.get_attribute("data-stuck") == "1"
        wait_until(flagged, timeout=STUCK_SECONDS + 20, what="the stuck flag")
        row = row_of(browser, "queue", stuck)
        assert "flag" in row.get_attribute("class")
        assert row.find_element(By.CSS_SELECTOR, "[data-flag='stuck']").text.startswith("⚑ stuck: 1 in progress")
        other = row_of(browser, "queue", busy)
        assert other.get_attribute("data-stuck") is None and not other.find_elements(By.CSS_SELECTOR, "[data-flag]")
        assert int(gauge_cells(browser, busy)["in_progress"]) >= 1
        assert csp_violations(browser) == []
        shot(browser, "overview.png")
    finally:
        stop.set()
        t.join(10)
        cleanup(db, name)


def test_idle_actions_hidden_until_asked(browser, fast, db, name):
    idle = f"{name}-idle"
    db.execute("SELECT taskq.set_action_policy(%s, 3)", (idle,))   # listed by metrics(), all 0
    try:
        assert metrics_of(db, idle)["taskq_tasks_inserted_total"] == 0
        browser.get(fast.url + "/d/main/")
        assert row_of(browser, "queue", idle) is None and row_of(browser, "rates", idle) is None
        browser.find_element(By.ID, "show-idle").click()
        assert browser.current_url.endswith("/d/main/?all=1")
        assert gauge_cells(browser, idle) == {k: "0" for k in (
            "ready", "delayed", "blocked", "in_progress", "lease_expired", "aborted")} | {
            "oldest_ready_age": ""}
        assert csp_violations(browser) == []
    finally:
        db.execute("DELETE FROM taskq.action_policies WHERE action = %s", (idle,))


def test_read_only_console_shows_the_overview(browser, console_ro):
    browser.get(console_ro.url + "/d/main/")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Overview"
    assert browser.find_elements(By.ID, "gauges-age")
    assert csp_violations(browser) == []


# ------------------------------------------------------------- the sampler

T0 = 1_800_000_000.0 - 1_800_000_000.0 % 3600       # an hour's start


def rows(started="s1", **values):
    names = {"completed": "taskq_tasks_completed_total", "failed": "taskq_tasks_aborted_total",
             "enqueued": "taskq_tasks_inserted_total", "expired": "taskq_tasks_expired_total"}
    return [{"name": names[k.split("__")[0]], "action": k.split("__")[1], "value": float(v),
             "started": started} for k, v in values.items()]


def test_sampler_increase_and_windows():
    s = Sampler(read=None, interval=15)
    s.add(rows(completed__x=100), now=T0)                 # baseline: not counted
    s.add(rows(completed__x=110), now=T0 + 15)            # +10 in minute 0
    s.add(rows(completed__x=130, failed__x=2), now=T0 + 75)   # +20, +2 in minute 1
    now = T0 + 80
    w = s.window(60, 0, now)
    assert w["counts"] == {("completed", "x"): 30, ("failed", "x"): 2}
    # the window began 58 minutes before the first sample: partial, since then
    assert w["covered_from"] == T0 and w["from"] == T0 + 120 - 3600
    assert not s.window(60, 1, now)["seen"]               # the hour before: never sampled
    assert s.window(1, 0, now)["counts"] == {("completed", "x"): 20, ("failed", "x"): 2}
    assert s.window(1, 1, now)["counts"] == {("completed", "x"): 10}
    counts, first_seen = s.per_minute("completed", "x", 60, now)
    assert counts[-2:] == [10, 20] and sum(counts) == 30 and first_seen == 58


def test_sampler_counter_reset_and_restart():
    s = Sampler(read=None, interval=15)
    s.add(rows(completed__x=100), now=T0)
    s.add(rows(completed__x=5), now=T0 + 15)               # lower: reset, +5 (as increase())
    s.add(rows(completed__x=8), now=T0 + 30)               # +3
    assert s.window(60, 0, T0 + 31)["counts"] == {("completed", "x"): 8}
    s.add(rows(started="s2", completed__x=50), now=T0 + 45)  # restarted though higher: +50
    assert s.window(60, 0, T0 + 46)["counts"] == {("completed", "x"): 58}
    s.add(rows(started="s2"), now=T0 + 60)                  # the action gone after a restart
    s.add(rows(started="s2", completed__x=4), now=T0 + 75)  # back: from 0, +4
    assert s.window(60, 0, T0 + 76)["counts"] == {("completed", "x"): 62}


def test_sampler_whole_windows_gaps_and_the_ring():
    s = Sampler(read=None, interval=60)
    t = T0
    s.add(rows(completed__x=0), now=t)
    for i in range(1, 3 * 60 + 1):                          # three hours, one a minute
        t = T0 + 60 * i
        s.add(rows(completed__x=i), now=t)
    now = t + 1
    w = s.window(60, 0, now)
    assert w["counts"] == {("completed", "x"): 60} and w["covered_from"] is None and not w["gaps"]
    assert s.window(60, 1, now)["counts"] == {("completed", "x"): 60}
    assert s.window(60, 1, now)["covered_from"] is None
    assert s.window(360, 0, now)["covered_from"] == T0
    # a database that did not answer for ten minutes: the window says so
    s.add(rows(completed__x=200), now=now + 600)
    gapped = s.window(60, 0, now + 601)
    assert gapped["gaps"] == [(t, now + 600)]
    assert gapped["counts"][("completed", "x")] == 50 + (200 - 180)
    # two days later, the old minutes are gone and an idle action's arrays too
    s.add(rows(completed__x=200, failed__y=1), now=now + 2 * MINUTES * 60)
    assert s.window(MINUTES, 0, now + 2 * MINUTES * 60 + 1)["counts"] == {("failed", "y"): 1}
    assert s.gaps == [(now + 600, now + 2 * MINUTES * 60)]
    assert ("completed", "x") not in s._ring


def test_sampler_stuck():
    s = Sampler(read=None, interval=1)
    s.add(rows(completed__x=1, completed__y=1), now=T0, in_progress={"x": 2, "y": 1})
    assert not s.stuck("x", 2, 10, now=T0 + 5)              # not watched for 10 s yet
    s.add(rows(completed__x=1, completed__y=2), now=T0 + 8, in_progress={"x": 2, "y": 1})
    s.add(rows(completed__x=1, completed__y=2), now=T0 + 12, in_progress={"x": 2, "y": 1})
    assert s.stuck("x", 2, 10, now=T0 + 12)                 # busy 12 s, none completed
    assert not s.stuck("y", 1, 10, now=T0 + 12)             # completed one 4 s ago
    assert not s.stuck("x", 0, 10, now=T0 + 12)             # nothing in progress now
    s.add(rows(completed__x=1, completed__y=2), now=T0 + 13, in_progress={"y": 1})
    s.add(rows(completed__x=1, completed__y=2), now=T0 + 14, in_progress={"x": 1, "y": 1})
    assert not s.stuck("x", 1, 10, now=T0 + 20)             # busy again only since T0+14
    assert s.stuck("x", 1, 10, now=T0 + 24)
    assert s.stuck("y", 1, 10, now=T0 + 18.5)               # its last completion at T0+8


def test_sampler_runs_in_a_thread():
    calls = []

    def read(sql, params):
        calls.append(params)
        n = len(calls)
        return [{"name": "taskq_tasks_completed_total", "action": "x", "value": float(n),
                 "started": datetime(2026, 1, 1, tzinfo=timezone.utc)},
                {"name": "taskq_tasks_in_progress", "action": "x", "value": 1.0,
                 "started": datetime(2026, 1, 1, tzinfo=timezone.utc)}]
    s = Sampler(read, interval=0.05).start()
    try:
        wait_until(lambda: len(calls) >= 4, timeout=5, what="four samples")
    finally:
        s.stop()
    n = len(calls)
    assert s.window(60)["counts"][("completed", "x")] == n - 1
    assert "taskq_tasks_completed_total" in calls[0][0]
