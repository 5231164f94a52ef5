import type { Queryable } from '../../persistence/types.ts'
import { conflict } from '../errors.ts'
import { type Actor, type ClaimRow, isLiveRow, lockTasks } from './locks.ts'

/**
 * The claim rows in Postgres: the lock itself. Every function here runs inside a
 * transaction from `Db.transaction`, takes the card's claim lock first and decides from
 * the row read after it, so claims on one card are decided one at a time across every
 * connection and process. claim_task, heartbeat_task and release_task run behind the
 * claim gate (gate.ts), which has already refused them while someone else holds the card:
 * a live row read here is the caller's own.
 *
 * The decision needs one round trip (lock + read). The row it writes is fully known from
 * that read, so the write is not awaited: it goes out with the COMMIT, which fails (and
 * the caller sees the error) if the write did.
 */

export interface ClaimRequest {
  orgId: string
  taskId: string
  actor: Actor
  /** Replaces the note when given; otherwise the claim keeps (or starts without) one. */
  note?: string | undefined
  /** The decision's clock, ms since the epoch. */
  now: number
  leaseMs: number
}

type Row = ClaimRow & Record<string, unknown>

/** Locks the card's claim for the rest of the transaction and returns its row in any state. */
export async function lockClaim(tx: Queryable, taskId: string): Promise<ClaimRow | undefined> {
  const [, rows] = await Promise.all([
    lockTasks(tx, [taskId]),
    tx.query<Row>('select * from claims where task_id = $1', [taskId]),
  ])
  return rows[0]
}

/** 409 case 2 of the specification: the caller holds no live claim on the card. */
export function noLiveClaim(taskId: string) {
  return conflict(
    `You hold no live claim on card ${taskId} (it was released, taken back, never claimed or it lapsed). Call claim_task again before writing.`,
  )
}

/** Issues a write whose outcome the caller already knows; settled with the COMMIT. */
function pipelined(tx: Queryable, text: string, params: readonly unknown[]): void {
  void tx.query(text, params).catch(() => {})
}

/** The live holder's claim with its lease renewed from `now` (and the note replaced when sent). */
export function renewedRow(row: ClaimRow, r: ClaimRequest): ClaimRow {
  return {
    ...row,
    note: r.note ?? row.note,
    updated_at: new Date(r.now),
    expires_at: new Date(r.now + r.leaseMs),
  }
}

/** The live holder's lease renewed from `now` (and its note replaced when one is sent). */
function renew(tx: Queryable, row: ClaimRow, r: ClaimRequest): ClaimRow {
  const renewed = renewedRow(row, r)
  pipelined(
    tx,
    'update claims set note = $2, updated_at = $3, expires_at = $4 where task_id = $1',
    [r.taskId, renewed.note, renewed.updated_at.toISOString(), renewed.expires_at.toISOString()],
  )
  return renewed
}

/**
 * claim_task: a free card (no claim, released or lapsed) gets a new claim for this actor;
 * the live holder claiming again renews its lease and keeps startedAt and the identity it
 * claimed with.
 */
export async function acquireClaim(tx: Queryable, r: ClaimRequest): Promise<ClaimRow> {
  const row = await lockClaim(tx, r.taskId)
  if (row && isLiveRow(row, r.now)) return renew(tx, row, r)
  return newClaim(tx, r)
}

/**
 * A new claim for this actor on a card whose claim lock the transaction holds and which
 * holds no live claim (claim_task's free case; claim_next's pick).
 */
export function newClaim(tx: Queryable, r: ClaimRequest): ClaimRow {
  const created = createdRow(r)
  const now = created.started_at
  pipelined(
    tx,
    `insert into claims (task_id, org_id, key_id, agent_name, house, generation, is_sub_child,
                         note, started_at, updated_at, expires_at, released_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, null)
     on conflict (task_id) do update set
       org_id = excluded.org_id, key_id = excluded.key_id, agent_name = excluded.agent_name,
       house = excluded.house, generation = excluded.generation,
       is_sub_child = excluded.is_sub_child, note = excluded.note,
       started_at = excluded.started_at, updated_at = excluded.updated_at,
       expires_at = excluded.expires_at, released_at = null`,
    [
      created.task_id,
      created.org_id,
      created.key_id,
      created.agent_name,
      created.house,
      created.generation,
      created.is_sub_child,
      created.note,
      now.toISOString(),
      created.expires_at.toISOString(),
    ],
  )
  return created
}

/** A new claim of this actor on the card, from `now` for the lease. */
export function createdRow(r: ClaimRequest): ClaimRow {
  const id = r.actor.identity
  const now = new Date(r.now)
  return {
    task_id: r.taskId,
    org_id: r.orgId,
    key_id: r.actor.keyId,
    agent_name: id.agentName ?? null,
    house: id.house ?? null,
    generation: id.generation ?? null,
    is_sub_child: id.isSubChild ?? false,
    note: r.note ?? null,
    started_at: now,
    updated_at: now,
    expires_at: new Date(r.now + r.leaseMs),
    released_at: null,
  }
}

/**
 * heartbeat_task: the live holder renews its lease (and note); 409 without holder when
 * nothing live is the caller's.
 */
export async function heartbeatClaim(tx: Queryable, r: ClaimRequest): Promise<ClaimRow> {
  const row = await lockClaim(tx, r.taskId)
  if (!row || !isLiveRow(row, r.now)) throw noLiveClaim(r.taskId)
  return renew(tx, row, r)
}

/**
 * release_task: the live holder's claim is marked released (its record stays, isLive
 * false) and returned; undefined when nothing live was there to release.
 */
export async function releaseClaim(
  tx: Queryable,
  r: Omit<ClaimRequest, 'note' | 'leaseMs'>,
): Promise<ClaimRow | undefined> {
  const row = await lockClaim(tx, r.taskId)
  if (!row || !isLiveRow(row, r.now)) return undefined
  const at = new Date(r.now)
  pipelined(tx, 'update claims set released_at = $2, updated_at = $2 where task_id = $1', [
    r.taskId,
    at.toISOString(),
  ])
  return { ...row, released_at: at, updated_at: at }
}

/**
 * Deletes the card's claim record whatever its state (force release, card deletion).
 * Returns whether there was one.
 */
export async function deleteClaim(tx: Queryable, taskId: string): Promise<boolean> {
  const [, rows] = await Promise.all([
    lockTasks(tx, [taskId]),
    tx.query('delete from claims where task_id = $1 returning task_id', [taskId]),
  ])
  return rows.length > 0
}
