-- A worker's cycle (the proxy workload): the claim of one task, committed,
-- then its return, committed, as a worker does around its work.
SELECT id, token FROM taskq.own_tasks('bench', 1, ARRAY['work'], '1 minute') \gset
SELECT taskq.return_task(:id, :token, NULL, 'completed');
