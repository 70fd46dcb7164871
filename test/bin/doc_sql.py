#!/usr/bin/env python3
"""test/bin/doc_sql.py — the SQL shown in the documentation runs.

Usage: doc_sql.py FILE.md...   (psql connection from PGHOST, PGPORT, PGUSER)

For each markdown file: a fresh database (doc_<file name>), then every
fenced block with info string ``sql`` run in order, in one psql session
(psql -X -q, aligned output, ON_ERROR_STOP), so that psql variables set by
\\gset in one block can be used in the next.  The extension is created
first (CREATE EXTENSION taskq) unless a block of the file does so itself.
The session is a superuser's; a block that needs another role says so in
SQL (SET ROLE, SET SESSION AUTHORIZATION).

Conventions in the markdown:
  ```sql            runs; any error fails the block (and the rest of the
                    file, which is reported as not run)
  ```output         right after a ```sql block (only blank lines between):
                    what psql prints for that block, compared exactly after
                    removing trailing spaces and blank lines at either end,
                    and psql's "psql:<stdin>:N: " prefix of notices.  There
                    is no masking: show only values that do not change from
                    run to run (no tokens, timestamps or PIDs).
  ```sql-nocheck    SQL that is not run (rarely: a statement that needs a
                    server restart, a second session, a password ...)
  ```ini, ```sh     configuration and shell: not run here
  ```LANG worker    a complete worker program, and ```LANG file=PATH a file
                    it needs: not run here, but by test/bin/doc_workers.py
The info string may have words after the language: only the language
decides what this script does with a block.

Roles the file created (they are cluster-wide) are dropped after its
database, except the extension's own taskq_* roles.  Prints one line per block; the last line is
"N passed, N failed" (one per ```sql block).  Exit 0 only if none failed.
"""

import os
import re
import subprocess
import sys

# A fence's info string: a language, then optional words ("python worker",
# "sh file=bin/copy": test/bin/doc_workers.py); GitHub highlights by the first.
FENCE = re.compile(r'^(```+)\s*([A-Za-z0-9_-]*)((?:\s+\S+)*)\s*$')
MARK = '@@doc-sql block %d@@'
PREFIX = re.compile(r'^psql:<stdin>:\d+: ')


def blocks(path):
    """([(language, first line number, text, closing line number, words)],
    lines) of the fenced blocks of a file; words: the info string's words
    after the language."""
    out = []
    with open(path, encoding='utf-8') as f:
        lines = f.read().split('\n')
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info, words, start = m.group(1), m.group(2), m.group(3).split(), i + 1
        body = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        if i >= len(lines):
            sys.exit('%s:%d: fenced block not closed' % (path, start))
        out.append((info, start, '\n'.join(body), i + 1, words))
        i += 1
    return out, lines


def checks(path):
    """[(line, sql, expected output or None)]"""
    found, lines = blocks(path)
    res = []
    for n, (info, start, text, end, _) in enumerate(found):
        if info != 'sql':
            continue
        expected = None
        if n + 1 < len(found) and found[n + 1][0] == 'output':
            between = lines[end:found[n + 1][1] - 1]
            if all(not s.strip() for s in between):
                expected = found[n + 1][2]
        res.append((start, text, expected))
    return res


def norm(text):
    ls = [PREFIX.sub('', s).rstrip() for s in text.split('\n')]
    while ls and not ls[0]:
        ls.pop(0)
    while ls and not ls[-1]:
        ls.pop()
    return ls


def psql(db, *args, stdin=None):
    return subprocess.run(['psql', '-X', '-q', '-d', db, *args], input=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)


def roles():
    r = psql('postgres', '-At', '-c', 'SELECT rolname FROM pg_catalog.pg_roles')
    return set(r.stdout.split())


def check_file(path):
    name = os.path.basename(path)
    todo = checks(path)
    if not todo:
        print('   %-40s no sql blocks' % path)
        return 0, 0
    db = 'doc_' + re.sub(r'[^a-z0-9]+', '_', name.lower().rsplit('.', 1)[0])
    before = roles()
    psql('postgres', '-c', 'DROP DATABASE IF EXISTS %s' % db)
    r = psql('postgres', '-v', 'ON_ERROR_STOP=1', '-c', 'CREATE DATABASE %s' % db)
    if r.returncode != 0:
        print('   %-40s FAILED: cannot create database %s\n%s' % (path, db, r.stdout))
        return 0, len(todo)
    script = []
    if not any(re.search(r'CREATE\s+EXTENSION\s+taskq', sql, re.I) for _, sql, _ in todo):
        script.append('CREATE EXTENSION taskq;')
    for n, (_, sql, _) in enumerate(todo):
        script.append('\\echo ' + MARK % n)
        script.append(sql)
    script.append('\\echo ' + MARK % len(todo))
    r = psql(db, '-v', 'ON_ERROR_STOP=1', '-f', '-', stdin='\n'.join(script) + '\n')
    # Split psql's output at the marks: parts[n] is block n's output.
    parts, cur, n = {}, [], -1
    for s in r.stdout.split('\n'):
        m = re.fullmatch(r'@@doc-sql block (\d+)@@', s)
        if m:
            if n >= 0:
                parts[n] = '\n'.join(cur)
            n, cur = int(m.group(1)), []
        else:
            cur.append(s)
    ok = bad = 0
    for i, (line, sql, expected) in enumerate(todo):
        where = '%s:%d' % (path, line)
        if i not in parts:
            if i == n:      # the block psql stopped in
                bad += 1
                print('   %-40s FAILED (psql exit %d):' % (where, r.returncode))
                print('\n'.join('      ' + s for s in sql.split('\n')))
                print('   --- psql said:')
                print('\n'.join('      ' + s for s in norm('\n'.join(cur))))
            else:
                bad += 1
                print('   %-40s FAILED: not run (an earlier block failed)' % where)
            continue
        if expected is not None and norm(parts[i]) != norm(expected):
            bad += 1
            print('   %-40s FAILED: output differs' % where)
            print('   --- expected:')
            print('\n'.join('      ' + s for s in norm(expected)))
            print('   --- psql printed:')
            print('\n'.join('      ' + s for s in norm(parts[i])))
            continue
        ok += 1
        print('   %-40s ok%s' % (where, ' (output checked)' if expected is not None else ''))
    if r.returncode != 0 and bad == 0:
        bad += 1
        print('   %-40s FAILED (psql exit %d):\n%s' % (path, r.returncode, r.stdout[-2000:]))
    psql('postgres', '-c', 'DROP DATABASE IF EXISTS %s WITH (FORCE)' % db)
    for role in sorted(r for r in roles() - before if not r.startswith('taskq_')):
        psql('postgres', '-c', 'DROP ROLE IF EXISTS "%s"' % role)
    return ok, bad


def main():
    ok = bad = 0
    for path in sys.argv[1:]:
        o, b = check_file(path)
        ok, bad = ok + o, bad + b
    print('%d passed, %d failed' % (ok, bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
