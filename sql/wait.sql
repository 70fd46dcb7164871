--
-- wait_for_task: finished tasks come back at once, unfinished ones give
-- NULL after the timeout, unknown ids and negative timeouts are refused.
--
DELETE FROM taskq.tasks;
DELETE FROM public.tokens;

SELECT taskq.insert_tasks($$[{"id": "done", "action": "w", "body": {"x": 1}},
    {"id": "failed", "action": "w", "to_signal_after": ["cascaded"]},
    {"id": "cascaded", "action": "w"}, {"id": "open", "action": "w"},
    {"id": "spont", "action": "s", "spontaneous": true}]$$);
SELECT n, id FROM public.own('w', 2, '{w}');
SELECT ret('done', 'completed', 'all good');
SELECT ret('failed', 'aborted', 'bad');

-- Already finished: the row, immediately (with or without a timeout).
SELECT w.id, w.action, w.body, w.status_code, w.status, w.num_tries,
       w.finished_at IS NOT NULL AS finished
  FROM taskq.wait_for_task('done') AS w;
SELECT w.id, w.status_code, w.status FROM taskq.wait_for_task('failed', '0') AS w;
SELECT w.id, w.status_code, w.status FROM taskq.wait_for_task('cascaded', '1 hour') AS w;
SELECT w.id, w.status_code FROM taskq.wait_for_task('spont', '10 ms') AS w;
-- The whole row, of type taskq.tasks.
SELECT pg_typeof(taskq.wait_for_task('done'));
SELECT (taskq.wait_for_task('done')).id;

-- Not finished: NULL after the timeout (pending, then in progress).
SELECT w IS NULL AS timed_out FROM taskq.wait_for_task('open', '10 ms') AS w;
SELECT taskq.wait_for_task('open', '0') IS NULL AS timed_out;
SELECT n, id FROM public.own('w', 1, '{w}');
SELECT taskq.wait_for_task('open', '10 ms') IS NULL AS timed_out;
SELECT ret('open', 'completed');
SELECT (taskq.wait_for_task('open', '10 ms')).status_code;

-- Unknown id: 42704; negative timeout: 22023; NULL id: 22004.
SELECT expect_error($$SELECT taskq.wait_for_task('ghost', '10 ms')$$);
SELECT expect_error($$SELECT taskq.wait_for_task('ghost')$$);
SELECT expect_error($$SELECT taskq.wait_for_task('done', '-1 second')$$);
SELECT expect_error($$SELECT taskq.wait_for_task('open', '-1 ms')$$);
SELECT expect_error($$SELECT taskq.wait_for_task(NULL, '10 ms')$$);
SELECT expect_error($$SELECT taskq.wait_for_task('', '10 ms')$$);
SELECT expect_error(format('SELECT taskq.wait_for_task(%L, %L)', repeat('x', 256), '10 ms'));

-- Across sessions (a second session through dblink).
CREATE EXTENSION dblink;
SELECT dblink_connect('other', format('dbname=%s port=%s host=%s user=%s',
    current_database(), current_setting('port'),
    split_part(current_setting('unix_socket_directories'), ',', 1), current_user));
SELECT taskq.insert_tasks('[{"id": "rr", "action": "rr"}, {"id": "wk", "action": "wk"}]');

-- It reads the latest committed state, so it works in a REPEATABLE READ
-- transaction whose snapshot predates the finish.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT status_code FROM taskq.tasks WHERE id = 'rr';
SELECT * FROM dblink('other', $$SELECT count(taskq.return_task(id, token, 'by other', 'completed'))
                                   FROM taskq.own_tasks('other', 1, '{rr}')$$) AS t(returned bigint);
SELECT status_code FROM taskq.tasks WHERE id = 'rr';
SELECT w.id, w.status_code, w.status FROM taskq.wait_for_task('rr', '5 s') AS w;
COMMIT;

-- A waiter in the other session wakes when this session's finish commits.
SELECT clock_timestamp() AS started \gset
SELECT dblink_send_query('other', $$SELECT id, status_code, status FROM taskq.wait_for_task('wk', '60 s')$$);
-- Wait (spinning on pg_stat_activity, at most 10 s) until it sleeps.
DO $$
DECLARE
    give_up timestamptz := clock_timestamp() + interval '10 s';
BEGIN
    LOOP
        PERFORM pg_stat_clear_snapshot();
        EXIT WHEN EXISTS (SELECT FROM pg_stat_activity
                           WHERE wait_event_type = 'Extension'
                             AND query LIKE '%wait_for_task(''wk''%')
               OR clock_timestamp() > give_up;
    END LOOP;
END
$$;
SELECT count(*) AS sleeping FROM pg_stat_activity
 WHERE wait_event_type = 'Extension' AND query LIKE '%wait_for_task(''wk''%';
SELECT n, id FROM public.own('w', 1, '{wk}');
SELECT ret('wk', 'completed', 'woke');
SELECT * FROM dblink_get_result('other') AS t(id text, status_code taskq.status, status text);
SELECT clock_timestamp() - :'started'::timestamptz < interval '5 s' AS promptly;
SELECT dblink_disconnect('other');
DROP EXTENSION dblink;
