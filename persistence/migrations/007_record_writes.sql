-- What live writes record besides their own statements, for one document, as one
-- statement: each write's agent key held FOR SHARE until commit (a revocation waits for the
-- write; a key revoked before stops it), each write's document update as its own row, the
-- change rows, and the webhook outbox (each event stored once when some enabled endpoint
-- subscribes to its type, one delivery per such endpoint). Writes computed one after
-- another are stored together: one message, one reply, one commit.
--
-- Writes are taken in order up to the first whose key is revoked: that one and every later
-- one (each was computed on top of it) are not stored; the first row returned says how
-- many were. With p_all_or_nothing the statement raises instead (errcode CB401), failing
-- the transaction it is part of.
create function record_writes(
  p_doc_name text,
  p_org_id uuid,
  p_all_or_nothing boolean,
  -- One element per write, in order: its update in base64 (null when it changed nothing
  -- in the document) and its agent key (null for other writers). Base64 because drivers
  -- disagree on how to send an array of bytea.
  p_updates text[],
  p_key_ids uuid[],
  -- Change rows and events, each with the (1-based) index of its write.
  p_change_writes integer[],
  p_change_kinds text[],
  p_change_ids uuid[],
  p_event_writes integer[],
  p_event_ids uuid[],
  p_event_types text[],
  p_event_payloads text[],
  p_event_times timestamptz[]
) returns table (stored integer, delivery_id uuid) language plpgsql as $$
declare
  v_stored integer := 0;
  v_key uuid;
begin
  foreach v_key in array p_key_ids loop
    if v_key is not null then
      perform 1 from api_keys where id = v_key and revoked_at is null for share;
      if not found then
        if p_all_or_nothing then
          raise exception 'API key revoked' using errcode = 'CB401';
        end if;
        exit;
      end if;
    end if;
    v_stored := v_stored + 1;
  end loop;

  insert into doc_updates (doc_name, data)
  select p_doc_name, decode(u.data, 'base64')
    from unnest(p_updates) with ordinality as u (data, n)
   where u.data is not null and u.n <= v_stored
   order by u.n;
  insert into changes (org_id, kind, entity_id)
  select p_org_id, c.kind, c.entity_id
    from unnest(p_change_writes, p_change_kinds, p_change_ids) with ordinality
         as c (write_no, kind, entity_id, n)
   where c.write_no <= v_stored
   order by c.n;

  stored := v_stored;
  delivery_id := null;
  return next;
  if cardinality(p_event_ids) > 0 then
    return query
      with hooks as (
        select w.id, w.events from webhooks w where w.org_id = p_org_id and w.enabled
      ), stored_events as (
        insert into webhook_events (id, org_id, type, payload, created_at)
        select e.id, p_org_id, e.type, e.payload, e.at
          from unnest(p_event_writes, p_event_ids, p_event_types, p_event_payloads, p_event_times)
               as e (write_no, id, type, payload, at)
         where e.write_no <= v_stored
           and exists (select 1 from hooks h where e.type = any (h.events))
        returning webhook_events.id, webhook_events.type, webhook_events.created_at
      )
      insert into webhook_deliveries (id, webhook_id, event_id, org_id, next_attempt_at, created_at)
      select gen_random_uuid(), h.id, s.id, p_org_id, s.created_at, s.created_at
        from stored_events s join hooks h on s.type = any (h.events)
      returning v_stored, webhook_deliveries.id;
  end if;
end
$$;
