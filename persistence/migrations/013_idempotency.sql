-- Idempotency-Key on POST /api/agent (server/agent/idempotency.ts, docs/agent-api.md).
--
-- One row per (API key, Idempotency-Key) sent with a write, kept 24 hours (expires_at) and
-- then swept. `attempt` names the request running under the key: it holds the key while its
-- lease (lease_until, renewed while it runs) lasts, and only it may store the answer. A
-- write's transaction stores status 200 and the write's result (idempotency_written) before
-- it commits, so a retry after a crash between commit and answer replays instead of writing
-- twice; state 'done' says the answer stored is the one to replay.
create table agent_idempotency (
  key_id uuid not null references api_keys (id) on delete cascade,
  idempotency_key text not null,
  -- SHA-256 (hex) of the action and its canonical params: the same key with another body is a 422.
  fingerprint text not null,
  attempt uuid not null,
  state text not null check (state in ('running', 'done')),
  lease_until timestamptz,
  status smallint,
  response text,
  expires_at timestamptz not null,
  primary key (key_id, idempotency_key)
);
create index agent_idempotency_expiry on agent_idempotency (expires_at);

-- Issued inside a write's transaction without waiting for its reply: stores the write's
-- result as the answer, the key done with it (a result the action does not answer, null,
-- waits for the request to store its answer), or raises (CB409, failing the write) when a
-- retry took the key over.
create function idempotency_written(p_key_id uuid, p_key text, p_attempt uuid, p_response text)
returns void language plpgsql as $$
begin
  update agent_idempotency
     set status = 200, response = p_response,
         state = case when p_response is null then state else 'done' end,
         lease_until = case when p_response is null then lease_until end
   where key_id = p_key_id and idempotency_key = p_key and attempt = p_attempt;
  if not found then
    raise exception 'Idempotency-Key taken over by a retry' using errcode = 'CB409';
  end if;
end
$$;
