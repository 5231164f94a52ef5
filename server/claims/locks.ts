import type { Queryable } from '../../persistence/types.ts'
import { presentClaim, type StoredClaim } from '../../shared/claims.ts'
import type { AgentIdentity } from '../../shared/labels.ts'
import type { ClaimRecord } from '../../shared/records.ts'
import type { Clock } from '../clock.ts'
import { conflict } from '../errors.ts'

export interface ClaimRow {
  task_id: string
  org_id: string
  key_id: string
  agent_name: string | null
  house: string | null
  generation: number | null
  is_sub_child: boolean
  note: string | null
  started_at: Date
  updated_at: Date
  expires_at: Date
  released_at: Date | null
}

/**
 * Advisory locks of claims live in their own key space (the two-key form), so a card's
 * lock never collides with the single-key locks of migrations or compaction.
 */
export const CLAIM_LOCK_SPACE = 0x636c6d // "clm"

/** Live at `now`: not released and its lease not yet passed. */
export function isLiveRow(row: ClaimRow, now: number): boolean {
  return row.released_at === null && row.expires_at.getTime() > now
}

/** The record as stored in the board document, with status and isLive as of `now`. */
export function storedClaimFromRow(r: ClaimRow, now = Date.now()): StoredClaim {
  return { ...claimRecordFromRow(r, now), keyId: r.key_id }
}

/**
 * The claim record as agents see it (without who holds the key): working, lapsed once its
 * lease passed, or released with `releasedAt` once its holder handed it back.
 */
export function claimRecordFromRow(r: ClaimRow, now = Date.now()): ClaimRecord {
  return presentClaim(
    {
      taskId: r.task_id,
      agentName: r.agent_name,
      house: r.house,
      generation: r.generation,
      isSubChild: r.is_sub_child,
      note: r.note,
      startedAt: r.started_at.toISOString(),
      updatedAt: r.updated_at.toISOString(),
      expiresAt: r.expires_at.toISOString(),
      releasedAt: r.released_at ? r.released_at.toISOString() : null,
    },
    now,
  )
}

export interface Actor {
  keyId: string
  identity: AgentIdentity
  /** Decides whether a lease has passed; the system clock when absent. */
  clock?: Clock
}

/**
 * Takes the claim locks of these cards for the rest of the transaction, in a fixed order
 * so two writes locking several cards cannot deadlock. Every claim_task, heartbeat_task,
 * release_task, force release and claim-locked write takes them first, so all of them on
 * one card run one after the other across every connection and process.
 */
export async function lockTasks(tx: Queryable, taskIds: readonly string[]): Promise<void> {
  if (taskIds.length === 0) return
  await tx.query(
    'select pg_advisory_xact_lock($1::int, hashtext(t)) from unnest($2::text[]) as t order by t',
    [CLAIM_LOCK_SPACE, [...new Set(taskIds)].sort()],
  )
}

/**
 * Locks these cards' claims (see lockTasks) and returns their live claims. The rows are
 * read after the locks are granted, so they include every claim committed before.
 */
export async function lockLiveClaims(
  tx: Queryable,
  orgId: string,
  taskIds: readonly string[],
  now: number = Date.now(),
): Promise<ClaimRow[]> {
  if (taskIds.length === 0) return []
  // Pipelined: the select runs on the same connection right after the locks are granted.
  const [, rows] = await Promise.all([
    lockTasks(tx, taskIds),
    tx.query<ClaimRow & Record<string, unknown>>(
      `select * from claims
        where org_id = $1 and task_id = any($2::uuid[])
          and released_at is null and expires_at > $3::timestamptz`,
      [orgId, taskIds, new Date(now).toISOString()],
    ),
  ])
  return rows
}

/**
 * The same agent: the same key and, when the write names itself, the same identity
 * (agentName, house and generation as claimed). A write with no name is checked by key only.
 */
export function isSameActor(row: ClaimRow, actor: Actor): boolean {
  if (row.key_id !== actor.keyId) return false
  const id = actor.identity
  if (id.agentName === undefined) return true
  return (
    row.agent_name === id.agentName &&
    (row.house ?? undefined) === id.house &&
    (row.generation ?? undefined) === id.generation
  )
}

/** The 409 of someone else's live claim: carries `holder` (the claim record) and `expiresAt`. */
export function heldByOther(row: ClaimRow, now = Date.now()) {
  const record = claimRecordFromRow(row, now)
  return conflict(
    `Card ${row.task_id} is claimed by ${record.holder} until ${record.expiresAt}. Work another card and come back after expiresAt, or ask an owner or admin to release it.`,
    { holder: record, expiresAt: record.expiresAt },
  )
}

/**
 * Claim lock for a person's edit in the app: people never hold claims, so any live claim
 * refuses the write with 409 + holder.
 */
export async function assertUnclaimed(
  tx: Queryable,
  orgId: string,
  taskIds: readonly string[],
  now: number,
): Promise<void> {
  const [row] = await lockLiveClaims(tx, orgId, taskIds, now)
  if (row) throw heldByOther(row, now)
}
