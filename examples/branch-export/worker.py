#!/usr/bin/env python3
"""worker.py: a taskq worker for the branch-export story.

A taskq.Worker (clients/python, set up by ../demo.py) runs one task of our
actions at a time with a lease, extended by its heartbeats, and dispatches on
its action; the handler writes the task's own writes and a row in
export_demo.events on task.conn, in the transaction that returns the task
(return_and_own, which claims the next task in the same call).  While idle,
it waits for a NOTIFY on channel "taskq" (or half a second).

  next-export-{branch}    create start-export-{branch} and a fresh, spontaneous
                          done-export-{branch} that start-export signals
  start-export-{branch}   list the commit and the bucket, insert one task per
                          object to copy or delete, one _SUCCESS task per prefix
                          (after its objects and its sub-prefixes' _SUCCESS),
                          all leading to done-export-{branch}; and a manifest
                          task that waits for done-export-{branch}
  export-copy / -delete   write / remove the object in the "bucket"
  export-success          write {prefix}_SUCCESS (priority 10: first when ready)
  export-manifest         write the export's manifest
  done-export-{branch}    nobody: spontaneous, the queue completes it

done-export-{branch} is created by next-export rather than by start-export, so
that it exists, pending, from the moment an export is decided: a commit arriving between next-export and start-export then waits for it too.

A copy, delete or _SUCCESS whose export was aborted meanwhile (a copy used up
its tries: the abort cascades to what waits for it, not to the tasks beside it)
aborts itself instead of writing: see export_is_current.

The bucket is a table, so writing an object and returning its task are one
transaction: a worker whose lease was taken over (TQ001 on return) writes
nothing.  With a real S3, make the copy idempotent: a copy may run twice.

Faults, to show retries and leases: a copy fails at random (return_task
'pending': retried, up to COPY_MAX_TRIES tries); now and then a worker stalls
past its lease, heartbeats and all (the process stops, as a paused machine
would), and another worker takes the task over.
Both only before a task's last try: the demo's faults are transient.
"""

import argparse
import os
import random
import signal
import subprocess
import time
from collections import Counter

from common import detail, done_export_id, log, once, start_export_id, worker

from psycopg.types.json import Jsonb as Json
from taskq import Abort, Retry

ACTIONS = ["next-export", "start-export", "export-copy", "export-delete", "export-success",
           "export-manifest"]
LEASE = 2.0                 # seconds of ownership granted by own_tasks and each heartbeat
COPY_MAX_TRIES = 3
PRIORITY = {"start-export": 5, "export-success": 10, "export-manifest": 1}


class ExportWorker:
    def __init__(self, name, fail_rate, stall_rate):
        self.name = name
        self.fail_rate = fail_rate
        self.stall_rate = stall_rate
        self.worker = worker(name, f"branch-export {name}", LEASE)
        self.actor = self.worker.actor
        self.stats = self.worker.counts
        for action, handler in {
            "next-export": self.next_export,
            "start-export": self.start_export,
            "export-copy": self.copy,
            "export-delete": self.delete,
            "export-success": self.success,
            "export-manifest": self.manifest,
        }.items():
            self.worker.task(action)(handler)

    def run(self):
        self.worker.run()

    def finish(self, task, writes=None, path=None, code="completed", status="done",
               fence=False):
        """On task.conn, in the transaction that returns the task: the task's
        writes and its event row (when completed); then the handler's result:
        the status to complete it with, or Retry / Abort raised.  If the lease
        is lost meanwhile, the worker drops all of it.

        fence: first check that the task's export is still current; if it is
        not, abort the task instead, without writing."""
        cur = task.conn.cursor()
        if fence and not export_is_current(cur, task.body):
            self.stats[f"{task.action} abandoned"] += 1
            log(self.name, f"{task.id}: export {task.body['commit']} was abandoned, task aborted")
            raise Abort(f"export {task.body['commit']} was abandoned")
        if writes:
            writes(cur)
        self.stats[f"{task.action} {code}"] += 1
        if code == "pending":
            raise Retry(status=status)
        cur.execute("INSERT INTO export_demo.events"
                    " (branch, export_commit, task_id, action, path, actor, tries)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (task.body["branch"], task.body["commit"], task.id, task.action,
                     path, self.actor, task.tries))
        return status

    def work(self, task, seconds):
        """Spend seconds on the task (the worker's heartbeats keep its lease);
        stop early if the lease is lost: nothing of this try will count."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0 and not task.lease_lost:
            time.sleep(min(left, LEASE / 4))

    def transient_fault(self, task):
        """Maybe stall past the lease; True when the try should fail instead."""
        if task.tries >= COPY_MAX_TRIES:
            return False
        if random.random() < self.stall_rate:
            log(self.name, f"stalls {LEASE + 1:.0f}s on {task.id} (try {task.tries}) without"
                           f" heartbeats: its {LEASE:.0f}s lease will run out")
            self.stats["stalls"] += 1
            stall(LEASE + 1)
        return random.random() < self.fail_rate

    # ---- the story's handlers -------------------------------------------------

    def next_export(self, task):
        branch, commit = task.body["branch"], task.body["commit"]

        def writes(cur):
            # start-export-{branch} and done-export-{branch} of the previous export
            # have finished (this task waited for done-export), so replace them.
            cur.execute("SELECT taskq.replace_tasks(%s)", (Json([
                {"id": start_export_id(branch), "action": "start-export",
                 "body": {"branch": branch, "commit": commit},
                 "priority": PRIORITY["start-export"],
                 "to_signal_after": [done_export_id(branch)]},
                {"id": done_export_id(branch), "action": "done-export",
                 "body": {"branch": branch, "commit": commit},
                 "spontaneous": True},
            ]),))
        return self.finish(task, writes, status=f"export of {commit} started")

    def start_export(self, task):
        branch, commit = task.body["branch"], task.body["commit"]
        self.work(task, 0.05)                       # listing the commit takes a moment
        counts = {}

        def writes(cur):
            cur.execute("SELECT path, etag, size_mb FROM export_demo.commit_objects"
                        " WHERE commit_id = %s", (commit,))
            objects = {p: (e, s) for p, e, s in cur.fetchall()}
            cur.execute("SELECT path FROM export_demo.s3 WHERE branch = %s", (branch,))
            in_bucket = {p for (p,) in cur.fetchall()}
            tasks = plan_export(branch, commit, objects, in_bucket)
            counts.clear()
            counts.update(Counter(t["action"] for t in tasks))
            # The manifest waits for done-export-{branch}, which is still pending:
            # it waits for this very task.  add_dependencies takes the queue's
            # dependency-graph lock before the task rows, as the producer's calls
            # do, so it comes before insert_tasks, which locks done-export's row
            # (the other order can deadlock with a producer: 40P01).
            manifest_id = f"manifest@{commit}"
            cur.execute("SELECT taskq.insert_tasks(%s)", (Json([{
                "id": manifest_id, "action": "export-manifest",
                "body": {"branch": branch, "commit": commit},
                "workflow": export_workflow(commit),
                "priority": PRIORITY["export-manifest"]}]),))
            cur.execute("SELECT taskq.add_dependencies(ARRAY[%s], ARRAY[%s])",
                        (done_export_id(branch), manifest_id))
            cur.execute("SELECT taskq.insert_tasks(%s)", (Json(tasks),))
        status = self.finish(task, writes, status=f"planned export of {commit}")
        detail(self.name, f"start-export {commit}: {counts.get('export-copy', 0)} copies,"
                       f" {counts.get('export-delete', 0)} deletes,"
                       f" {counts.get('export-success', 0)} _SUCCESS")
        return status

    def copy(self, task):
        b = task.body
        if self.transient_fault(task):
            self.work(task, 0.01)
            if task.lease_lost:
                return None             # the worker drops this try's result
            if once("copy retried"):
                log(self.name, f"{task.id}: try {task.tries} failed (simulated S3 503)")
                log(self.name, "  returned 'pending': taskq hands it out again, up to"
                               f" {COPY_MAX_TRIES} tries; the summary line counts the retries")
            else:
                detail(self.name, f"{task.id}: try {task.tries} failed, returned 'pending'")
            return self.finish(task, code="pending",
                               status=f"try {task.tries}: simulated S3 error 503 SlowDown")
        started = time.monotonic()
        self.work(task, 0.02 + b["size_mb"] / 200)   # 200 MB/s
        if task.lease_lost:
            return None                 # the worker drops this try's result
        if b["size_mb"] >= 500:
            took = f"copied {b['size_mb']} MB {task.id} in {time.monotonic() - started:.1f}s"
            if once("heartbeats"):
                log(self.name, took)
                log(self.name, f"  longer than its {LEASE:.0f}s lease: {task.heartbeats} heartbeats"
                               " (extend_ownership) kept the lease")
            else:
                detail(self.name, f"{took}, {task.heartbeats} heartbeats")

        def writes(cur):
            cur.execute("INSERT INTO export_demo.s3 (branch, path, etag, export_commit,"
                        " written_by) VALUES (%s, %s, %s, %s, %s)"
                        " ON CONFLICT (branch, path) DO UPDATE SET etag = excluded.etag,"
                        " export_commit = excluded.export_commit, written_by = excluded.written_by",
                        (b["branch"], b["path"], b["etag"], b["commit"], self.actor))
        return self.finish(task, writes, path=b["path"], fence=True)

    def delete(self, task):
        b = task.body
        self.work(task, 0.01)

        def writes(cur):
            cur.execute("DELETE FROM export_demo.s3 WHERE branch = %s AND path = %s",
                        (b["branch"], b["path"]))
        return self.finish(task, writes, path=b["path"], fence=True)

    def success(self, task):
        b = task.body
        marker = b["prefix"] + "_SUCCESS"
        # A join: its predecessors (the copies and deletes of its prefix, the
        # _SUCCESS of the prefixes below) as the queue reports them.
        done, total = task.conn.execute(
            "SELECT count(*) FILTER (WHERE status_code = 'completed'), count(*)"
            "  FROM taskq.predecessor_results(%s, %s)", (task.id, task.token)).fetchone()
        if done != total:
            raise Abort(f"{total - done} of {total} predecessors did not complete")

        def writes(cur):
            cur.execute("INSERT INTO export_demo.s3 (branch, path, etag, export_commit, written_by)"
                        " VALUES (%s, %s, %s, %s, %s)"
                        " ON CONFLICT (branch, path) DO UPDATE SET etag = excluded.etag,"
                        " export_commit = excluded.export_commit, written_by = excluded.written_by",
                        (b["branch"], marker, b["commit"], b["commit"], self.actor))
        return self.finish(task, writes, path=marker, fence=True,
                           status=f"done after {total} predecessors")

    def manifest(self, task):
        b = task.body

        def writes(cur):
            cur.execute("INSERT INTO export_demo.manifests (branch, commit_id, objects, total_mb)"
                        " SELECT %s, %s, count(*), coalesce(sum(size_mb), 0)"
                        "   FROM export_demo.commit_objects WHERE commit_id = %s",
                        (b["branch"], b["commit"], b["commit"]))
        status = self.finish(task, writes)
        if once("manifest"):
            log(self.name, f"manifest {b['commit']}: export of {b['commit']} done")
            log(self.name, f"  the manifest ran last: it waited for {done_export_id(b['branch'])},"
                           " which waited for every copy, delete and _SUCCESS")
        else:
            detail(self.name, f"manifest {b['commit']}: export of {b['commit']} done")
        return status


def stall(seconds):
    """Stop this whole process for seconds, as a paused virtual machine or a
    swap storm would: the handler and the heartbeat thread alike.  A child
    process wakes it up (SIGCONT)."""
    waker = subprocess.Popen(["sh", "-c", f"sleep {seconds}; kill -CONT {os.getpid()}"])
    os.kill(os.getpid(), signal.SIGSTOP)
    waker.wait()


def export_is_current(cur, body):
    """Whether the export of the task's commit is still running: done-export-{branch}
    is pending for that commit.  It is not when the export was aborted (a task
    used up its tries: the cascade aborts done-export but not the tasks beside
    the failed one) and the next export may have begun.  The share lock keeps
    done-export as it is until we commit: next-export cannot replace it meanwhile."""
    cur.execute("SELECT FROM taskq.tasks WHERE id = %s AND body->>'commit' = %s"
                " AND status_code = 'pending' FOR SHARE",
                (done_export_id(body["branch"]), body["commit"]))
    return cur.rowcount == 1


def export_workflow(commit):
    """The workflow key of one export's tasks (run.sh draws one with taskq.task_graph)."""
    return f"export@{commit}"


def plan_export(branch, commit, objects, in_bucket):
    """The tasks of one export, for insert_tasks.

    objects: {path: (etag, size_mb)} of the commit; in_bucket: keys now in the
    bucket.  One copy per object, one delete per key that is no longer in the
    commit, one _SUCCESS per prefix of the commit ("" is the root).  An object
    signals the _SUCCESS of its prefix (a deleted key, of its nearest prefix
    that still exists), a _SUCCESS that of the parent prefix, the root's
    _SUCCESS signals done-export-{branch}.
    """
    prefixes = {""}
    for path in objects:
        parts = path.split("/")[:-1]
        prefixes.update("/".join(parts[:i]) + "/" for i in range(1, len(parts) + 1))

    def parent(prefix):                     # "a/b/" -> "a/" -> ""
        return prefix[:prefix.rstrip("/").rfind("/") + 1]

    def home(path):                         # deepest existing prefix holding path
        prefix = path[:path.rfind("/") + 1]
        while prefix not in prefixes:
            prefix = parent(prefix)
        return prefix

    def success_id(prefix):
        return f"success@{commit}:{prefix}_SUCCESS"

    tasks = []
    flow = export_workflow(commit)
    for path in sorted(objects):
        etag, size = objects[path]
        tasks.append({"id": f"copy@{commit}:{path}", "action": "export-copy",
                      "body": {"branch": branch, "commit": commit, "path": path,
                               "etag": etag, "size_mb": size},
                      "max_tries": COPY_MAX_TRIES, "workflow": flow,
                      "to_signal_after": [success_id(home(path))]})
    markers = {prefix + "_SUCCESS" for prefix in prefixes}
    for path in sorted(in_bucket - objects.keys() - markers):
        tasks.append({"id": f"delete@{commit}:{path}", "action": "export-delete",
                      "body": {"branch": branch, "commit": commit, "path": path},
                      "max_tries": COPY_MAX_TRIES, "workflow": flow,
                      "to_signal_after": [success_id(home(path))]})
    for prefix in sorted(prefixes):
        tasks.append({"id": success_id(prefix), "action": "export-success",
                      "body": {"branch": branch, "commit": commit, "prefix": prefix},
                      "priority": PRIORITY["export-success"], "workflow": flow,
                      "to_signal_after": [success_id(parent(prefix)) if prefix
                                          else done_export_id(branch)]})
    return tasks


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="worker")
    ap.add_argument("--fail-rate", type=float, default=0.15,
                    help="chance that a copy try fails (default 0.15)")
    ap.add_argument("--stall-rate", type=float, default=0.005,
                    help="chance that a copy try stalls past its lease (default 0.005)")
    args = ap.parse_args()

    ExportWorker(args.name, args.fail_rate, args.stall_rate).run()


if __name__ == "__main__":
    main()
