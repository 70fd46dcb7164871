-- the floor: a pop that deletes, no lease (one transaction)
DELETE FROM neutral.floor WHERE id IN (SELECT id FROM neutral.floor ORDER BY id LIMIT :batch FOR UPDATE SKIP LOCKED) RETURNING id, body;
