-- record_writes (015) stores a keyed write's answer itself; nothing calls idempotency_written.
drop function if exists idempotency_written(uuid, text, uuid, text);
