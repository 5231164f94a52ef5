-- get_changes: a card whose effective priority changed because its column was set on
-- fire (or put out) is logged with that column, so the card can be delivered together
-- with the column and counted against its own limit.
alter table changes add column via_column uuid;

-- Rate budgets as exact sliding 60-second logs, shared by every server process: one row
-- per budget and key (or organisation), holding the times (ms since the epoch) of the
-- requests the window still counts. A single upsert reads, trims and appends under the
-- row lock, so concurrent requests on any process see each other.
create table rate_limits (
  bucket text primary key,
  hits bigint[] not null,
  allowed boolean not null
);
