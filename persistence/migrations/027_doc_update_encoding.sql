-- How a stored row's bytes are encoded: Yjs's update format 1, or 2 (server/live/doc-store.ts).
-- Snapshots are stored in format 2, about a quarter smaller: it writes each field of the
-- items (clients, clocks, keys, lengths) as a column of its own, run-length encoded, where
-- format 1 writes them item by item. Appended updates stay in format 1, which is what
-- providers send and what the writing functions store; every row written before is too.
alter table doc_updates add column encoding smallint not null default 1
  check (encoding in (1, 2));
