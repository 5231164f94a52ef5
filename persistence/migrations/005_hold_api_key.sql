-- Locks an API key row FOR SHARE for the rest of the transaction and raises when the key
-- is revoked or gone, so a write can pipeline its key check with its COMMIT: a revocation
-- waits for the writes holding the key, and every later write fails here.
create function hold_api_key(key_id uuid) returns void language plpgsql as $$
begin
  perform 1 from api_keys where id = key_id and revoked_at is null for share;
  if not found then
    raise exception 'API key revoked' using errcode = 'CB401';
  end if;
end
$$;
