-- Webhooks: registered endpoints, the transactional outbox, and the delivery log.

create table webhooks (
  id uuid primary key,
  org_id uuid not null references organizations (id) on delete cascade,
  url text not null,
  events text[] not null,
  -- Needed in the clear to sign each delivery; shown to the person once, at registration.
  secret text not null,
  enabled boolean not null default true,
  disabled_reason text,
  disabled_at timestamptz,
  -- Events whose delivery finally failed since the last success; 5 switch the endpoint off.
  consecutive_failures integer not null default 0,
  created_by uuid references users (id) on delete set null,
  created_at timestamptz not null default now()
);
create index webhooks_org on webhooks (org_id);

-- One row per event that at least one endpoint subscribed to, written in the same
-- transaction as the change it announces. payload is the exact body sent, so every
-- retry carries the same bytes.
create table webhook_events (
  id uuid primary key,
  org_id uuid not null,
  type text not null,
  payload text not null,
  created_at timestamptz not null
);
create index webhook_events_created on webhook_events (created_at);

-- One row per (event, endpoint): the outbox. id is X-Service-Delivery / webhook-id.
-- No foreign key to webhooks: deleting an endpoint must never make a concurrent write
-- fail; the worker only claims rows whose endpoint exists and is enabled.
-- While a worker holds a delivery, next_attempt_at is its lease: a worker that dies
-- mid-send leaves the row due again once the lease passes, with the same id.
create table webhook_deliveries (
  id uuid primary key,
  webhook_id uuid not null,
  event_id uuid not null references webhook_events (id) on delete cascade,
  org_id uuid not null,
  status text not null default 'pending'
    check (status in ('pending', 'delivered', 'failed', 'cancelled')),
  -- Claims so far (an attempt counts from the moment a worker takes it).
  attempts integer not null default 0,
  next_attempt_at timestamptz not null,
  locked_by text,
  last_attempt_at timestamptz,
  last_status_code integer,
  last_error text,
  created_at timestamptz not null,
  finished_at timestamptz
);
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';
create index webhook_deliveries_webhook on webhook_deliveries (webhook_id, created_at);
create index webhook_deliveries_event on webhook_deliveries (event_id);
create index webhook_deliveries_finished on webhook_deliveries (finished_at) where status <> 'pending';

-- Every attempt, as the receiver answered it (or why it could not).
create table webhook_attempts (
  id bigserial primary key,
  delivery_id uuid not null references webhook_deliveries (id) on delete cascade,
  attempt integer not null,
  started_at timestamptz not null,
  duration_ms integer not null,
  status_code integer,
  error text,
  ok boolean not null
);
create index webhook_attempts_delivery on webhook_attempts (delivery_id, attempt);
