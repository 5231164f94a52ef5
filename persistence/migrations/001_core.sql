-- People, organisations and access.
create table users (
  id uuid primary key,
  email text not null unique,
  name text not null,
  password_hash text,
  is_robot boolean not null default false,
  created_at timestamptz not null default now()
);

create table organizations (
  id uuid primary key,
  name text not null,
  created_at timestamptz not null default now()
);

create table memberships (
  org_id uuid not null references organizations (id) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  role text not null check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  primary key (org_id, user_id)
);
create index memberships_user on memberships (user_id);

create table sessions (
  token_hash text primary key,
  user_id uuid not null references users (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index sessions_user on sessions (user_id);

create table invites (
  token_hash text primary key,
  org_id uuid not null references organizations (id) on delete cascade,
  email text not null,
  role text not null check (role in ('admin', 'member')),
  created_by uuid not null references users (id),
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  accepted_at timestamptz,
  accepted_by uuid references users (id)
);
create index invites_org on invites (org_id);

create table api_keys (
  id uuid primary key,
  org_id uuid not null references organizations (id) on delete cascade,
  name text not null,
  prefix text not null,
  key_hash text not null,
  robot_user_id uuid not null references users (id),
  created_by uuid not null references users (id),
  created_at timestamptz not null default now(),
  revoked_at timestamptz,
  last_used_at timestamptz
);
create index api_keys_org on api_keys (org_id);

-- Secrets the server processes share (sync-token and file-link signing).
create table server_secrets (
  name text primary key,
  secret text not null,
  created_at timestamptz not null default now()
);

-- Live documents: appended Yjs updates, compacted in the background.
create table doc_updates (
  id bigserial primary key,
  doc_name text not null,
  data bytea not null,
  created_at timestamptz not null default now()
);
create index doc_updates_doc on doc_updates (doc_name, id);

-- The change log behind get_changes. changed_at is the writing transaction's start
-- (now()), which is what makes a safe cursor computable.
create table changes (
  id bigserial primary key,
  org_id uuid not null,
  kind text not null check (kind in ('task', 'column', 'comment', 'attachment', 'claim')),
  entity_id uuid not null,
  changed_at timestamptz not null default now()
);
create index changes_org_time on changes (org_id, kind, changed_at);

-- Claims: the lock records behind claim_task, projected into the board document.
create table claims (
  task_id uuid primary key,
  org_id uuid not null references organizations (id) on delete cascade,
  key_id uuid not null references api_keys (id),
  agent_name text,
  house text,
  generation integer,
  is_sub_child boolean not null default false,
  note text,
  started_at timestamptz not null,
  updated_at timestamptz not null,
  expires_at timestamptz not null,
  released_at timestamptz
);
create index claims_org on claims (org_id);
