import { randomUUID } from 'node:crypto'
import type { Db, Queryable } from '../../persistence/types.ts'
import { ApiError } from '../errors.ts'
import { displayPrefix, newApiKey, parseApiKey } from './api-key-format.ts'
import { sha256Hex } from './crypto.ts'

export interface ApiKeyRow {
  id: string
  orgId: string
  orgName: string
  name: string
  prefix: string
  createdAt: string
  robotUserId: string
  robotEmail: string
}

export interface ApiKeySummary {
  id: string
  name: string
  prefix: string
  createdAt: string
  createdBy: string
  lastUsedAt: string | null
}

const iso = (d: unknown) => (d instanceof Date ? d.toISOString() : String(d))

export const INVALID_KEY_HINT =
  'Call the service on its direct host: a redirect from the bare domain drops the Authorization header, which looks exactly like this.'

/** The robot account's e-mail: what the key's writes are attributed to (createdByEmail, authorEmail). */
export function robotEmail(keyId: string, publicUrl: string | undefined): string {
  const host = publicUrl ? new URL(publicUrl).hostname : 'localhost'
  return `key-${keyId}@agents.${host}`
}

/**
 * Creates a key and its robot account. Returns the key text, the only time it exists in
 * the clear: only its SHA-256 is stored.
 */
export async function createApiKey(
  db: Db,
  input: { orgId: string; name: string; createdBy: string; publicUrl: string | undefined },
): Promise<{
  apiKey: { id: string; name: string; prefix: string; createdAt: string }
  key: string
}> {
  const id = randomUUID()
  const key = newApiKey(id)
  const robotId = randomUUID()
  const email = robotEmail(id, input.publicUrl)
  const rows = await db.transaction(async (tx) => {
    await tx.query('insert into users (id, email, name, is_robot) values ($1, $2, $3, true)', [
      robotId,
      email,
      input.name,
    ])
    return tx.query<{ created_at: Date }>(
      `insert into api_keys (id, org_id, name, prefix, key_hash, robot_user_id, created_by)
       values ($1, $2, $3, $4, $5, $6, $7) returning created_at`,
      [id, input.orgId, input.name, displayPrefix(id), sha256Hex(key), robotId, input.createdBy],
    )
  })
  return {
    apiKey: {
      id,
      name: input.name,
      prefix: displayPrefix(id),
      createdAt: iso(rows[0]?.created_at),
    },
    key,
  }
}

/**
 * Each OAuth grant acts through a key row of its own (server/auth/oauth-grants.ts), which is
 * no API key: it is listed and revoked as a connected app, never here.
 */
const NOT_A_GRANT = 'not exists (select 1 from oauth_grants g where g.key_id = k.id)'

export async function listApiKeys(db: Db, orgId: string): Promise<ApiKeySummary[]> {
  const rows = await db.query<{
    id: string
    name: string
    prefix: string
    created_at: Date
    created_by_email: string
    last_used_at: Date | null
  }>(
    `select k.id, k.name, k.prefix, k.created_at, u.email as created_by_email, k.last_used_at
       from api_keys k join users u on u.id = k.created_by
      where k.org_id = $1 and k.revoked_at is null and ${NOT_A_GRANT}
      order by k.created_at`,
    [orgId],
  )
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    createdAt: iso(r.created_at),
    createdBy: r.created_by_email,
    lastUsedAt: r.last_used_at ? iso(r.last_used_at) : null,
  }))
}

/**
 * Revokes a key. The UPDATE waits for every write that holds the key row FOR SHARE, so
 * once this returns no write under the key can still commit.
 */
export async function revokeApiKey(db: Db, orgId: string, keyId: string): Promise<boolean> {
  const rows = await db.query(
    `update api_keys k set revoked_at = now()
      where k.id = $1 and k.org_id = $2 and k.revoked_at is null and ${NOT_A_GRANT} returning k.id`,
    [keyId, orgId],
  )
  return rows.length > 0
}

/**
 * The statement part that finds a key by id and SHA-256, unrevoked, as CTE `k` (with the
 * columns `keyRowOf` reads), and stamps its last use (`touch`, at most once a minute, so
 * a busy key costs no write per request). `$id` and `$hash` are the placeholders to use.
 * The hash is compared in SQL: it is a SHA-256 of a random secret, so comparison timing
 * reveals nothing an attacker can steer.
 */
export function keyLookupCtes(id: string, hash: string): string {
  return keysLookupCtes(`(select ${id}::uuid as key_id, ${hash}::text as key_hash, 1 as i)`)
}

/**
 * The same for many keys at once: `from` has the columns key_id, key_hash and i (which
 * request asked), and `k` one row per request whose key was found, with its `i`. The
 * stamp skips a key row another transaction holds (a write holds its key FOR SHARE): it
 * waits for nobody, and two statements stamping the same keys cannot deadlock.
 */
export function keysLookupCtes(from: string): string {
  return `k as (
      select r.i::int as i, k.id, k.org_id, o.name as org_name, k.name, k.prefix, k.created_at,
             k.robot_user_id, u.email as robot_email
        from ${from} r join api_keys k on k.id = r.key_id and k.key_hash = r.key_hash
        join organizations o on o.id = k.org_id join users u on u.id = k.robot_user_id
       where k.revoked_at is null),
    touch as (
      update api_keys set last_used_at = now()
       where id in (select a.id from api_keys a
                     where a.id in (select id from k)
                       and (a.last_used_at is null or a.last_used_at < now() - interval '1 minute')
                       for update skip locked))`
}

export type KeyLookupRow = {
  id: string
  org_id: string
  org_name: string
  name: string
  prefix: string
  created_at: Date
  robot_user_id: string
  robot_email: string
}

export function keyRowOf(row: KeyLookupRow): ApiKeyRow {
  return {
    id: row.id,
    orgId: row.org_id,
    orgName: row.org_name,
    name: row.name,
    prefix: row.prefix,
    createdAt: iso(row.created_at),
    robotUserId: row.robot_user_id,
    robotEmail: row.robot_email,
  }
}

/** The key id of a well-formed key and its SHA-256, or the 401 of a malformed one (before any query). */
export interface KeyCredentials {
  keyId: string
  hash: string
}

export function keyCredentials(key: string): KeyCredentials {
  const parsed = parseApiKey(key)
  if (!parsed) throw new ApiError(401, `Malformed API key. ${INVALID_KEY_HINT}`)
  return { keyId: parsed.keyId, hash: sha256Hex(key) }
}

export const invalidKeyError = () =>
  new ApiError(401, `Invalid or revoked API key. ${INVALID_KEY_HINT}`)

const KEY_QUERY = `with ${keyLookupCtes('$1', '$2')} select * from k`

/**
 * Authenticates a Bearer key: malformed or bad-checksum keys are refused before any query;
 * otherwise the row must exist, match the SHA-256 and not be revoked.
 */
export async function authenticateApiKey(db: Queryable, key: string): Promise<ApiKeyRow> {
  return authenticateCredentials(db, keyCredentials(key))
}

export async function authenticateCredentials(
  db: Queryable,
  credentials: KeyCredentials,
): Promise<ApiKeyRow> {
  const [row] = await db.query<KeyLookupRow>(KEY_QUERY, [credentials.keyId, credentials.hash])
  if (!row) throw invalidKeyError()
  return keyRowOf(row)
}
