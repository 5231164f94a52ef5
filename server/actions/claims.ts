import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { boardMaps } from '../../shared/board-doc.ts'
import type { ClaimRecord } from '../../shared/records.ts'
import { BoardView } from '../board/board-view.ts'
import { requireCard } from '../board/history.ts'
import { claimCheck, liveInDoc } from '../claims/batch.ts'
import {
  type ClaimRow,
  claimRecordFromRow,
  isSameActor,
  storedClaimFromRow,
} from '../claims/locks.ts'
import {
  acquireClaim,
  type ClaimRequest,
  createdRow,
  heartbeatClaim,
  releaseClaim,
  renewedRow,
} from '../claims/store.ts'
import type { WriteScope } from '../live/write-scope.ts'
import type { ActionContext } from './context.ts'

/**
 * Projects the claim row into the board document's `claims` map (cards on the board only:
 * an archived card's claim lives in Postgres alone) and logs the change, in the write's
 * own transaction: the row, the document and the change row commit together.
 */
export function project(w: WriteScope, row: ClaimRow, now: number): ClaimRecord {
  if (boardMaps(w.doc).tasks.has(row.task_id)) {
    const stored = storedClaimFromRow(row, now)
    w.mutate((doc) => boardMaps(doc).claims.set(row.task_id, stored))
  }
  w.changed('claim', row.task_id)
  return claimRecordFromRow(row, now)
}

/** The card, on the board or archived, or 404. */
async function requireCardOf(ctx: ActionContext, w: WriteScope, taskId: string): Promise<void> {
  await requireCard(w.tx, new BoardView(w.doc), ctx.orgId, taskId, w.pendingArchivedAll())
}

/**
 * The live claim the board document shows on a card on the board, decided in memory
 * (claims/batch.ts); null when the decision is Postgres's: the card is not on the board
 * (archived, or made a moment ago on another process), or the write is computed again.
 */
function inMemory(w: WriteScope, ctx: ActionContext, taskId: string, now: number) {
  if (w.claimsInStorage || !new BoardView(w.doc).hasTask(taskId)) return null
  const live = liveInDoc(w.doc, ctx.orgId, taskId, now)
  // Someone else's, as far as the document knows: the gate found otherwise in Postgres.
  if (live && !isSameActor(live, ctx.actor)) return null
  return { live }
}

/** claim_task and heartbeat_task: take or extend the lease with `lease`, then project it. */
function leaseWrite(
  ctx: ActionContext,
  input: { taskId: string; note?: string | undefined },
  lease: typeof acquireClaim,
) {
  return ctx.writeBoard(async (w) => {
    const now = ctx.clock.now()
    const r: ClaimRequest = {
      orgId: ctx.orgId,
      taskId: input.taskId,
      actor: ctx.actor,
      note: input.note,
      now,
      leaseMs: ctx.config.claimLeaseSeconds * 1000,
    }
    // The gate passed: a live claim here is the caller's own. A heartbeat with nothing live
    // to renew is refused by Postgres, not by a document that may not have heard yet.
    const seen = inMemory(w, ctx, input.taskId, now)
    if (seen && (seen.live || lease === acquireClaim)) {
      const row = seen.live ? renewedRow(seen.live, r) : createdRow(r)
      w.checkClaim(claimCheck(input.taskId, seen.live, now, row))
      return { claim: project(w, row, now) }
    }
    // Claim locks are taken after the lane's earlier writes committed: one of them may be
    // a batch waiting for the same lock.
    await w.beforeClaimLocks()
    await requireCardOf(ctx, w, input.taskId)
    const row = await lease(w.tx, r)
    return { claim: project(w, row, now) }
  })
}

/** claim_task: see the schema. Claim locked; 404 for a card not in this organisation. */
export async function claim_task(
  ctx: ActionContext,
  input: ActionInput<'claim_task'>,
): Promise<ActionResults['claim_task']> {
  return leaseWrite(ctx, input, acquireClaim)
}

/** heartbeat_task: see the schema. Claim locked; not idempotent (each call moves expiresAt). */
export async function heartbeat_task(
  ctx: ActionContext,
  input: ActionInput<'heartbeat_task'>,
): Promise<ActionResults['heartbeat_task']> {
  return leaseWrite(ctx, input, heartbeatClaim)
}

/** release_task: see the schema. Claim locked; idempotent (a second call returns released: false). */
export async function release_task(
  ctx: ActionContext,
  input: ActionInput<'release_task'>,
): Promise<ActionResults['release_task']> {
  return ctx.writeBoard(async (w) => {
    const now = ctx.clock.now()
    const seen = inMemory(w, ctx, input.taskId, now)?.live
    if (seen) {
      const row: ClaimRow = { ...seen, released_at: new Date(now), updated_at: new Date(now) }
      w.checkClaim(claimCheck(input.taskId, seen, now, row))
      project(w, row, now)
      return { taskId: input.taskId, released: true }
    }
    await w.beforeClaimLocks()
    await requireCardOf(ctx, w, input.taskId)
    const row = await releaseClaim(w.tx, {
      orgId: ctx.orgId,
      taskId: input.taskId,
      actor: ctx.actor,
      now,
    })
    if (row) project(w, row, now)
    return { taskId: input.taskId, released: row !== undefined }
  })
}
