-- taskq: own_tasks, then one return_tasks for the batch (two transactions)
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(token), '{}') AS tokens FROM taskq.own_tasks('w' || :client_id, :batch, ARRAY['a'], interval '5 min') \gset
SELECT taskq.return_tasks(:ids::text[], :tokens::uuid[], NULL, array_fill('completed'::taskq.status, ARRAY[cardinality(:ids::text[])]));
