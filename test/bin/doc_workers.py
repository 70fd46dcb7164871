#!/usr/bin/env python3
"""test/bin/doc_workers.py — the complete workers shown in the documentation work.

Usage: doc_workers.py FILE.md...   (connection from PGHOST, PGPORT, PGUSER;
the worker's tools on PATH: psql, taskq-worker, python3 with the Python
client on PYTHONPATH, node with the module pg on NODE_PATH)

Conventions in the markdown (the info string's first word is the language,
so GitHub highlights the block as usual):
  ```LANG worker      a complete worker program: LANG is sh, bash, python or
                      js (run with sh, bash, python3, node).  It connects to
                      the database `app` and works tasks of action `copy`
                      whose body is {"src": FILE, "dst": FILE}: it copies src
                      to dst (paths relative to its working directory), then
                      returns the task completed.
  ```LANG file=PATH   a file the next worker block of the same markdown file
                      needs (a script it runs), written to PATH in the
                      worker's directory, executable if it starts with "#!";
                      with `worker`, the name of the worker's own file.

Each worker block is one test, in a directory of its own with a fresh
database `app` (with the extension): three copy tasks are enqueued, the
worker started; when they are completed two more are enqueued (the worker
must notice new work by itself) and must be completed too, all within
TIME_LIMIT seconds.  Workers in sh, bash and js then get a task whose lease
is lost while they work on it (lose_lease): their return is refused with
TQ001 and they must drop the task and complete the next one.  Then the
worker's process gets SIGTERM and must exit 0
within GRACE seconds, with no process of its process group left, no task
left in progress, and every destination file equal to its source.  A
worker that exits before, or a missing interpreter, fails the test.

Prints one line per worker block; the last line is "N passed, N failed".
Exit 0 only if none failed and at least one worker block was found.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from doc_sql import blocks, psql  # noqa: E402  (same directory)

DB = 'app'
TIME_LIMIT = 45      # s, for all tasks to be completed
GRACE = 20           # s, from SIGTERM to the worker's exit (4 x 65 s < the 300 s of test.sh)
RUNNERS = {          # language: (file name, command)
    'sh': ('worker.sh', ['sh']),
    'bash': ('worker.sh', ['bash']),
    'python': ('worker.py', ['python3']),
    'js': ('worker.js', ['node']),
}

# Workers that also prove they drop a task whose lease was lost (the
# harness's lose_lease).  Not python: shutil.copyfile refuses a FIFO, and
# the library's own handling of TQ001 is tested by clients/python/tests.
LEASE_LOST = ('sh', 'bash', 'js')


class Failed(Exception):
    pass


def workers(path):
    """[(line, language, text, file name or None, {path: text})] of a
    markdown file."""
    found, _ = blocks(path)
    res, files = [], {}
    for info, start, text, _, words in found:
        named = [w[len('file='):] for w in words if w.startswith('file=')]
        if 'worker' in words:
            res.append((start, info, text, named[0] if named else None, files))
            files = {}
        elif named:
            files[named[0]] = text
    return res


def sql(query, db=DB):
    r = psql(db, '-v', 'ON_ERROR_STOP=1', '-At', '-c', query)
    if r.returncode != 0:
        raise Failed('%s\n%s' % (query, r.stdout))
    return r.stdout.strip()


def enqueue(first, last, src, dst):
    tasks = []
    for n in range(first, last + 1):
        with open(os.path.join(src, '%d.txt' % n), 'w') as f:
            f.write('file %d: %s\n' % (n, os.urandom(8).hex()))
        tasks.append({'id': 'copy-%d' % n, 'action': 'copy',
                      'body': {'src': 'in/%d.txt' % n, 'dst': 'out/%d.txt' % n}})
    sql("SELECT taskq.insert_tasks('%s')" % json.dumps(tasks).replace("'", "''"))


def wait_completed(proc, count, deadline):
    """Until count tasks are completed; fails if the worker exits first."""
    while True:
        done = int(sql("SELECT count(*) FROM taskq.tasks WHERE status_code = 'completed'"))
        if done >= count:
            return
        if proc.poll() is not None:
            raise Failed('the worker exited (status %d) with %d of %d tasks completed'
                         % (proc.returncode, done, count))
        if time.monotonic() > deadline:
            raise Failed('%d of %d tasks completed after %d s:\n%s' % (
                done, count, TIME_LIMIT,
                sql("SELECT string_agg(id || ' ' || status_code || coalesce(' ' || status, ''),"
                    " E'\\n' ORDER BY id) FROM taskq.tasks")))
        time.sleep(0.2)


def lose_lease(proc, work, deadline):
    """copy-6, whose source is a FIFO, so that the worker's copy waits for
    the harness to write it: while it waits, the task's lease is expired and
    the task claimed and completed by another actor.  The worker's return
    is then refused with TQ001, and it must go on working."""
    fifo = os.path.join(work, 'in', '6.txt')
    os.mkfifo(fifo)
    sql("""SELECT taskq.insert_tasks('[{"id": "copy-6", "action": "copy", "max_tries": 5,
            "body": {"src": "in/6.txt", "dst": "out/6.txt"}}]')""")
    while sql("SELECT status_code FROM taskq.tasks WHERE id = 'copy-6'") != 'in_progress':
        if proc.poll() is not None:
            raise Failed('the worker exited (status %d) before it claimed copy-6' % proc.returncode)
        if time.monotonic() > deadline:
            raise Failed('copy-6 not claimed within %d s' % TIME_LIMIT)
        time.sleep(0.1)
    stolen = sql("""UPDATE taskq.tasks SET action_deadline = now() - interval '1 second'
                     WHERE id = 'copy-6';
                    SELECT id || ' ' || token FROM taskq.own_tasks('thief', 1, ARRAY['copy'])""")
    if not stolen.startswith('copy-6 '):
        raise Failed('the harness could not take copy-6 over: %r' % stolen)
    sql("SELECT taskq.return_task('copy-6', '%s', 'done by the thief', 'completed')"
        % stolen.split()[1])
    while True:                  # the worker opens the FIFO to read
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            if proc.poll() is not None:
                raise Failed('the worker exited (status %d) while it held copy-6' % proc.returncode)
            if time.monotonic() > deadline:
                raise Failed('the worker did not open in/6.txt (copy-6) within %d s' % TIME_LIMIT)
            time.sleep(0.1)
    try:
        os.write(fd, b'file 6\n')
    except BrokenPipeError:     # a copy that reads no further than the size: 0
        pass
    os.close(fd)


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def run_worker(lang, text, name, files, work):
    if lang not in RUNNERS:
        raise Failed('no runner for language %r (one of %s)' % (lang, ', '.join(RUNNERS)))
    default, cmd = RUNNERS[lang]
    name = name or default
    for rel, body in list(files.items()) + [(name, text)]:
        p = os.path.join(work, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, 'w') as f:
            f.write(body + '\n')
        if body.startswith('#!'):
            os.chmod(p, 0o755)
    src, dst = os.path.join(work, 'in'), os.path.join(work, 'out')
    os.mkdir(src)
    os.mkdir(dst)

    psql('postgres', '-c', 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % DB)
    r = psql('postgres', '-v', 'ON_ERROR_STOP=1', '-c', 'CREATE DATABASE %s' % DB)
    if r.returncode != 0:
        raise Failed('cannot create database %s:\n%s' % (DB, r.stdout))
    sql('CREATE EXTENSION taskq')
    enqueue(1, 3, src, dst)

    log = open(os.path.join(work, 'worker.log'), 'w+')
    try:
        proc = subprocess.Popen(cmd + [name], cwd=work, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    except FileNotFoundError:
        raise Failed('%s: not found (make deps installs it)' % cmd[0])
    try:
        deadline = time.monotonic() + TIME_LIMIT
        wait_completed(proc, 3, deadline)
        enqueue(4, 5, src, dst)
        wait_completed(proc, 5, deadline)
        if lang in LEASE_LOST:
            lose_lease(proc, work, deadline)
            enqueue(7, 7, src, dst)
            wait_completed(proc, 7, deadline)
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(GRACE)
        except subprocess.TimeoutExpired:
            raise Failed('still running %d s after SIGTERM' % GRACE)
        if rc < 0:
            raise Failed('killed by signal %d after SIGTERM (exit 0 expected)' % -rc)
        if rc != 0:
            raise Failed('exit status %d after SIGTERM (0 expected)' % rc)
        for _ in range(20):     # its children may take a moment to go
            if not group_alive(proc.pid):
                break
            time.sleep(0.1)
        else:
            raise Failed('processes of its group still running after it exited')
        held = sql("SELECT string_agg(id, ', ') FROM taskq.tasks WHERE status_code <> 'completed'")
        if held:
            raise Failed('tasks not completed after the worker stopped: %s' % held)
        if lang in LEASE_LOST:
            status = sql("SELECT status FROM taskq.tasks WHERE id = 'copy-6'")
            if status != 'done by the thief':
                raise Failed('copy-6, taken over by another actor, has status %r' % status)
        for n in [1, 2, 3, 4, 5] + ([7] if lang in LEASE_LOST else []):
            a, b = os.path.join(src, '%d.txt' % n), os.path.join(dst, '%d.txt' % n)
            if not os.path.exists(b) or open(a).read() != open(b).read():
                raise Failed('out/%d.txt is not a copy of in/%d.txt' % (n, n))
    except Failed as e:
        log.seek(0)
        raise Failed('%s\n--- the worker printed:\n%s' % (e, log.read()[-3000:]))
    finally:
        if group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()
        psql('postgres', '-c', 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % DB)


def main():
    ok = bad = seen = 0
    for path in sys.argv[1:]:
        for line, lang, text, name, files in workers(path):
            seen += 1
            where = '%s:%d' % (path, line)
            work = tempfile.mkdtemp(prefix='doc-worker-')
            t0 = time.monotonic()
            try:
                run_worker(lang, text, name, files, work)
            except Exception as e:      # Failed, or the harness's own trouble
                bad += 1
                print('   %-40s FAILED (%s worker): %s' % (where, lang, e))
                print('\n'.join('      ' + s for s in text.split('\n')))
                continue
            finally:
                shutil.rmtree(work, ignore_errors=True)
            ok += 1
            print('   %-40s ok (%s worker, %.1f s)' % (where, lang, time.monotonic() - t0))
    if not seen:
        bad += 1
        print('   FAILED: no worker block in %s' % ' '.join(sys.argv[1:]))
    print('%d passed, %d failed' % (ok, bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
