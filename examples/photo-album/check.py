#!/usr/bin/env python3
"""check.py: the end check of the photo album; prints the verdict line and
exits 1 on any violation.

Every photo-upload run ended succeeded (in one of its final states), every
provision-storage run succeeded or failed (none dismal or unfinished), and
for each upload, by what the producer decided:

  * not confirmed: it ended in the timeout branch exactly once (one row in
    album_demo.endings, 'expired'; one Expire step in taskq.run_steps), and
    started no storage, no resize and no album;
  * confirmed, storage refused: its child saga failed; it ended 'abandoned'
    exactly once; every step the saga started was undone exactly once and
    none that did not start; no quota, bucket or policy of it is left, and no
    image was resized;
  * confirmed: its child saga succeeded and holds its quota, bucket and
    policy (nothing undone); every image was resized exactly once (one row in
    album_demo.resized per index); the album has one page per image, in the
    images' order, each the resize of its image; it ended 'album' exactly once.

And no quota, bucket or policy belongs to a saga run that did not succeed.
"""

import argparse
import sys
from collections import Counter, defaultdict

from common import DO, MACHINE, SAGA, connect, resized_name


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="photo-album")
    ap.add_argument("--graph", default="mermaid", choices=["mermaid", "dot"])
    args = ap.parse_args()
    conn = connect("photo-album check")
    cur = conn.cursor()
    bad = []

    def rows(sql, *params):
        cur.execute(sql, params)
        return cur.fetchall()

    uploads = {u: (imgs, c, f) for u, imgs, c, f in
               rows("SELECT upload, images, confirm, fail_provision FROM album_demo.uploads")}
    runs = {r: (st, state, err) for r, st, state, err in
            rows("SELECT id, status, state, error FROM taskq.runs WHERE definition = %s", MACHINE)}
    children = defaultdict(list)
    child_status = {}
    for r, parent, st, err in rows("SELECT id, parent, status, error FROM taskq.runs"
                                   " WHERE definition = %s", SAGA):
        children[parent].append(r)
        child_status[r] = (st, err)
    endings = defaultdict(list)
    for u, branch in rows("SELECT upload, branch FROM album_demo.endings"):
        endings[u].append(branch)
    pages = defaultdict(list)
    for u, pos, src, res in rows("SELECT upload, position, source, resized FROM album_demo.pages"
                                 " ORDER BY upload, position"):
        pages[u].append((pos, src, res))
    resized = Counter()
    for u, idx, n in rows("SELECT upload, idx, count(*) FROM album_demo.resized GROUP BY 1, 2"):
        resized[(u, idx)] = n
    held = {}
    for table in ("quota", "buckets", "policies"):
        for u, run in rows(f"SELECT upload, run FROM album_demo.{table}"):
            held[(table, u)] = run
    ran = Counter()
    for run, step, direction, n in rows("SELECT run, step, direction, count(*)"
                                        " FROM album_demo.executions GROUP BY 1, 2, 3"):
        ran[(run, step, direction)] = n
    started = {(run, step) for run, step in
               rows("SELECT run, step FROM taskq.saga_steps WHERE do_state IN ('succeeded', 'failed')"
                    " AND run IN (SELECT id FROM taskq.runs WHERE definition = %s)", SAGA)}
    retries = rows("SELECT coalesce(sum(greatest(num_tries - 1, 0)), 0) FROM taskq.tasks"
                   " WHERE action = 'resize'")[0][0]    # (the map's hidden join: 0 tries)
    conn.commit()

    for r, (st, state, err) in sorted(runs.items()):
        if st != "succeeded":
            bad.append(f"run {r} is {st} in {state} ({err})")
    for r, (st, err) in sorted(child_status.items()):
        if st not in ("succeeded", "failed"):
            bad.append(f"storage run {r} is {st} ({err})")
    for u in uploads:
        if u not in runs:
            bad.append(f"upload {u} has no run")

    expired = undone = albums = images_done = 0
    abandoned = None
    for u, (images, confirm, fail) in sorted(uploads.items()):
        kids = children.get(u, [])
        if not confirm:
            want = "expired"
            if kids:
                bad.append(f"{u} was never confirmed but started storage {kids}")
            n = rows("SELECT count(*) FROM taskq.run_steps(%s) WHERE step = 'Expire'", u)[0][0]
            conn.commit()
            if n != 1:
                bad.append(f"{u} went through Expire {n} times, not once")
        elif fail:
            want = "abandoned"
            abandoned = abandoned or u
            if len(kids) != 1 or child_status[kids[0]][0] != "failed":
                bad.append(f"{u}'s storage should have failed: {[(k, child_status[k]) for k in kids]}")
            for k in kids:
                for step in DO:
                    n = ran[(k, step, "undo")]
                    if n != (1 if (k, step) in started else 0):
                        bad.append(f"{k}: step {step} (started: {(k, step) in started})"
                                   f" undone {n} times")
        else:
            want = "album"
            if len(kids) != 1 or child_status[kids[0]][0] != "succeeded":
                bad.append(f"{u}'s storage should have succeeded: {[(k, child_status[k]) for k in kids]}")
            for table in ("quota", "buckets", "policies"):
                if kids and held.get((table, u)) != kids[0]:
                    bad.append(f"{u}: its {table} row is {held.get((table, u))}, not {kids[0]}'s")
            for k in kids:
                for step in DO:
                    if ran[(k, step, "do")] != 1 or ran[(k, step, "undo")]:
                        bad.append(f"{k}: step {step} done {ran[(k, step, 'do')]} times,"
                                   f" undone {ran[(k, step, 'undo')]} times")
            expect = [(i, s, resized_name(s)) for i, s in enumerate(images)]
            if pages[u] != expect:
                got = [s for _, s, _ in pages[u]]
                bad.append(f"{u}: the album is {got[:5]}... ({len(got)} pages), not the"
                           f" {len(images)} images in order")
            for i in range(len(images)):
                if resized[(u, i)] != 1:
                    bad.append(f"{u}: image {i} was resized {resized[(u, i)]} times")
            albums += 1
            images_done += len(images)
        if want != "album":
            extra = sorted(i for (uu, i) in resized if uu == u)
            if extra or pages[u]:
                bad.append(f"{u} ended {want} but has resized images {extra} or pages")
        if endings[u] != [want]:
            bad.append(f"{u} should have ended {want} once, ended {endings[u]}")
        expired += want == "expired" and endings[u] == [want]
        undone += want == "abandoned" and endings[u] == [want]
    for (table, u), run in sorted(held.items()):
        if child_status.get(run, ("?",))[0] != "succeeded":
            bad.append(f"{table} of {u} left behind by {run} ({child_status.get(run)})")

    if abandoned and children.get(abandoned):
        kid = children[abandoned][0]
        print(f"--- run_graph('{kid}', '{args.graph}'): {abandoned}'s storage, failed and undone")
        cur.execute("SELECT taskq.run_graph(%s, %s)", (kid, args.graph))
        print(cur.fetchone()[0].rstrip())
        conn.commit()

    if bad:
        print(f"{args.name}: FAILED, {len(bad)} violation(s):")
        for line in bad[:50]:
            print("  " + line)
        return 1
    print(f"{args.name}: ok: {len(uploads)} uploads, {albums} albums of {images_done} images"
          f" resized in order ({retries} resize tries retried), {expired} confirmations timed"
          f" out, {undone} storage provisions undone, nothing left behind")
    return 0


if __name__ == "__main__":
    sys.exit(main())
