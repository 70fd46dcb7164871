--
-- Last file of the suite: every error the suite provoked through
-- expect_error() was logged.  None may be an internal error (class XX:
-- XX000 "internal_error" is what elog(ERROR) gives).  The SQLSTATEs seen
-- are listed, for the record of what the suite covers.
--
SELECT count(*) > 0 AS errors_checked,
       count(*) FILTER (WHERE sqlstate LIKE 'XX%') AS internal_errors
  FROM public.seen_errors;
SELECT sqlstate, message FROM public.seen_errors WHERE sqlstate LIKE 'XX%';
SELECT sqlstate, count(*) > 0 AS seen
  FROM public.seen_errors GROUP BY sqlstate ORDER BY sqlstate COLLATE "C";
-- No dependency-graph lock (advisory, per transaction) outlived its call.
SELECT count(*) AS advisory_locks_held
  FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid();
