import type { Queryable } from '../../persistence/db.ts'
import type { StoredClaim } from '../../shared/claims.ts'
import { presentClaim } from '../../shared/claims.ts'
import type { AgentIdentity } from '../../shared/labels.ts'
import { conflict } from '../api-error.ts'

export interface ClaimRow {
  task_id: string
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

export function storedClaimFromRow(r: ClaimRow): StoredClaim {
  const base = {
    taskId: r.task_id,
    keyId: r.key_id,
    agentName: r.agent_name,
    house: r.house,
    generation: r.generation,
    isSubChild: r.is_sub_child,
    note: r.note,
    startedAt: r.started_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    expiresAt: r.expires_at.toISOString(),
    releasedAt: r.released_at ? r.released_at.toISOString() : null,
  }
  const shown = presentClaim({ ...base, status: 'working', isLive: true, holder: '' }, Date.now())
  return { ...shown, keyId: base.keyId, releasedAt: base.releasedAt }
}

export interface Actor {
  keyId: string
  identity: AgentIdentity
}

/**
 * Takes the claim locks of these cards for the rest of the transaction (so a claim_task
 * racing this write on another connection waits for it) and returns their live claims.
 */
export async function lockLiveClaims(
  tx: Queryable,
  taskIds: readonly string[],
): Promise<ClaimRow[]> {
  if (taskIds.length === 0) return []
  const [, rows] = await Promise.all([
    tx.query('select pg_advisory_xact_lock(hashtext(t)) from unnest($1::text[]) as t order by t', [
      [...taskIds].sort(),
    ]),
    tx.query<ClaimRow & Record<string, unknown>>(
      `select * from claims where task_id = any($1::uuid[]) and released_at is null and expires_at > now()`,
      [taskIds],
    ),
  ])
  return rows
}

/** The same agent: the same key and, when the write names itself, the same identity. */
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

export function heldByOther(row: ClaimRow) {
  const holder = storedClaimFromRow(row)
  const { keyId: _k, releasedAt: _r, ...record } = holder
  return conflict(
    `Card ${row.task_id} is claimed by ${record.holder} until ${record.expiresAt}. Work another card and come back after expiresAt, or ask an owner or admin to release it.`,
    { holder: record, expiresAt: record.expiresAt },
  )
}

/** Claim lock: refuses the write with 409 + holder while another actor holds any of these cards. */
export async function assertClaimsAllow(
  tx: Queryable,
  taskIds: readonly string[],
  actor: Actor,
): Promise<void> {
  for (const row of await lockLiveClaims(tx, taskIds)) {
    if (!isSameActor(row, actor)) throw heldByOther(row)
  }
}
