#!/usr/bin/env python3
"""worker.py: a taskq worker for the photo album: the machine photo-upload's
steps, its map items, and the do and undo of the child saga provision-storage.

A taskq.Worker (clients/python, set up by ../demo.py) claims them all like
any other tasks:

  receive-upload  (Receive) records nothing, returns "received": the run
                  waits in Confirm for the customer's 'confirmed'.
  resize          one task per image of the Resize map state: its body has
                  "index", "item" (the file name) and "context".  It "resizes"
                  the image (a row in album_demo.resized, committed with the
                  return) and returns taskq.Result({...}): the item's result,
                  which taskq puts in the run's context under "results", in
                  the images' order.  --fail-rate of the first tries fail
                  for now (raise Retry: the row is rolled back, the item is
                  tried again under the state's max_tries and retry).
  build-album     (Album) reads context["results"], checks that result i is
                  image i's, writes the pages in that order, ends the run.
  expire-upload   (Expire) the customer never confirmed: the timeout branch.
  abandon-upload  (Abandon) the storage could not be provisioned.
  reserve-quota, create-bucket, apply-policy, and their undos
                  release-quota, delete-bucket, remove-policy: the saga's
                  steps, returning taskq.Step.  apply-policy writes its
                  policy and then refuses it (Step("fatal")) for the uploads
                  the producer marked: the saga undoes all three, and the
                  parent moves on child_failed.

--sabotage ACTION makes that undo do nothing and report success, to show
that the end check (check.py) catches what it leaves behind.
"""

import argparse
import random
import time
import zlib

from common import ACTIONS, detail, log, once, resized_name, worker

import taskq
from taskq import Retry

LEASE = 10.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="worker")
    ap.add_argument("--fail-rate", type=float, default=0.1)
    ap.add_argument("--work-ms", type=float, default=30.0, help="mean time of a resize")
    ap.add_argument("--sabotage", default="", help="an undo action that does nothing")
    args = ap.parse_args()
    name = args.name
    w = worker(name, f"photo-album {name}", LEASE)

    def ending(task, branch):
        task.conn.execute("INSERT INTO album_demo.endings (upload, branch, task, actor)"
                          " VALUES (%s, %s, %s, %s)", (task.body["run"], branch, task.id, w.actor))

    # ---- the machine -----------------------------------------------------
    @w.task("receive-upload")
    def receive(task):
        n = len(task.body["context"]["images"])
        detail(name, f"{task.body['run']}: {n} images received, waiting for the confirmation")
        return "received"

    @w.task("resize")
    def resize(task):
        b = task.body
        run, index, source = b["run"], b["index"], b["item"]
        time.sleep(random.uniform(0.5, 1.5) * args.work_ms / 1000)
        # Only first and second tries fail: with 4 tries every image gets done.
        if task.tries <= 2 and random.random() < args.fail_rate:
            w.counts["resize retried"] += 1
            msg = f"{task.id} ({run} image {index}, try {task.tries}): converter busy"
            if once("resize-retry"):
                log(name, msg + ": raised Retry, the item is tried again after the state's"
                          " retry delay; the other items go on")
            else:
                detail(name, msg)
            raise Retry(status="converter busy")
        target = resized_name(source)
        size = 200_000 + zlib.crc32(source.encode()) % 300_000
        task.conn.execute(
            "INSERT INTO album_demo.resized (upload, idx, source, resized, bytes, try, actor)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s)",
            (run, index, source, target, size, task.tries, w.actor))
        w.counts["resized"] += 1
        return taskq.Result({"index": index, "source": source, "resized": target,
                             "bytes": size})

    @w.task("build-album")
    def build_album(task):
        run, ctx = task.body["run"], task.body["context"]
        images, results = ctx["images"], ctx["results"]
        if len(results) != len(images):
            raise taskq.Abort(f"{len(results)} results for {len(images)} images")
        for i, (source, r) in enumerate(zip(images, results)):
            if r is None or r["index"] != i or r["source"] != source:
                raise taskq.Abort(f"result {i} is {r}, not image {source!r}")
            task.conn.execute(
                "INSERT INTO album_demo.pages (upload, position, source, resized, bytes)"
                " VALUES (%s, %s, %s, %s, %s)", (run, i, source, r["resized"], r["bytes"]))
        ending(task, "album")
        total = sum(r["bytes"] for r in results)
        bucket = ctx["child"]["context"].get("bucket")
        msg = f"{run}: album of {len(results)} pages, {total / 1e6:.1f} MB into {bucket}"
        if once("album"):
            log(name, msg + " (the map's results came in the images' order)")
        else:
            detail(name, msg)
        return taskq.Transition(None)

    @w.task("expire-upload")
    def expire(task):
        ending(task, "expired")
        log(name, f"{task.body['run']}: no confirmation in time: the timeout moved it on 'expired'")
        return taskq.Transition(None)

    @w.task("abandon-upload")
    def abandon(task):
        child = task.body["context"].get("child") or {}
        ending(task, "abandoned")
        log(name, f"{task.body['run']}: storage {child.get('run')} {child.get('status')}"
                  f" ({child.get('error')}): upload abandoned")
        return taskq.Transition(None)

    # ---- the child saga --------------------------------------------------
    def record(task, outcome):
        b = task.body
        task.conn.execute(
            "INSERT INTO album_demo.executions (run, step, direction, outcome, try)"
            " VALUES (%s, %s, %s, %s, %s)",
            (b["run"], b["step"], b["direction"], outcome, task.tries))

    def upload_of(task):
        return task.body["inputs"]["upload"]

    @w.task("reserve-quota")
    def reserve_quota(task):
        mb = 5 * len(task.body["inputs"]["images"])
        task.conn.execute("INSERT INTO album_demo.quota (upload, run, mb) VALUES (%s, %s, %s)",
                          (upload_of(task), task.body["run"], mb))
        record(task, "success")
        return taskq.Step("success", working={"quota_mb": mb})

    @w.task("create-bucket")
    def create_bucket(task):
        bucket = f"albums-{upload_of(task)}"
        task.conn.execute("INSERT INTO album_demo.buckets (upload, run, bucket) VALUES (%s, %s, %s)",
                          (upload_of(task), task.body["run"], bucket))
        record(task, "success")
        return taskq.Step("success", working={"bucket": bucket})

    @w.task("apply-policy")
    def apply_policy(task):
        task.conn.execute("INSERT INTO album_demo.policies (upload, run, policy) VALUES (%s, %s, %s)",
                          (upload_of(task), task.body["run"], "owner-only"))
        if task.body["inputs"].get("fail_provision"):
            record(task, "fatal")
            log(name, f"{task.body['run']}: apply-policy refused the bucket: the saga undoes"
                      " its steps in reverse order")
            return taskq.Step("fatal", error="policy refused by the storage provider")
        record(task, "success")
        return taskq.Step("success", working={"policy": "owner-only"})

    def undo(table):
        def handler(task):
            if args.sabotage != task.action:
                task.conn.execute(f"DELETE FROM album_demo.{table} WHERE upload = %s AND run = %s",
                                  (upload_of(task), task.body["run"]))
            record(task, "success")
            detail(name, f"{task.body['run']}: {task.action} done")
            return taskq.Step("success")
        return handler

    w.task("release-quota")(undo("quota"))
    w.task("delete-bucket")(undo("buckets"))
    w.task("remove-policy")(undo("policies"))

    assert sorted(w.actions) == sorted(ACTIONS)
    w.run()


if __name__ == "__main__":
    main()
