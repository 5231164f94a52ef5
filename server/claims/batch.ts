import type * as Y from 'yjs'
import { boardMaps } from '../../shared/board-doc.ts'
import type { StoredClaim } from '../../shared/claims.ts'
import type { ClaimCheck } from '../live/write-record.ts'
import { type ClaimRow, isLiveRow } from './locks.ts'

/**
 * Claims decided in memory and checked in the batch (docs/design.md, "Claims in group
 * commit"). The board document holds every claim of the cards on the board as Postgres
 * does (each is projected in the transaction that writes its row), so a write decides a
 * claim of such a card from its document, with no statement of its own, and keeps its place
 * in group commit; the batch's statement checks the decision under the card's claim lock and
 * stores the row (persistence/migrations/019_claims_batch.sql). Only acceptances are decided
 * this way: a refusal (409, or nothing to release) is decided again in Postgres, so an
 * answer never rests on a document that has not yet heard of another process's claim.
 */

/** The card's claim as the board document holds it, as a row (undefined: never claimed). */
export function claimInDoc(doc: Y.Doc, orgId: string, taskId: string): ClaimRow | undefined {
  const s = boardMaps(doc).claims.get(taskId) as StoredClaim | undefined
  if (!s) return undefined
  return {
    task_id: taskId,
    org_id: orgId,
    key_id: s.keyId,
    agent_name: s.agentName,
    house: s.house,
    generation: s.generation,
    is_sub_child: s.isSubChild,
    note: s.note,
    started_at: new Date(s.startedAt),
    updated_at: new Date(s.updatedAt),
    expires_at: new Date(s.expiresAt),
    released_at: s.releasedAt ? new Date(s.releasedAt) : null,
  }
}

/** The live claim the document shows on the card at `now`, if any. */
export function liveInDoc(
  doc: Y.Doc,
  orgId: string,
  taskId: string,
  now: number,
): ClaimRow | undefined {
  const row = claimInDoc(doc, orgId, taskId)
  return row && isLiveRow(row, now) ? row : undefined
}

/**
 * The check of a decision made on `seen` (the card's claim as the document showed it) at
 * `now`; with `row`, the claim row the decision stores.
 */
export function claimCheck(
  taskId: string,
  seen: ClaimRow | undefined,
  now: number,
  row?: ClaimRow,
): ClaimCheck {
  const live = seen !== undefined && isLiveRow(seen, now)
  return {
    id: taskId,
    now: new Date(now).toISOString(),
    live,
    key: live ? seen.key_id : undefined,
    started: live ? seen.started_at.toISOString() : undefined,
    row: row && {
      key_id: row.key_id,
      agent_name: row.agent_name,
      house: row.house,
      generation: row.generation,
      is_sub_child: row.is_sub_child,
      note: row.note,
      started_at: row.started_at.toISOString(),
      updated_at: row.updated_at.toISOString(),
      expires_at: row.expires_at.toISOString(),
      released_at: row.released_at ? row.released_at.toISOString() : null,
    },
  }
}
