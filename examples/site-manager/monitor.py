#!/usr/bin/env python3
"""monitor.py: print a compact status line per site whenever it changes.

  site-2  creating  meta+ fs- db+ boot-  tries 4 (1 failed)  tasks 2 done, 1 delayed, 2 waiting

(done, running, ready, delayed: pending until its backoff ends, waiting for
predecessors, aborted)
"""

import signal
import sys
import time

from common import connect

QUERY = """
SELECT s.site_id, s.state,
       s.metadata_ready, s.fs_ready, s.db_ready, s.bootstrapped,
       (SELECT count(*) FROM site_demo.executions e WHERE e.site_id = s.site_id),
       (SELECT count(*) FROM site_demo.executions e WHERE e.site_id = s.site_id
           AND e.outcome = 'failed'),
       count(t.id) FILTER (WHERE t.status_code = 'completed'),
       count(t.id) FILTER (WHERE t.status_code = 'in_progress'),
       count(t.id) FILTER (WHERE t.status_code = 'pending' AND t.num_signals = 0
                             AND t.not_before <= now()),
       count(t.id) FILTER (WHERE t.status_code = 'pending' AND t.num_signals = 0
                             AND t.not_before > now()),
       count(t.id) FILTER (WHERE t.status_code = 'pending' AND t.num_signals > 0),
       count(t.id) FILTER (WHERE t.status_code = 'aborted')
  FROM site_demo.sites s LEFT JOIN taskq.tasks t ON t.workflow = s.site_id
 GROUP BY s.site_id
 ORDER BY s.site_id
"""


def line(row):
    site, state, meta, fs, db, boot, tries, failed, done, running, ready, delayed, waiting, aborted = row
    flags = " ".join(f"{n}{'+' if v else '-'}" for n, v in
                     (("meta", meta), ("fs", fs), ("db", db), ("boot", boot)))
    tasks = ", ".join(f"{n} {label}" for n, label in
                      ((done, "done"), (running, "running"), (ready, "ready"), (delayed, "delayed"),
                       (waiting, "waiting"), (aborted, "aborted")) if n)
    return f"{site:<7} {state:<9} {flags}  tries {tries} ({failed} failed)  tasks {tasks}"


def main():
    stopping = []
    signal.signal(signal.SIGTERM, lambda s, f: stopping.append(1))
    conn = connect("site-manager monitor")
    conn.autocommit = True
    shown = {}
    while not stopping:
        with conn.cursor() as cur:
            cur.execute(QUERY)
            rows = cur.fetchall()
        for row in rows:
            text = line(row)
            if shown.get(row[0]) != text:
                print(f"  [status] {text}", flush=True)
                shown[row[0]] = text
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
