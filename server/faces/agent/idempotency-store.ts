import type { Db } from '../../../persistence/types.ts'
import type { Clock } from '../../clock.ts'
import type { Logger } from '../../http/json.ts'
import { Sweeper } from '../../sweeper.ts'

/**
 * The rows behind `Idempotency-Key` (persistence/migrations/013_idempotency.sql): one per
 * API key and Idempotency-Key, claimed atomically by one request at a time across every
 * process, swept once expired. A write marks its key done with its answer in its own record
 * statement (record_writes, 015_idempotent_record_writes.sql). The protocol around them is
 * idempotency.ts.
 */

/** How long a key is remembered after its first request. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000
/**
 * How long a running request holds its key without renewing: a retry meanwhile is a 409;
 * after it (the process stopped, or cannot reach the database), a retry takes the key over.
 */
export const IDEMPOTENCY_LEASE_MS = 10_000
/** A running request renews its lease this often, so only a stopped one loses it. */
export const IDEMPOTENCY_RENEW_MS = 3_000

/** A key's row as a request that did not get it reads it. */
export interface KeyRow {
  fingerprint: string
  attempt: string
  state: 'running' | 'done'
  lease_until: Date | null
  status: number | null
  response: string | null
}

export interface KeyRef {
  keyId: string
  /** The Idempotency-Key as sent (unquoted). */
  key: string
}

const iso = (ms: number) => new Date(ms).toISOString()

/**
 * Claims the key for `attempt` in one statement: a key never seen, one expired, or one
 * whose running request lost its lease before its write committed (same body only). Returns
 * false when someone else has it: read it with {@link readKey}. `on conflict` waits for a
 * transaction holding the row (a write storing its answer), so a key is never taken from a
 * write that committed.
 */
export async function claimKey(
  db: Db,
  ref: KeyRef,
  fingerprint: string,
  attempt: string,
  now: number,
): Promise<boolean> {
  const rows = await db.lane.query(
    `insert into agent_idempotency as t
       (key_id, idempotency_key, fingerprint, attempt, state, lease_until, expires_at)
     values ($1, $2, $3, $4, 'running', $5, $6)
     on conflict (key_id, idempotency_key) do update
        set fingerprint = excluded.fingerprint, attempt = excluded.attempt, state = 'running',
            lease_until = excluded.lease_until, status = null, response = null,
            expires_at = excluded.expires_at
      where t.expires_at <= $7
         or (t.state = 'running' and t.status is null and t.lease_until <= $7
             and t.fingerprint = excluded.fingerprint)
     returning 1`,
    [
      ref.keyId,
      ref.key,
      fingerprint,
      attempt,
      iso(now + IDEMPOTENCY_LEASE_MS),
      iso(now + IDEMPOTENCY_TTL_MS),
      iso(now),
    ],
  )
  return rows.length > 0
}

export async function readKey(db: Db, ref: KeyRef): Promise<KeyRow | undefined> {
  const [row] = await db.lane.query<KeyRow & Record<string, unknown>>(
    `select fingerprint, attempt, state, lease_until, status, response from agent_idempotency
      where key_id = $1 and idempotency_key = $2`,
    [ref.keyId, ref.key],
  )
  return row
}

/** Stores the answer the request was sent (a 4xx, or a 200 its write did not store), done. */
export async function finishKey(
  db: Db,
  ref: KeyRef,
  attempt: string,
  answer: { status: number; response: string },
): Promise<void> {
  await db.lane.query(
    `update agent_idempotency set state = 'done', lease_until = null, status = $4, response = $5
      where key_id = $1 and idempotency_key = $2 and attempt = $3`,
    [ref.keyId, ref.key, attempt, answer.status, answer.response],
  )
}

/**
 * After a fault (5xx): the key is let go so a retry runs again, unless the request's write
 * committed before the fault; then that write's stored result is the key's answer.
 */
export async function releaseKey(db: Db, ref: KeyRef, attempt: string): Promise<void> {
  await db.lane.query(
    `with gone as (
       delete from agent_idempotency
        where key_id = $1 and idempotency_key = $2 and attempt = $3 and status is null
       returning 1)
     update agent_idempotency set state = 'done', lease_until = null
      where key_id = $1 and idempotency_key = $2 and attempt = $3
        and status is not null and state = 'running'`,
    [ref.keyId, ref.key, attempt],
  )
}

/**
 * Marks a running request's committed write as its answer once its lease lapsed (its
 * process stopped between the commit and the answer).
 */
export async function settleAbandoned(db: Db, ref: KeyRef, attempt: string): Promise<void> {
  await db.lane.query(
    `update agent_idempotency set state = 'done', lease_until = null
      where key_id = $1 and idempotency_key = $2 and attempt = $3 and state = 'running'
        and status is not null`,
    [ref.keyId, ref.key, attempt],
  )
}

/** Extends a running request's lease; a lease that already lapsed stays lapsed (a retry may own it). */
export async function renewLease(db: Db, ref: KeyRef, attempt: string, now: number) {
  await db.lane.query(
    `update agent_idempotency set lease_until = $5
      where key_id = $1 and idempotency_key = $2 and attempt = $3 and state = 'running'
        and lease_until > $4`,
    [ref.keyId, ref.key, attempt, iso(now), iso(now + IDEMPOTENCY_LEASE_MS)],
  )
}

/** Rows deleted per statement: short transactions, short locks. */
const BATCH = 1000

/**
 * Deletes expired keys in batches until none is left; `skip locked` leaves a row another
 * sweep (or a request re-claiming it) holds to that one. Returns how many went.
 */
export async function sweepIdempotencyKeys(db: Db, now: number): Promise<number> {
  let count = 0
  for (;;) {
    const deleted = await db.query(
      `delete from agent_idempotency where (key_id, idempotency_key) in (
         select key_id, idempotency_key from agent_idempotency where expires_at <= $1
          limit ${BATCH} for update skip locked)
       returning 1`,
      [iso(now)],
    )
    count += deleted.length
    if (deleted.length < BATCH) return count
  }
}

/** Runs {@link sweepIdempotencyKeys} at start and once an hour (server/sweeper.ts). */
export class IdempotencySweeper extends Sweeper {
  constructor(options: { db: Db; log: Logger; clock: Clock }) {
    super({
      what: 'expired Idempotency-Key rows',
      log: options.log,
      sweep: () => sweepIdempotencyKeys(options.db, options.clock.now()),
    })
  }
}
