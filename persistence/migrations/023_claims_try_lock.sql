-- The batch's claim check (019) no longer waits for a card's claim lock: it tries it, and a
-- card whose lock another transaction holds (another process claiming, releasing or
-- checking it this moment) refuses its decision as one that no longer holds: that write and
-- those after it are computed again, deciding claims in Postgres, where claim_next passes
-- over a locked card (skip locked) and the others wait for it. So a batch of writes never
-- waits on another process's transaction, nor makes claim_next hand out a card being
-- claimed elsewhere.
create or replace function record_claimed_writes(
  p_claims text,
  p_org_id uuid,
  p_all_or_nothing boolean,
  p_key_ids uuid[],
  p_idem_key_ids uuid[],
  p_idem_keys text[],
  p_idem_attempts uuid[],
  p_idem_responses text[],
  p_update_writes integer[],
  p_update_docs text[],
  p_updates text[],
  p_change_writes integer[],
  p_change_kinds text[],
  p_change_ids uuid[],
  p_ops text,
  p_event_writes integer[],
  p_event_ids uuid[],
  p_event_types text[],
  p_event_payloads text[],
  p_event_times timestamptz[],
  p_event_request_ids text[],
  p_update_generations integer[]
) returns table (stored integer, refused text, delivery_id uuid) language plpgsql as $$
declare
  v_claims jsonb := coalesce(p_claims, '[]')::jsonb;
  v_first_refused integer;
  v_seen text[] := '{}';
  v_busy text[];
  v_writes integer;
  v_stored integer;
  v_first boolean := true;
  c record;
  r record;
begin
  -- Every card of the batch locked first, in one order, without waiting: the key space is
  -- CLAIM_LOCK_SPACE (0x636c6d). A card whose lock another transaction holds is being
  -- changed elsewhere: its decision does not stand.
  select coalesce(array_agg(x.id), '{}') into v_busy
    from (select distinct e->>'id' as id from jsonb_array_elements(v_claims) e order by 1) x
   where not pg_try_advisory_xact_lock(6515821, hashtext(x.id));

  for c in
    select (e->>'w')::integer as w, e->>'id' as id, (e->>'now')::timestamptz as at,
           (e->>'live')::boolean as live, (e->>'key')::uuid as key_id,
           (e->>'started')::timestamptz as started
      from jsonb_array_elements(v_claims) with ordinality as x (e, n)
     order by (e->>'w')::integer, n
  loop
    if not (c.id = any (v_seen)) then
      -- Read after the lock is granted: every claim committed before is seen. A busy card's
      -- decision does not stand (the empty perform leaves FOUND false).
      if c.id = any (v_busy) then
        perform 1 where false;
      elsif c.live then
        perform 1 from claims k
         where k.task_id = c.id::uuid and k.org_id = p_org_id and k.released_at is null
           and k.expires_at > c.at and k.key_id = c.key_id and k.started_at = c.started;
      else
        perform 1 from claims k
         where k.task_id = c.id::uuid and k.released_at is null and k.expires_at > c.at
        having count(*) = 0;
      end if;
      if not found then
        if p_all_or_nothing then
          raise exception 'the claim of card % changed', c.id using errcode = 'CB423';
        end if;
        v_first_refused := c.w;
        exit;
      end if;
      v_seen := v_seen || c.id;
    end if;
  end loop;

  v_writes := cardinality(p_key_ids);
  if v_first_refused is not null then
    v_writes := v_first_refused - 1;
  end if;

  for r in
    select * from record_writes(
      p_org_id, p_all_or_nothing, p_key_ids[1:v_writes], p_idem_key_ids, p_idem_keys,
      p_idem_attempts, p_idem_responses, p_update_writes, p_update_docs, p_updates,
      p_change_writes, p_change_kinds, p_change_ids, p_ops, p_event_writes, p_event_ids,
      p_event_types, p_event_payloads, p_event_times, p_event_request_ids,
      p_update_generations)
  loop
    if v_first then
      v_first := false;
      v_stored := r.stored;
      -- The claim rows of the stored writes: each card's last row.
      insert into claims (task_id, org_id, key_id, agent_name, house, generation, is_sub_child,
                          note, started_at, updated_at, expires_at, released_at)
      select l.id::uuid, p_org_id, (l.row->>'key_id')::uuid, l.row->>'agent_name',
             l.row->>'house', (l.row->>'generation')::integer,
             (l.row->>'is_sub_child')::boolean, l.row->>'note',
             (l.row->>'started_at')::timestamptz, (l.row->>'updated_at')::timestamptz,
             (l.row->>'expires_at')::timestamptz, (l.row->>'released_at')::timestamptz
        from (select distinct on (e->>'id') e->>'id' as id, e->'row' as row
                from jsonb_array_elements(v_claims) with ordinality as x (e, n)
               where (e->>'w')::integer <= v_stored and e ? 'row'
               order by e->>'id', n desc) l
      on conflict (task_id) do update set
        org_id = excluded.org_id, key_id = excluded.key_id, agent_name = excluded.agent_name,
        house = excluded.house, generation = excluded.generation,
        is_sub_child = excluded.is_sub_child, note = excluded.note,
        started_at = excluded.started_at, updated_at = excluded.updated_at,
        expires_at = excluded.expires_at, released_at = excluded.released_at;
    end if;
    stored := r.stored;
    refused := r.refused;
    if r.refused is null and v_first_refused is not null and r.stored = v_writes then
      refused := 'claim';
    end if;
    delivery_id := r.delivery_id;
    return next;
  end loop;
end
$$;
