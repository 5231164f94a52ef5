-- Corkboard as its own OAuth 2.1 authorization server for /mcp (docs/design.md, "MCP sign-in").
--
-- Clients register themselves (RFC 7591); all are public clients (PKCE, no secret).
create table oauth_clients (
  id text primary key,
  name text not null,
  redirect_uris text[] not null,
  created_at timestamptz not null default now()
);

-- A grant: one person let one client act in one organisation. It acts through its own API
-- key row and robot account (key_id), never shown as a key: claims, rate budgets, write
-- attribution and revocation in flight (record_writes holds the key row FOR SHARE) are the
-- key's. Revoking the grant revokes that row.
create table oauth_grants (
  id uuid primary key,
  org_id uuid not null references organizations (id) on delete cascade,
  client_id text not null references oauth_clients (id) on delete cascade,
  key_id uuid not null unique references api_keys (id),
  granted_by uuid not null references users (id),
  redirect_uri text not null,
  resource text not null,
  created_at timestamptz not null default now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
create index oauth_grants_org on oauth_grants (org_id);

-- Authorization codes: short-lived, single use (taken by deleting the row), hash only.
create table oauth_codes (
  code_hash text primary key,
  client_id text not null references oauth_clients (id) on delete cascade,
  org_id uuid not null references organizations (id) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  redirect_uri text not null,
  code_challenge text not null,
  resource text not null,
  expires_at timestamptz not null
);

-- Access and refresh tokens, hash only. A refresh token is spent once (used_at); a spent
-- one kept until its grant ends is how a replayed refresh token is recognised.
create table oauth_tokens (
  token_hash text primary key,
  grant_id uuid not null references oauth_grants (id) on delete cascade,
  kind text not null check (kind in ('access', 'refresh')),
  expires_at timestamptz not null,
  used_at timestamptz
);
create index oauth_tokens_grant on oauth_tokens (grant_id);
