-- record_writes (007) holds a write's key FOR SHARE itself; nothing calls hold_api_key.
drop function if exists hold_api_key(uuid);
