import { randomUUID } from 'node:crypto'
import type { Db, Queryable } from '../../persistence/types.ts'
import { isUuid } from '../../shared/ids.ts'
import { displayPrefix } from './api-key-format.ts'
import { type ApiKeyRow, type KeyLookupRow, keyRowOf, robotEmail } from './api-keys.ts'
import { randomToken, sha256Hex } from './crypto.ts'

/** An access token lives this long; the client refreshes it with its refresh token. */
export const ACCESS_TOKEN_SECONDS = 3600
/** A refresh token unused this long lapses (each refresh issues a new one). */
export const REFRESH_TOKEN_DAYS = 30

/**
 * Token prefixes: an OAuth token is told from an API key (`cb_`) by its first characters,
 * before any query, and a token pasted where a key belongs is refused as malformed.
 */
export const ACCESS_TOKEN_PREFIX = 'cbat_'
export const REFRESH_TOKEN_PREFIX = 'cbrt_'

export interface GrantSummary {
  id: string
  clientName: string
  /** The host the client's redirect URI points at, e.g. `claude.ai`. */
  redirectHost: string
  grantedByEmail: string
  robotEmail: string
  createdAt: string
  lastUsedAt: string | null
}

const iso = (d: unknown) => (d instanceof Date ? d.toISOString() : String(d))

const hostOf = (uri: string) => {
  try {
    return new URL(uri).host
  } catch {
    return uri
  }
}

/** The organisation's connected apps (live grants), oldest first. */
export async function listGrants(db: Queryable, orgId: string): Promise<GrantSummary[]> {
  const rows = await db.query<{
    id: string
    client_name: string
    redirect_uri: string
    granted_by_email: string
    robot_email: string
    created_at: Date
    last_used_at: Date | null
  }>(
    `select g.id, c.name as client_name, g.redirect_uri, p.email as granted_by_email,
            r.email as robot_email, g.created_at, g.last_used_at
       from oauth_grants g
       join oauth_clients c on c.id = g.client_id
       join users p on p.id = g.granted_by
       join api_keys k on k.id = g.key_id
       join users r on r.id = k.robot_user_id
      where g.org_id = $1 and g.revoked_at is null
      order by g.created_at, g.id`,
    [orgId],
  )
  return rows.map((r) => ({
    id: r.id,
    clientName: r.client_name,
    redirectHost: hostOf(r.redirect_uri),
    grantedByEmail: r.granted_by_email,
    robotEmail: r.robot_email,
    createdAt: iso(r.created_at),
    lastUsedAt: r.last_used_at ? iso(r.last_used_at) : null,
  }))
}

/**
 * Revokes a grant: its tokens go, and its key row is revoked, which waits for every write
 * holding that row FOR SHARE (as revoking an API key does), so once this returns nothing
 * under the grant can still commit. Returns the key id to close live connections with
 * (`live.closeConnections({ keyId })`), or undefined when there was no such live grant.
 */
export async function revokeGrant(
  db: Db,
  orgId: string,
  grantId: string,
): Promise<{ keyId: string } | undefined> {
  if (!isUuid(grantId)) return undefined
  return db.transaction(async (tx) => {
    const [grant] = await tx.query<{ key_id: string }>(
      `update oauth_grants set revoked_at = now()
        where id = $1 and org_id = $2 and revoked_at is null returning key_id`,
      [grantId.toLowerCase(), orgId],
    )
    if (!grant) return undefined
    await tx.query('delete from oauth_tokens where grant_id = $1', [grantId.toLowerCase()])
    await tx.query('update api_keys set revoked_at = now() where id = $1 and revoked_at is null', [
      grant.key_id,
    ])
    return { keyId: grant.key_id }
  })
}

/** What a token request answers (RFC 6749 §5.1). */
export interface IssuedTokens {
  access_token: string
  token_type: 'Bearer'
  expires_in: number
  refresh_token: string
}

async function issueTokens(tx: Queryable, grantId: string): Promise<IssuedTokens> {
  const access = ACCESS_TOKEN_PREFIX + randomToken(32)
  const refresh = REFRESH_TOKEN_PREFIX + randomToken(32)
  await tx.query(
    `insert into oauth_tokens (token_hash, grant_id, kind, expires_at) values
       ($1, $3, 'access', now() + make_interval(secs => $4)),
       ($2, $3, 'refresh', now() + make_interval(days => $5))`,
    [sha256Hex(access), sha256Hex(refresh), grantId, ACCESS_TOKEN_SECONDS, REFRESH_TOKEN_DAYS],
  )
  return {
    access_token: access,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_SECONDS,
    refresh_token: refresh,
  }
}

/**
 * Creates a grant with its robot account and key row, and its first tokens, in one
 * transaction. The robot is labelled "<client> via <person>"; the key row's hash is of a
 * secret nobody is given, so the row never authenticates as a key.
 */
export async function createGrant(
  db: Db,
  input: {
    orgId: string
    clientId: string
    clientName: string
    userId: string
    userEmail: string
    redirectUri: string
    resource: string
    publicUrl: string | undefined
  },
): Promise<IssuedTokens> {
  const grantId = randomUUID()
  const keyId = randomUUID()
  const robotId = randomUUID()
  const label = `${input.clientName.slice(0, 80)} via ${input.userEmail}`
  return db.transaction(async (tx) => {
    await tx.query('insert into users (id, email, name, is_robot) values ($1, $2, $3, true)', [
      robotId,
      robotEmail(keyId, input.publicUrl),
      label,
    ])
    await tx.query(
      `insert into api_keys (id, org_id, name, prefix, key_hash, robot_user_id, created_by)
       values ($1, $2, $3, $4, $5, $6, $7)`,
      [
        keyId,
        input.orgId,
        label,
        displayPrefix(keyId),
        sha256Hex(randomToken(32)),
        robotId,
        input.userId,
      ],
    )
    await tx.query(
      `insert into oauth_grants (id, org_id, client_id, key_id, granted_by, redirect_uri, resource)
       values ($1, $2, $3, $4, $5, $6, $7)`,
      [
        grantId,
        input.orgId,
        input.clientId,
        keyId,
        input.userId,
        input.redirectUri,
        input.resource,
      ],
    )
    return issueTokens(tx, grantId)
  })
}

export type RefreshOutcome =
  | { type: 'issued'; tokens: IssuedTokens }
  /** Unknown, expired, another client's, or its grant is gone. */
  | { type: 'invalid' }
  /** Spent before: the grant is now revoked (`keyId` to close its live connections with). */
  | { type: 'replayed'; keyId: string | undefined }

/**
 * Spends a refresh token for a new pair (rotation). A refresh token presented a second
 * time means two parties hold it, one of them not the client: the whole grant is revoked.
 */
export async function refreshGrant(
  db: Db,
  refreshToken: string,
  clientId: string,
): Promise<RefreshOutcome> {
  const hash = sha256Hex(refreshToken)
  const spent = await db.transaction(
    async (tx): Promise<RefreshOutcome | { type: 'spent'; orgId: string; grantId: string }> => {
      // The select reads the statement's snapshot: `spent` is whether it was spent before.
      const [row] = await tx.query<{
        grant_id: string
        org_id: string
        spent: boolean
        live: boolean
      }>(
        `with spend as (
           update oauth_tokens t set used_at = now()
             from oauth_grants g
            where t.token_hash = $1 and t.kind = 'refresh' and t.used_at is null
              and t.expires_at > now() and g.id = t.grant_id and g.client_id = $2
              and g.revoked_at is null
           returning t.grant_id)
         select t.grant_id, g.org_id, t.used_at is not null as spent,
                exists (select 1 from spend) as live
           from oauth_tokens t join oauth_grants g on g.id = t.grant_id
          where t.token_hash = $1 and t.kind = 'refresh' and g.client_id = $2`,
        [hash, clientId],
      )
      if (!row) return { type: 'invalid' }
      if (row.live) return { type: 'issued', tokens: await issueTokens(tx, row.grant_id) }
      if (row.spent) return { type: 'spent', orgId: row.org_id, grantId: row.grant_id }
      return { type: 'invalid' }
    },
  )
  if (spent.type !== 'spent') return spent
  const revoked = await revokeGrant(db, spent.orgId, spent.grantId)
  return { type: 'replayed', keyId: revoked?.keyId }
}

/**
 * RFC 7009: a refresh token ends its whole grant; an access token ends alone. A token that
 * is unknown or another client's is ignored (the answer is the same). Returns the key id
 * of a revoked grant, to close its live connections with.
 */
export async function revokeToken(
  db: Db,
  token: string,
  clientId: string | undefined,
): Promise<{ keyId: string } | undefined> {
  const [row] = await db.query<{ grant_id: string; org_id: string; kind: string }>(
    `select t.grant_id, g.org_id, t.kind from oauth_tokens t join oauth_grants g on g.id = t.grant_id
      where t.token_hash = $1 and ($2::text is null or g.client_id = $2)`,
    [sha256Hex(token), clientId ?? null],
  )
  if (!row) return undefined
  if (row.kind === 'refresh') return revokeGrant(db, row.org_id, row.grant_id)
  await db.query('delete from oauth_tokens where token_hash = $1', [sha256Hex(token)])
  return undefined
}

/**
 * Authenticates an access token as the principal its grant acts as: the same row an API
 * key resolves to (organisation, key id, robot), so everything after admission is the
 * key's path. The grant's last use is stamped at most once a minute.
 */
export async function authenticateAccessToken(
  db: Queryable,
  token: string,
): Promise<ApiKeyRow | undefined> {
  const [row] = await db.query<KeyLookupRow>(
    `with k as (
       select k.id, k.org_id, o.name as org_name, k.name, k.prefix, k.created_at,
              k.robot_user_id, u.email as robot_email, g.id as grant_id
         from oauth_tokens t
         join oauth_grants g on g.id = t.grant_id
         join api_keys k on k.id = g.key_id
         join organizations o on o.id = k.org_id
         join users u on u.id = k.robot_user_id
        where t.token_hash = $1 and t.kind = 'access' and t.expires_at > now()
          and g.revoked_at is null and k.revoked_at is null),
     touch as (
       update oauth_grants set last_used_at = now()
        where id = (select grant_id from k)
          and (last_used_at is null or last_used_at < now() - interval '1 minute'))
     select id, org_id, org_name, name, prefix, created_at, robot_user_id, robot_email from k`,
    [sha256Hex(token)],
  )
  return row ? keyRowOf(row) : undefined
}
