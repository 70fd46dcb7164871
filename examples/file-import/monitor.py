#!/usr/bin/env python3
"""monitor.py: the "web page": each job's progress from taskq.job_states.

By default (make demo) one summary line whenever something changed, at most
once a second: the example's tasks by status and each job's rows done of
its total,

  t=3.0s  pending 569  running 4  done 760  | import-1 477/477 completed  import-2 0/569 running

With --bars (VERBOSE=1), a progress bar per job: on a terminal redrawn in
place every 0.5 s; otherwise (a log, CI) one line whenever something
changed, at most about once a second and at most --max-updates times.
Exits 0 once every job of import_demo.files is completed (or aborted), 1
after --timeout seconds.
"""

import argparse
import sys
import time

from common import ACTIONS, connect

WIDTH = 20


def bar(state, count, progress):
    if count:
        filled = min(WIDTH, int(WIDTH * progress / count))
        return f"[{'#' * filled}{'-' * (WIDTH - filled)}] {progress:>4}/{count:<4}"
    return f"[{'-' * WIDTH}] {progress:>4}/?   "


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=3, help="jobs to wait for")
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--max-updates", type=int, default=30)
    ap.add_argument("--bars", action="store_true", help="progress bars (VERBOSE=1)")
    ap.add_argument("--t0", type=float, default=None,
                    help="the example's start, in microseconds since the epoch")
    args = ap.parse_args()

    tty = sys.stdout.isatty() and args.bars
    interval = 0.5 if tty else 1.0
    conn = connect("file-import monitor")
    conn.autocommit = True
    t0 = time.monotonic()
    since = args.t0 / 1e6 if args.t0 else time.time()
    drawn = 0              # lines drawn on the terminal (to redraw them)
    last = None
    updates = 0
    while True:
        with conn.cursor() as cur:
            cur.execute("SELECT f.job_id, coalesce(s.state, 'waiting'), s.item_count,"
                        "       coalesce(s.item_progress, 0)"
                        "  FROM import_demo.files f LEFT JOIN taskq.job_states s ON s.id = f.job_id"
                        " ORDER BY f.job_id")
            rows = cur.fetchall()
        elapsed = time.monotonic() - t0
        done = len(rows) >= args.jobs and all(r[1] in ("completed", "aborted") for r in rows)
        lines = [f"{job:<9} {bar(state, count, progress)} {state}"
                 for job, state, count, progress in rows]
        if not args.bars:
            with conn.cursor() as cur:
                cur.execute("SELECT count(*) FILTER (WHERE status_code = 'pending'),"
                            "       count(*) FILTER (WHERE status_code = 'in_progress'),"
                            "       count(*) FILTER (WHERE status_code = 'completed')"
                            "  FROM taskq.tasks WHERE action = ANY(%s)", (ACTIONS,))
                counts = cur.fetchone()
            if rows and (rows != last or done):
                jobs = "  ".join(f"{job} {progress}/{count or '?'} {state}"
                                 for job, state, count, progress in rows)
                print(f"  t={time.time() - since:.1f}s  pending {counts[0]}  running {counts[1]}"
                      f"  done {counts[2]}  | {jobs}", flush=True)
                last = rows
        elif tty:
            if drawn:
                sys.stdout.write(f"\x1b[{drawn}A")
            sys.stdout.write("".join(f"\r{line}\x1b[K\n" for line in lines))
            sys.stdout.flush()
            drawn = len(lines)
        elif rows and (rows != last or done) and (updates < args.max_updates or done):
            print(f"--- {elapsed:4.1f}s  " + "   ".join(
                f"{job} {bar(state, count, progress)} {state}"
                for job, state, count, progress in rows), flush=True)
            updates += 1
            last = rows
        if done:
            return 0
        if elapsed > args.timeout:
            print(f"monitor: jobs not completed after {args.timeout:.0f}s", file=sys.stderr)
            return 1
        time.sleep(interval)


if __name__ == "__main__":
    sys.exit(main())
