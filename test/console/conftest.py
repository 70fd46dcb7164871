"""Fixtures for the console's tests: a real taskq-console and a real browser.

TASKQ_TEST_DSN names a database with the taskq extension, as a superuser
(make test's suite "console" creates one on its throwaway cluster).  The
tests start taskq-console twice, as processes: once connected as a login
role in taskq_admin (the `console` fixture: write actions offered), once as
one in taskq_monitor only (`console_ro`: read-only).  The browser is
Debian's headless Chromium driven by Debian's chromedriver through
Selenium; nothing is downloaded.

Every test names its actions, task ids and runs with a prefix of its own
(`name`), so tests share the database without seeing each other's rows.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import psycopg
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CONSOLE = os.path.join(ROOT, "tools", "taskq-console", "taskq-console")
SHOTS = os.environ.get("TASKQ_CONSOLE_SHOTS")                    # where screenshots go, if set

ADMIN_ROLE = "console_test_admin"
MONITOR_ROLE = "console_test_monitor"


@pytest.fixture(scope="session")
def dsn():
    value = os.environ.get("TASKQ_TEST_DSN")
    if value is None:
        pytest.skip("TASKQ_TEST_DSN is not set (a database with CREATE EXTENSION taskq)")
    return value


@pytest.fixture
def db(dsn):
    """An autocommit superuser connection for the test's own SQL."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def name():
    """A prefix unique to the test, for its action names, task ids and runs."""
    return "c" + uuid.uuid4().hex[:10]


@pytest.fixture(scope="session")
def roles(dsn):
    """Two login roles: one in taskq_admin, one in taskq_monitor only."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for role, group in ((ADMIN_ROLE, "taskq_admin"), (MONITOR_ROLE, "taskq_monitor")):
            if conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
                conn.execute(f"CREATE ROLE {role} LOGIN IN ROLE {group}")
    return {"admin": ADMIN_ROLE, "monitor": MONITOR_ROLE}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(url, data=None, headers=None, method=None):
    """(status, headers, body text) of one request, errors included."""
    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


class Console:
    """A running taskq-console process and its base URL."""

    def __init__(self, databases, extra=()):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # pages do not reload themselves while a test reads them (a reload
        # makes the elements a test holds stale); a later --refresh wins
        args = [sys.executable, CONSOLE, "--listen", f"127.0.0.1:{self.port}", "--refresh", "300"]
        for n, d in databases:
            args += ["--dsn", f"{n}={d}"]
        self.log = open(os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                     f"console-{self.port}.log"), "w+")
        self.proc = subprocess.Popen(list(args) + list(extra), stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while True:
            try:
                if http(self.url + "/healthz")[0] in (200, 401, 503):
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                raise RuntimeError("taskq-console did not start:\n" + self.log.read())
            time.sleep(0.1)

    def logged(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def role_dsn(dsn, role):
    return psycopg.conninfo.make_conninfo(dsn, user=role)


@pytest.fixture(scope="session")
def console(dsn, roles):
    """taskq-console as a member of taskq_admin, on database "main"."""
    c = Console([("main", role_dsn(dsn, roles["admin"]))])
    yield c
    c.stop()


@pytest.fixture(scope="session")
def console_ro(dsn, roles):
    """taskq-console as a member of taskq_monitor only (read-only)."""
    c = Console([("main", role_dsn(dsn, roles["monitor"]))])
    yield c
    c.stop()


@pytest.fixture(scope="session")
def browser():
    """Debian's headless Chromium through chromedriver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = os.environ.get("TASKQ_CHROMIUM", "/usr/bin/chromium")
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1000", "--lang=en-US"):
        opts.add_argument(a)
    # the browser console's messages: a CSP violation must fail a test
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(os.environ.get("TASKQ_CHROMEDRIVER",
                                                             "/usr/bin/chromedriver")),
                              options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def csp_violations(browser):
    """The Content-Security-Policy messages the page printed since last asked."""
    return [e["message"] for e in browser.get_log("browser")
            if "Content Security Policy" in e.get("message", "")]


def shot(browser, filename):
    """A screenshot for docs/console.md, when TASKQ_CONSOLE_SHOTS names a folder."""
    if SHOTS:
        os.makedirs(SHOTS, exist_ok=True)
        browser.save_screenshot(os.path.join(SHOTS, filename))


def wait_until(predicate, timeout=20.0, what="the condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
