import { holderLabel } from './labels.ts'
import type { ClaimRecord, ClaimStatus } from './records.ts'

/**
 * A claim as the server projects it into the board document's `claims` map: the claim
 * record plus who holds it. `status` and `isLive` in the map are as of the last write;
 * readers recompute them against their own clock, as the specification asks.
 */
export interface StoredClaim extends ClaimRecord {
  keyId: string
}

/** What a claim's record is computed from: everything but what depends on the clock and the label. */
export type ClaimFacts = Omit<ClaimRecord, 'status' | 'isLive' | 'holder'>

/**
 * The record as a reader sees it at `now`: released by its holder (status released,
 * free), or its lease past `expiresAt` (lapsed, free), or working.
 */
export function presentClaim(stored: ClaimFacts, now: number): ClaimRecord {
  // Document entries are wire data: one without the field reads as not released.
  const releasedAt = stored.releasedAt ?? null
  const status: ClaimStatus =
    releasedAt !== null ? 'released' : Date.parse(stored.expiresAt) > now ? 'working' : 'lapsed'
  return {
    taskId: stored.taskId,
    agentName: stored.agentName,
    house: stored.house,
    generation: stored.generation,
    isSubChild: stored.isSubChild,
    status,
    note: stored.note,
    startedAt: stored.startedAt,
    updatedAt: stored.updatedAt,
    expiresAt: stored.expiresAt,
    releasedAt,
    isLive: status === 'working',
    holder: holderLabel({
      agentName: stored.agentName ?? undefined,
      house: stored.house ?? undefined,
      generation: stored.generation ?? undefined,
      isSubChild: stored.isSubChild,
    }),
  }
}

/**
 * The claim a card carries (`claim` of get_board, get_task and get_changes cards): a claim
 * its holder released leaves the card free and shows as null there; it stays in
 * `activity` and the change feed as a record with status released.
 */
export function shownOnCard(record: ClaimRecord | undefined): ClaimRecord | null {
  return record && record.status !== 'released' ? record : null
}
