-- the hand-written queue: claim up to :batch pending jobs with one lease token (one transaction) ...
WITH c AS (UPDATE neutral.jobs AS j SET status = 'running', token = t.token, locked_until = now() + interval '5 min'
             FROM (SELECT gen_random_uuid() AS token) AS t
            WHERE j.id IN (SELECT id FROM neutral.jobs WHERE status = 'pending' ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED)
           RETURNING j.id, j.token, j.body)
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(min(token::text), '00000000-0000-0000-0000-000000000000') AS token FROM c \gset
-- ... and complete them with one UPDATE (a second transaction)
UPDATE neutral.jobs SET status = 'done', finished_at = now() WHERE id = ANY(:ids::bigint[]) AND token = :token::uuid;
