import { holderLabel } from './labels.ts'
import type { ClaimRecord } from './records.ts'

/**
 * A claim as the server projects it into the board document's `claims` map: the claim
 * record plus who holds it. `status` and `isLive` in the map are as of the last write;
 * readers recompute them against their own clock, as the specification asks.
 */
export interface StoredClaim extends ClaimRecord {
  keyId: string
  releasedAt: string | null
}

/** The record as a reader sees it at `now`: a lease past `expiresAt` is lapsed and free. */
export function presentClaim(stored: StoredClaim, now: number): ClaimRecord {
  const isLive = stored.releasedAt === null && Date.parse(stored.expiresAt) > now
  return {
    taskId: stored.taskId,
    agentName: stored.agentName,
    house: stored.house,
    generation: stored.generation,
    isSubChild: stored.isSubChild,
    status: isLive ? 'working' : 'lapsed',
    note: stored.note,
    startedAt: stored.startedAt,
    updatedAt: stored.updatedAt,
    expiresAt: stored.expiresAt,
    isLive,
    holder: holderLabel({
      agentName: stored.agentName ?? undefined,
      house: stored.house ?? undefined,
      generation: stored.generation ?? undefined,
      isSubChild: stored.isSubChild,
    }),
  }
}
