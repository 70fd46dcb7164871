#!/usr/bin/env python3
"""worker.py: a taskq worker for the email subscription machine.

A taskq.Worker (clients/python, set up by ../demo.py) runs the two states of
the machine SendSubscriberEmail (schema.sql); a machine step is an ordinary
task, and the plain return of the library is the machine's transition: the
handler's return value is the event (None in a final state ends the run),
the context stays as it was.

  send-email   (SendEmail, a continuation state) the step's body carries the
               cursor, the id of the last subscriber an earlier instance took
               (NULL for the first).  The handler reads the next subscriber
               after it and, if one is left after that, forks the machine for
               it with taskq.continue_machine and COMMITS at once: the next
               instance is then visible to the other workers while this one
               sends (the dataset is passed forward before it is operated
               on).  A retry of the step gets the fork already made.  Then it
               "sends" the email (a row in mail_demo.outbox, committed with the
               step's return) and returns the event "ok".
  count-email  (CountEmail, fan_in 3) one task per 3-second batch of instances:
               taskq.fan_in_contexts lists them; the handler adds their number
               to the one counter (mail_demo.email_batch) in one update and
               returns None: the batch's first instance succeeds, the others
               end merged.
"""

import argparse

from common import ACTIONS, detail, log, once, worker


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", default="worker")
    args = ap.parse_args()
    name = args.name
    w = worker(name, f"email-subscription {name}", 10.0)

    @w.task("send-email")
    def send_email(task):
        cur = task.conn.cursor()
        cursor = task.body.get("cursor")
        cur.execute("SELECT id, email FROM mail_demo.subscribers WHERE id > %s"
                    " ORDER BY id LIMIT 2", (int(cursor) if cursor is not None else 0,))
        rows = cur.fetchall()
        if not rows:
            return "ok"
        subscriber, email = rows[0]
        if len(rows) > 1:
            cur.execute("SELECT taskq.continue_machine(%s, %s, %s)",
                        (task.id, task.token, str(subscriber)))
            task.conn.commit()      # the next instance is out: other workers take it now
            if once("forked"):
                log(name, f"{task.id}: forked the machine for the subscriber after"
                          f" {subscriber} and committed the fork before sending")
        cur.execute("INSERT INTO mail_demo.outbox (subscriber, run, task, worker)"
                    " VALUES (%s, %s, %s, %s)", (subscriber, task.body["run"], task.id, w.actor))
        w.counts["emails"] += 1
        detail(name, f"{task.id}: sent to {email}")
        return "ok"

    @w.task("count-email")
    def count_email(task):
        cur = task.conn.cursor()
        cur.execute("SELECT count(*) FROM taskq.fan_in_contexts(%s, %s)", (task.id, task.token))
        n = cur.fetchone()[0]
        cur.execute("UPDATE mail_demo.email_batch SET counter = counter + %s WHERE key = '1'"
                    " RETURNING counter", (n,))
        total = cur.fetchone()[0]
        cur.execute("INSERT INTO mail_demo.batches (task, size, worker) VALUES (%s, %s, %s)",
                    (task.id, n, w.actor))
        w.counts["batches"] += 1
        log(name, f"{task.id}: a batch of {n} instances, one counter update: {total} emails counted")
        return None

    assert sorted(ACTIONS) == w.actions
    w.run()


if __name__ == "__main__":
    main()
