import type { Queryable } from '../../persistence/types.ts'
import {
  type ActionInput,
  type ActionName,
  actions,
  type ClaimLockedName,
} from '../../shared/actions.ts'
import { BoardView } from '../board/board-view.ts'
import { archivedInColumn } from '../board/history.ts'
import { claimCheck, liveInDoc } from '../claims/batch.ts'
import { type Actor, heldByOther, isSameActor, lockLiveClaims } from '../claims/locks.ts'
import { conflict } from '../errors.ts'
import type { WriteScope } from '../live/write-scope.ts'
import type { ActionContext } from './context.ts'

/**
 * The claim lock of the action table, enforced here and nowhere else, from the table's
 * `claimLocked` flag: the flag agents read is the rule they meet (docs/design.md, "How the
 * specification's open points are settled"; test/claims/lock-table.test.ts).
 */

/** What an action touches: the cards, and whether any live claim refuses it (not only others'). */
export interface Touched {
  taskIds: readonly string[]
  /** delete_column: a column is not deleted while any card in it is actively worked. */
  anyHolder?: { columnId: string }
}

const card = (taskId: string): Touched => ({ taskIds: [taskId] })

/**
 * The cards each claim-locked action touches. The type requires exactly the flagged
 * actions, so a row flagged without an entry here (or the reverse) does not compile.
 */
const touched: {
  [N in ClaimLockedName]: (w: WriteScope, orgId: string, input: ActionInput<N>) => Promise<Touched>
} = {
  update_task: async (_w, _org, input) => card(input.taskId),
  set_task_tags: async (_w, _org, input) => card(input.taskId),
  set_task_dependencies: async (_w, _org, input) => card(input.taskId),
  move_task: async (_w, _org, input) => card(input.taskId),
  archive_task: async (_w, _org, input) => card(input.taskId),
  claim_task: async (_w, _org, input) => card(input.taskId),
  heartbeat_task: async (_w, _org, input) => card(input.taskId),
  release_task: async (_w, _org, input) => card(input.taskId),
  delete_column: async (w, orgId, input) => {
    const onBoard = new BoardView(w.doc)
      .storedTasks()
      .filter((t) => t.columnId === input.columnId)
      .map((t) => t.id)
    // Archived cards still count as held by the column (the specification's lifecycle
    // table), those a person archived a moment ago too.
    const archived = await archivedInColumn(
      w.tx,
      orgId,
      input.columnId,
      false,
      w.pendingArchivedAll(),
    )
    return {
      taskIds: [...onBoard, ...archived.map((t) => t.id)],
      anyHolder: { columnId: input.columnId },
    }
  },
}

function isClaimLocked(action: ActionName): action is ClaimLockedName {
  return actions[action].claimLocked
}

/**
 * The gate itself: locks the touched cards' claims for the rest of the transaction and
 * refuses with 409 (+ holder) while someone else holds one of them.
 */
export async function claimLock(
  tx: Queryable,
  orgId: string,
  actor: Actor,
  what: Touched,
  now: number,
): Promise<void> {
  const live = await lockLiveClaims(tx, orgId, what.taskIds, now)
  if (what.anyHolder && live.length > 0) {
    throw conflict(
      `Column ${what.anyHolder.columnId} has ${live.length} card(s) actively worked; it cannot be deleted until their claims are released`,
    )
  }
  for (const row of live) if (!isSameActor(row, actor)) throw heldByOther(row, now)
}

/**
 * The gate of a claim-locked action (undefined for any other): every board write it makes
 * passes the gate first, inside the write's transaction, so the check and the write are one.
 */
export function claimGate<N extends ActionName>(
  action: N,
  input: ActionInput<N>,
): ((w: WriteScope, ctx: ActionContext) => Promise<void>) | undefined {
  if (!isClaimLocked(action)) return undefined
  const cards = touched[action] as (
    w: WriteScope,
    orgId: string,
    input: ActionInput<N>,
  ) => Promise<Touched>
  return async (w, ctx) => {
    const now = ctx.clock.now()
    if (action !== 'delete_column' && !w.claimsInStorage) {
      // Cards on the board whose document shows no one else's live claim pass here, and the
      // batch checks it under their claim locks (claims/batch.ts). Anything else, a refusal
      // included, is decided in Postgres.
      const { taskIds } = await cards(w, ctx.orgId, input)
      const view = new BoardView(w.doc)
      const seen = taskIds.map((id) => ({
        id,
        on: view.hasTask(id),
        live: liveInDoc(w.doc, ctx.orgId, id, now),
      }))
      if (seen.every((s) => s.on && (!s.live || isSameActor(s.live, ctx.actor)))) {
        for (const s of seen) w.checkClaim(claimCheck(s.id, s.live, now))
        return
      }
    }
    await w.beforeClaimLocks()
    const what = await cards(w, ctx.orgId, input)
    await claimLock(w.tx, ctx.orgId, ctx.actor, what, now)
  }
}
