-- One claim of a plain task and its return (the timers workload).
WITH o AS (SELECT * FROM taskq.own_tasks('bench', 1, ARRAY['work'], '1 minute'))
SELECT taskq.return_task(o.id, o.token, NULL, 'completed') FROM o;
