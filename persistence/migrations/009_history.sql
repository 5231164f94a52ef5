-- Version 2 of the live documents (docs/design.md, Contract 3): the board document holds what
-- is on the board now; history lives here. Comments and screenshots live in each card's
-- own document and are indexed below, so reads never scan an organisation's history.

-- Every comment, as its card's document holds it; written in the same transaction as the
-- document update that adds, edits or removes it.
create table comments (
  id uuid primary key,
  org_id uuid not null,
  task_id uuid not null,
  body text not null,
  author_email text not null,
  agent_name text,
  created_at timestamptz not null,
  edited_at timestamptz
);
-- get_task (one card's thread, oldest first) and get_board's include (newest 500).
create index comments_task on comments (task_id, created_at, id);
create index comments_org_recent on comments (org_id, created_at desc, id desc);

-- Every screenshot's entry (its bytes are in `files`, under the same id).
create table attachments (
  id uuid primary key,
  org_id uuid not null,
  task_id uuid not null,
  filename text not null,
  mime_type text not null,
  size integer not null,
  created_at timestamptz not null
);
create index attachments_task on attachments (task_id, created_at, id);
create index attachments_org_recent on attachments (org_id, created_at desc, id desc);

-- Cards off the board: each archived card, whole, as get_task shows it (its description
-- as text, its stats). The row appears in the transaction that removes the card from the
-- board document and goes in the one that restores it.
create table archived_tasks (
  id uuid primary key,
  org_id uuid not null,
  column_id uuid not null,
  archived_at timestamptz not null,
  record jsonb not null
);
-- The Archived view (newest archive first) and delete_column's count of a column's cards.
create index archived_tasks_org_recent on archived_tasks (org_id, archived_at desc, id desc);
create index archived_tasks_column on archived_tasks (org_id, column_id);

-- Stored document rows by compaction level: 0 = one write's update, 1 = a run of those
-- merged, 2 = a snapshot replayed from everything before it. Compaction keeps a cold load
-- to a bounded number of rows (server/live/compaction.ts).
alter table doc_updates add column level smallint not null default 0;

-- The last operation on each row an operation list names (for one table), among the
-- writes that are stored: a later one replaces an earlier one; `rec` null removes.
create function last_row_ops(p_ops jsonb, p_stored integer, p_table text)
returns table (id uuid, rec jsonb) language sql immutable as $$
  select distinct on (o.id) o.id, o.rec
    from (
      select (e->>'id')::uuid as id, nullif(e->'rec', 'null'::jsonb) as rec, n
        from jsonb_array_elements(p_ops) with ordinality as x (e, n)
       where e->>'t' = p_table and (e->>'w')::integer <= p_stored
    ) o
   order by o.id, o.n desc
$$;

drop function record_writes(text, uuid, boolean, text[], uuid[], integer[], text[], uuid[],
                            integer[], uuid[], text[], text[], timestamptz[]);

-- What live writes record besides their own statements, for one organisation, as one
-- statement: each write's agent key held FOR SHARE until commit (a revocation waits for the
-- write; a key revoked before stops it), each write's document updates (one row per write
-- and document), the change rows, the rows of comments, screenshots and archived cards the
-- writes put or removed, and the webhook outbox (each event stored once when some enabled
-- endpoint subscribes to its type, one delivery per such endpoint). Writes computed one
-- after another are stored together: one message, one reply, one commit.
--
-- Writes are taken in order up to the first whose key is revoked: that one and every later
-- one (each was computed on top of it) are not stored; the first row returned says how
-- many were. With p_all_or_nothing the statement raises instead (errcode CB401), failing
-- the transaction it is part of.
create function record_writes(
  p_org_id uuid,
  p_all_or_nothing boolean,
  -- One element per write, in order: its agent key (null for other writers).
  p_key_ids uuid[],
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
  -- map_touch (a map people drew on) or map_item (a node or edge people drew: { mapId, kind }).
  p_ops text,
  p_event_writes integer[],
  p_event_ids uuid[],
  p_event_types text[],
  p_event_payloads text[],
  p_event_times timestamptz[]
) returns table (stored integer, delivery_id uuid) language plpgsql as $$
declare
  v_stored integer := 0;
  v_key uuid;
  v_ops jsonb := coalesce(p_ops, '[]')::jsonb;
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
    delete from comments c using last_row_ops(v_ops, v_stored, 'comment') l
     where c.id = l.id and c.org_id = p_org_id and l.rec is null;
    insert into comments (id, org_id, task_id, body, author_email, agent_name, created_at,
                          edited_at)
    select l.id, p_org_id, (l.rec->>'taskId')::uuid, l.rec->>'body', l.rec->>'authorEmail',
           l.rec->>'agentName', (l.rec->>'createdAt')::timestamptz,
           (l.rec->>'editedAt')::timestamptz
      from last_row_ops(v_ops, v_stored, 'comment') l
     where l.rec is not null
    on conflict (id) do update set body = excluded.body, edited_at = excluded.edited_at;

    delete from attachments a using last_row_ops(v_ops, v_stored, 'attachment') l
     where a.id = l.id and a.org_id = p_org_id and l.rec is null;
    insert into attachments (id, org_id, task_id, filename, mime_type, size, created_at)
    select l.id, p_org_id, (l.rec->>'taskId')::uuid, l.rec->>'filename', l.rec->>'mimeType',
           (l.rec->>'size')::integer, (l.rec->>'createdAt')::timestamptz
      from last_row_ops(v_ops, v_stored, 'attachment') l
     where l.rec is not null
    on conflict (id) do nothing;

    delete from archived_tasks a using last_row_ops(v_ops, v_stored, 'archived') l
     where a.id = l.id and a.org_id = p_org_id and l.rec is null;
    insert into archived_tasks (id, org_id, column_id, archived_at, record)
    select l.id, p_org_id, (l.rec->>'columnId')::uuid, (l.rec->>'archivedAt')::timestamptz, l.rec
      from last_row_ops(v_ops, v_stored, 'archived') l
     where l.rec is not null
    on conflict (id) do update set column_id = excluded.column_id,
                                   archived_at = excluded.archived_at, record = excluded.record;
    update archived_tasks a set record = jsonb_set(a.record, '{stats}', l.rec)
      from last_row_ops(v_ops, v_stored, 'archived_stats') l
     where a.id = l.id and a.org_id = p_org_id and l.rec is not null;

    update maps m set updated_at = now()
      from last_row_ops(v_ops, v_stored, 'map_touch') l
     where m.id = l.id and m.org_id = p_org_id and m.deleted_at is null;
    insert into map_items (id, org_id, map_id, kind)
    select l.id, p_org_id, (l.rec->>'mapId')::uuid, l.rec->>'kind'
      from last_row_ops(v_ops, v_stored, 'map_item') l
      join maps m on m.id = (l.rec->>'mapId')::uuid and m.org_id = p_org_id
    on conflict (id) do nothing;
  end if;

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
