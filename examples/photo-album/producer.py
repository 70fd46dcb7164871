#!/usr/bin/env python3
"""producer.py: starts one photo-upload run per upload, then confirms most
of them as the customer would, and lets the others time out.

Each upload is a row in album_demo.uploads and taskq.start_machine(
'photo-upload', 'up-<n>', {"upload", "images": [...], "fail_provision"},
deadline => --deadline), in one transaction.  Every --expire-every-th upload
is never confirmed: its run leaves Confirm on 'expired' when the state's
timeout fires (the database's background worker fires it).  Every
--fail-every-th upload (counting from --fail-every / 2) gets storage that
refuses its policy: its child saga fails and is undone.  The others are
confirmed, in a random order, within --confirm-within seconds:
taskq.send_event(run, 'confirmed'), recorded with the state it returned (NULL:
the run was not waiting yet and keeps the event for Confirm).
"""

import argparse
import random
import sys
import time

from psycopg2.extras import Json

from common import MACHINE, connect, log, transaction


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uploads", type=int, default=30)
    ap.add_argument("--min-images", type=int, default=6)
    ap.add_argument("--max-images", type=int, default=20)
    ap.add_argument("--expire-every", type=int, default=6)
    ap.add_argument("--fail-every", type=int, default=9)
    ap.add_argument("--confirm-within", type=float, default=1.0)
    ap.add_argument("--deadline", default="2 minutes", help="each run's deadline")
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    conn = connect("photo-album producer")

    uploads = []
    for i in range(1, args.uploads + 1):
        run = f"up-{i}"
        images = [f"IMG_{i:02d}{k:02d}.jpg" for k in range(1, rnd.randint(args.min_images,
                                                                            args.max_images) + 1)]
        confirm = args.expire_every <= 0 or i % args.expire_every != 0
        fail = (confirm and args.fail_every > 0
                and i % args.fail_every == max(1, args.fail_every // 2))
        ctx = {"upload": run, "images": images, "fail_provision": fail}

        def start(cur, run=run, images=images, confirm=confirm, fail=fail, ctx=ctx):
            cur.execute("INSERT INTO album_demo.uploads (upload, images, confirm, fail_provision)"
                        " VALUES (%s, %s, %s, %s)", (run, Json(images), confirm, fail))
            cur.execute("SELECT taskq.start_machine(%s, %s, %s, deadline => %s::interval)",
                        (MACHINE, run, Json(ctx), args.deadline))
        transaction(conn, start)
        uploads.append((run, confirm))
    expire = [r for r, c in uploads if not c]
    log("producer", f"started {len(uploads)} uploads (up-1 .. up-{len(uploads)}), deadline"
                    f" {args.deadline} each; {', '.join(expire) or 'none'} will not be confirmed")

    # The customers confirm, each at a random moment of the next seconds.
    t0 = time.monotonic()
    plan = sorted((rnd.uniform(0, args.confirm_within), r) for r, c in uploads if c)
    kept = 0
    for at, run in plan:
        time.sleep(max(0.0, t0 + at - time.monotonic()))

        def confirm(cur, run=run):
            cur.execute("SELECT taskq.send_event(%s, 'confirmed')", (run,))
            moved = cur.fetchone()[0]
            cur.execute("INSERT INTO album_demo.confirmations (upload, moved_to) VALUES (%s, %s)",
                        (run, moved))
            return moved
        moved = transaction(conn, confirm)
        kept += moved is None
    log("producer", f"confirmed {len(plan)} uploads with send_event ({kept} kept until their run"
                    " reached Confirm)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
