-- Reads that stay fast however long an organisation's history is.

-- get_task reads one card's thread and screenshots by card AND organisation. With only
-- (task_id, ...) and (org_id, ...) indexes the planner may AND both bitmaps, reading every
-- comment entry of the organisation (9 ms at 150,000 comments) to find a card's three.
-- One index on both keys, in the thread's order, answers it alone.
create index comments_task_org on comments (task_id, org_id, created_at, id);
drop index comments_task;
create index attachments_task_org on attachments (task_id, org_id, created_at, id);
drop index attachments_task;

-- get_board's `activity` is every card ever claimed. The server keeps it in memory per
-- organisation (server/board/activity.ts) and, on each read, fetches only the claim rows
-- changed since its last read: each row carries the transaction that last wrote it, and
-- every transaction older than the reading statement's snapshot horizon had already
-- finished (so the last read saw it). Deleted claims (force release, card deletion) leave
-- a row in claims_gone the same way. Rows from before this migration have no stamp: only
-- a full read sees them, and every cache starts with one.
alter table claims add column changed_in xid8;
create index claims_org_changed on claims (org_id, changed_in);

create function claims_stamp() returns trigger language plpgsql as $$
begin
  new.changed_in := pg_current_xact_id();
  return new;
end
$$;
create trigger claims_stamp before insert or update on claims
  for each row execute function claims_stamp();

create table claims_gone (
  org_id uuid not null,
  task_id uuid not null,
  gone_in xid8 not null,
  gone_at timestamptz not null default now()
);
create index claims_gone_org on claims_gone (org_id, gone_in);

-- A cache older than a day reads everything again (activity.ts), so older entries can go.
create function claims_gone_log() returns trigger language plpgsql as $$
begin
  delete from claims_gone where org_id = old.org_id and gone_at < now() - interval '1 day';
  insert into claims_gone (org_id, task_id, gone_in) values (old.org_id, old.task_id, pg_current_xact_id());
  return old;
end
$$;
create trigger claims_gone_log after delete on claims
  for each row execute function claims_gone_log();
