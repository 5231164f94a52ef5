-- record_writes as 021 defines it, doing less for the common write (issue 28): the batch's
-- agent keys are locked FOR SHARE in one statement (once per distinct key, in id order)
-- rather than once per write, and the row operations visit only the kinds the writes carry.
-- A card created ran 16 statements of row operations, 12 of them on kinds it has none of.
--
-- The rows a write changes or removes are each found by their primary key, one statement a
-- row. The joins they replace (`... using last_row_ops(...) where x.id = l.id and x.org_id =
-- p_org_id`) were planned once per connection, generically, with the statistics of that
-- moment: a connection that first wrote while the organisation was small kept a plan that
-- reads every row of the organisation (a bitmap scan on org_id, hash-joined with the ops),
-- so each card written cost a scan of all the organisation's cards: measured on one
-- connection, 0.9 → 5.7 ms a call over 8,000 cards, where a fresh connection took 0.7-1.2.
create or replace function record_writes(
  p_org_id uuid,
  p_all_or_nothing boolean,
  -- One element per write, in order: its agent key (null for other writers).
  p_key_ids uuid[],
  -- One element per write, in order, null for a write sent without Idempotency-Key: the API
  -- key and Idempotency-Key it holds, the attempt holding it, and the answer to store (a
  -- null answer stores status 200 and leaves the key running, for the request to store the
  -- answer it gives: see idempotency_written in 013).
  p_idem_key_ids uuid[],
  p_idem_keys text[],
  p_idem_attempts uuid[],
  p_idem_responses text[],
  -- Document updates, change rows and events, each with the (1-based) index of its write.
  -- Updates travel in base64: drivers disagree on how to send an array of bytea.
  p_update_writes integer[],
  p_update_docs text[],
  p_updates text[],
  p_change_writes integer[],
  p_change_kinds text[],
  p_change_ids uuid[],
  -- A JSON array of row operations { w, t, id, rec }: t is comment, attachment, archived
  -- (a whole record; rec null removes the row), archived_stats (an archived card's stats),
  -- text (a card's { title, description, archived }, a null title or archived keeping what
  -- is stored; rec null: the card is gone),
  -- map_touch (a map people drew on) or map_item (a node or edge people drew: { mapId, kind }).
  p_ops text,
  p_event_writes integer[],
  p_event_ids uuid[],
  p_event_types text[],
  p_event_payloads text[],
  p_event_times timestamptz[],
  -- One element per event: the X-Request-Id of the request that raised it (null for
  -- people's live edits and the server's own writes).
  p_event_request_ids text[] default null,
  -- One element per update: the generation of the document it was made on. A document
  -- re-based since is refused (CB410): the update belongs to a generation that is gone.
  p_update_generations integer[] default null
) returns table (stored integer, refused text, delivery_id uuid) language plpgsql as $$
declare
  v_stored integer := 0;
  v_refused text;
  v_key uuid;
  v_response text;
  v_ops jsonb := coalesce(p_ops, '[]')::jsonb;
  v_rebased text;
  v_live uuid[];
  v_types text[];
  v_op record;
begin
  -- The batch's agent keys, each distinct one held FOR SHARE until the commit in one
  -- statement (share locks never wait on each other; a revocation's UPDATE waits for them).
  select coalesce(array_agg(k.id), '{}') into v_live
    from (select a.id from api_keys a
           where a.id = any (p_key_ids) and a.revoked_at is null
           order by a.id for share) k;
  for i in 1 .. cardinality(p_key_ids) loop
    v_key := p_key_ids[i];
    if v_key is not null and not v_key = any (v_live) then
      if p_all_or_nothing then
        raise exception 'API key revoked' using errcode = 'CB401';
      end if;
      v_refused := 'key';
      exit;
    end if;
    -- The row stays locked until the commit: a retry's claim waits for it, so a key is
    -- never taken from a write that committed.
    if p_idem_attempts[i] is not null then
      v_response := p_idem_responses[i];
      update agent_idempotency
         set status = 200, response = v_response,
             state = case when v_response is null then state else 'done' end,
             lease_until = case when v_response is null then lease_until end
       where key_id = p_idem_key_ids[i] and idempotency_key = p_idem_keys[i]
         and attempt = p_idem_attempts[i];
      if not found then
        if p_all_or_nothing then
          raise exception 'Idempotency-Key taken over by a retry' using errcode = 'CB409';
        end if;
        v_refused := 'idempotency';
        exit;
      end if;
    end if;
    v_stored := v_stored + 1;
  end loop;

  -- Each write holds its documents' generation lock, shared, until it commits; a re-base
  -- takes it alone (server/live/rebase.ts), so no update of the old generation is stored
  -- after the new one: it waits, then finds its generation gone.
  if p_update_generations is not null and cardinality(p_update_docs) > 0 then
    perform pg_advisory_xact_lock_shared(hashtext('generation:' || d.doc_name))
       from (select distinct x.doc_name from unnest(p_update_docs) as x (doc_name)
              order by 1) d;
    select u.doc_name into v_rebased
      from unnest(p_update_docs, p_update_generations) as u (doc_name, generation)
     where u.generation <> coalesce((select g.generation + 1 from doc_generations g
                                      where g.doc_name = u.doc_name
                                      order by g.generation desc limit 1), 0)
     limit 1;
    if v_rebased is not null then
      raise exception 'document % was re-based', v_rebased using errcode = 'CB410';
    end if;
  end if;

  insert into doc_updates (doc_name, data)
  select u.doc_name, decode(u.data, 'base64')
    from unnest(p_update_writes, p_update_docs, p_updates) with ordinality
         as u (write_no, doc_name, data, n)
   where u.write_no <= v_stored
   order by u.n;
  insert into changes (org_id, kind, entity_id)
  select p_org_id, c.kind, c.entity_id
    from unnest(p_change_writes, p_change_kinds, p_change_ids) with ordinality
         as c (write_no, kind, entity_id, n)
   where c.write_no <= v_stored
   order by c.n;

  if jsonb_array_length(v_ops) > 0 then
    -- Only the kinds of row the writes touch are visited: a card created is a text and a
    -- history op, and skips the statements of comments, screenshots, archives and maps.
    select array_agg(distinct e->>'t') into v_types from jsonb_array_elements(v_ops) as e;
    if 'comment' = any (v_types) then
      for v_op in select * from last_row_ops(v_ops, v_stored, 'comment') where rec is null loop
        delete from comments where id = v_op.id and org_id = p_org_id;
      end loop;
      insert into comments (id, org_id, task_id, body, author_email, agent_name, created_at,
                            edited_at)
      select l.id, p_org_id, (l.rec->>'taskId')::uuid, l.rec->>'body', l.rec->>'authorEmail',
             l.rec->>'agentName', (l.rec->>'createdAt')::timestamptz,
             (l.rec->>'editedAt')::timestamptz
        from last_row_ops(v_ops, v_stored, 'comment') l
       where l.rec is not null
      on conflict (id) do update set body = excluded.body, edited_at = excluded.edited_at;
    end if;

    if 'attachment' = any (v_types) then
      for v_op in select * from last_row_ops(v_ops, v_stored, 'attachment') where rec is null loop
        delete from attachments where id = v_op.id and org_id = p_org_id;
      end loop;
      insert into attachments (id, org_id, task_id, filename, mime_type, size, created_at)
      select l.id, p_org_id, (l.rec->>'taskId')::uuid, l.rec->>'filename', l.rec->>'mimeType',
             (l.rec->>'size')::integer, (l.rec->>'createdAt')::timestamptz
        from last_row_ops(v_ops, v_stored, 'attachment') l
       where l.rec is not null
      on conflict (id) do nothing;
    end if;

    if 'archived' = any (v_types) then
      for v_op in select * from last_row_ops(v_ops, v_stored, 'archived') where rec is null loop
        delete from archived_tasks where id = v_op.id and org_id = p_org_id;
      end loop;
      insert into archived_tasks (id, org_id, column_id, archived_at, record)
      select l.id, p_org_id, (l.rec->>'columnId')::uuid, (l.rec->>'archivedAt')::timestamptz, l.rec
        from last_row_ops(v_ops, v_stored, 'archived') l
       where l.rec is not null
      on conflict (id) do update set column_id = excluded.column_id,
                                     archived_at = excluded.archived_at, record = excluded.record;
    end if;
    if 'archived_stats' = any (v_types) then
      for v_op in select * from last_row_ops(v_ops, v_stored, 'archived_stats') where rec is not null
      loop
        update archived_tasks set record = jsonb_set(record, '{stats}', v_op.rec)
         where id = v_op.id and org_id = p_org_id;
      end loop;
    end if;

    if 'text' = any (v_types) then
      -- Each card's words and archived state (task_texts: search_tasks, and the home of its
      -- description): the last text op of a card says what it is now; a null title or
      -- archived keeps what is stored, a null record: the card is gone.
      for v_op in select * from last_row_ops(v_ops, v_stored, 'text') loop
        if v_op.rec is null then
          delete from task_texts where id = v_op.id and org_id = p_org_id;
        else
          update task_texts
             set title = coalesce(v_op.rec->>'title', title),
                 description = coalesce(v_op.rec->>'description', ''),
                 archived = coalesce((v_op.rec->>'archived')::boolean, archived)
           where id = v_op.id and org_id = p_org_id;
          if not found then
            insert into task_texts (id, org_id, title, description, archived)
            values (v_op.id, p_org_id, coalesce(v_op.rec->>'title', ''),
                    coalesce(v_op.rec->>'description', ''),
                    coalesce((v_op.rec->>'archived')::boolean, false))
            on conflict (id) do nothing;
          end if;
        end if;
      end loop;
    end if;

    if 'history' = any (v_types) then
      -- Each card's history (issue 32): every history op of a stored write, in order.
      insert into card_history (org_id, task_id, kind, actor, detail, at)
      select p_org_id, (h.e->>'id')::uuid, h.e->'rec'->>'kind', h.e->'rec'->'actor',
             coalesce(h.e->'rec'->'detail', '{}'::jsonb), (h.e->'rec'->>'at')::timestamptz
        from jsonb_array_elements(v_ops) with ordinality as h (e, n)
       where h.e->>'t' = 'history' and (h.e->>'w')::integer <= v_stored
       order by h.n;
    end if;

    if 'map_touch' = any (v_types) then
      for v_op in select * from last_row_ops(v_ops, v_stored, 'map_touch') loop
        update maps set updated_at = now()
         where id = v_op.id and org_id = p_org_id and deleted_at is null;
      end loop;
    end if;
    if 'map_item' = any (v_types) then
      insert into map_items (id, org_id, map_id, kind)
      select l.id, p_org_id, (l.rec->>'mapId')::uuid, l.rec->>'kind'
        from last_row_ops(v_ops, v_stored, 'map_item') l
        join maps m on m.id = (l.rec->>'mapId')::uuid and m.org_id = p_org_id
      on conflict (id) do nothing;
    end if;
  end if;

  stored := v_stored;
  refused := v_refused;
  delivery_id := null;
  return next;
  if cardinality(p_event_ids) > 0 then
    return query
      with hooks as (
        select w.id, w.events from webhooks w where w.org_id = p_org_id and w.enabled
      ), stored_events as (
        insert into webhook_events (id, org_id, type, payload, created_at, request_id)
        select e.id, p_org_id, e.type, e.payload, e.at, e.request_id
          from unnest(p_event_writes, p_event_ids, p_event_types, p_event_payloads, p_event_times,
                      p_event_request_ids)
               as e (write_no, id, type, payload, at, request_id)
         where e.write_no <= v_stored
           and exists (select 1 from hooks h where e.type = any (h.events))
        returning webhook_events.id, webhook_events.type, webhook_events.created_at
      )
      insert into webhook_deliveries (id, webhook_id, event_id, org_id, next_attempt_at, created_at)
      select gen_random_uuid(), h.id, s.id, p_org_id, s.created_at, s.created_at
        from stored_events s join hooks h on s.type = any (h.events)
      returning v_stored, v_refused, webhook_deliveries.id;
  end if;
end
$$;

