#!/usr/bin/env python3
"""progress.py: one summary line about an example's tasks, once a second.

  t=3.1s  pending 12  running 4  done 80  aborted 1  retries 3  | commits 9, exported 6

pending, running, done, aborted: the example's tasks (taskq.tasks of its
actions) by status_code; retries: the tries that did not finish their task
(failed and retried, or lost with a lease that ran out); after "|", what
--note's query returns (one text value, the example's own measure).  A line
is printed only when something changed, and once more on SIGTERM if the
last state was not shown yet.  run.sh starts it for make demo; VERBOSE=1
adds the examples' full monitors.
"""

import argparse
import signal
import sys
import time

from demo import connect

COUNTS = """
SELECT count(*) FILTER (WHERE status_code = 'pending'),
       count(*) FILTER (WHERE status_code = 'in_progress'),
       count(*) FILTER (WHERE status_code = 'completed'),
       count(*) FILTER (WHERE status_code = 'aborted'),
       coalesce(sum(greatest(num_tries - CASE WHEN status_code = 'pending' THEN 0 ELSE 1 END,
                             0)), 0)
  FROM taskq.tasks
 WHERE action = ANY(%s)
"""
LABELS = ("pending", "running", "done", "aborted", "retries")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--actions", required=True, help="the example's actions, comma-separated")
    ap.add_argument("--note", default=None, help="a query returning one text value")
    ap.add_argument("--t0", type=float, default=None,
                    help="the example's start, in microseconds since the epoch")
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--name", default="progress", help="application_name suffix")
    args = ap.parse_args()

    actions = args.actions.split(",")
    t0 = args.t0 / 1e6 if args.t0 else time.time()
    stopping = []
    signal.signal(signal.SIGTERM, lambda s, f: stopping.append(1))
    signal.signal(signal.SIGINT, lambda s, f: stopping.append(1))
    conn = connect(f"{args.name} progress")
    conn.autocommit = True
    shown = None
    while True:
        last_round = bool(stopping)
        with conn.cursor() as cur:
            cur.execute(COUNTS, (actions,))
            counts = cur.fetchone()
            note = None
            if args.note:
                cur.execute(args.note)
                row = cur.fetchone()
                note = row[0] if row else None
        state = (counts, note)
        # Nothing queued yet (the producers have not started): nothing to say.
        if state != shown and sum(counts[:4]):
            text = "  ".join(f"{label} {n}" for label, n in zip(LABELS, counts))
            print(f"  t={time.time() - t0:.1f}s  {text}" + (f"  | {note}" if note else ""),
                  flush=True)
            shown = state
        if last_round:
            return 0
        end = time.monotonic() + args.interval
        while not stopping and time.monotonic() < end:
            time.sleep(0.05)


if __name__ == "__main__":
    sys.exit(main())
