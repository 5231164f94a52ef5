import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import type { StoredTask } from '../../shared/board-doc.ts'
import type { StoredClaim } from '../../shared/claims.ts'
import { priorityRank } from '../../shared/priority.ts'
import { BoardView } from '../board/board-view.ts'
import { workQueue } from '../board/work-queue.ts'
import { claimCheck, claimInDoc } from '../claims/batch.ts'
import { CLAIM_LOCK_SPACE } from '../claims/locks.ts'
import { createdRow, newClaim } from '../claims/store.ts'
import { badRequest } from '../errors.ts'
import { project } from './claims.ts'
import type { ActionContext } from './context.ts'

const NOTHING = { task: null, claim: null }
/** How many candidates claim_next offers Postgres per statement when Postgres decides. */
const CANDIDATES_PER_STATEMENT = 32

interface Keyed {
  t: StoredTask
  rank: number
  column: number
}

const better = (a: Keyed, b: Keyed) =>
  a.rank - b.rank ||
  a.column - b.column ||
  a.t.position - b.t.position ||
  a.t.id.localeCompare(b.t.id)

/**
 * The cards claim_next may hand out, in no order, with what orders them (see the schema), and
 * the earliest expiry among the live claims that kept a card out (when it lapses, that card
 * may be handed out).
 */
function eligible(
  view: BoardView,
  input: ActionInput<'claim_next'>,
): { keyed: Keyed[]; lapseAt: number } {
  const { columnId, projectId, role, type } = input
  if (projectId !== undefined && !view.projects.has(projectId)) {
    throw badRequest(`projectId ${projectId} is not a project of this organisation`)
  }
  if (columnId !== undefined && !view.columns.has(columnId)) {
    throw badRequest(`columnId ${columnId} is not a column of this organisation`)
  }
  const tag = input.tag?.trim().toLowerCase()
  const columns = new Map(
    view.sortedColumns().map((c, i) => [c.id, { order: i, role: c.role ?? null }]),
  )
  const { now } = view
  const out: Keyed[] = []
  let lapseAt = Number.POSITIVE_INFINITY
  for (const t of view.storedTasks()) {
    const column = columns.get(t.columnId)
    const columnRole = column?.role ?? null
    if (columnId !== undefined && t.columnId !== columnId) continue
    if (projectId !== undefined && t.projectId !== projectId) continue
    // Done work is not work to pick up: a released done card would come straight back.
    if (role === undefined ? columnRole === 'done' : columnRole !== role) continue
    if (type !== undefined && t.type !== type) continue
    if (tag !== undefined && !t.tags.some((x) => x.toLowerCase() === tag)) continue
    const held = liveUntil(view, t.id, now)
    if (held !== undefined) {
      lapseAt = Math.min(lapseAt, held)
      continue
    }
    if (view.blocked(t)) continue
    out.push({
      t,
      rank: priorityRank(view.effectivePriority(t)),
      column: column?.order ?? Number.MAX_SAFE_INTEGER,
    })
  }
  return { keyed: out, lapseAt }
}

/** When the live claim the document shows on the card lapses (undefined: none is live). */
function liveUntil(view: BoardView, taskId: string, now: number): number | undefined {
  const claim = view.maps.claims.get(taskId) as StoredClaim | undefined
  if (!claim || (claim.releasedAt ?? null) !== null) return undefined
  const expires = Date.parse(claim.expiresAt)
  return expires > now ? expires : undefined
}

const claimedAt = (view: BoardView, taskId: string, now: number) =>
  liveUntil(view, taskId, now) !== undefined

/**
 * The candidates of this ask not yet handed out, best first, from the board's work queue
 * (board/work-queue.ts): ordered once, then taken in turn while the order holds. `take`
 * moves the queue past the first free one (it is being claimed).
 */
function queued(
  view: BoardView,
  input: ActionInput<'claim_next'>,
  now: number,
): { free: () => Generator<StoredTask>; take: () => StoredTask | undefined } {
  const key = JSON.stringify([
    input.columnId,
    input.projectId,
    input.role,
    input.type,
    input.tag?.trim().toLowerCase(),
  ])
  const queue = workQueue(view.doc, key, now, () => {
    const { keyed, lapseAt } = eligible(view, input)
    return { order: keyed.sort(better).map((k) => k.t), lapseAt }
  })
  return {
    free: function* () {
      // Cards claimed at the head stay claimed while the order holds (a release or a lapse
      // builds it again): passed for good, as `take` does, so asks do not walk them again.
      while (queue.next < queue.order.length) {
        const t = queue.order[queue.next] as StoredTask
        if (!claimedAt(view, t.id, now)) break
        queue.next++
      }
      for (let i = queue.next; i < queue.order.length; i++) {
        const t = queue.order[i] as StoredTask
        if (!claimedAt(view, t.id, now)) yield t
      }
    },
    take: () => {
      while (queue.next < queue.order.length) {
        const t = queue.order[queue.next++] as StoredTask
        if (!claimedAt(view, t.id, now)) return t
      }
      return undefined
    },
  }
}

/**
 * claim_next: see the schema. The candidates come from the board document, in the write;
 * Postgres decides (claim_candidate, migration 014): the first whose claim lock is free and
 * which holds no live claim there, which covers claims made a moment ago on another process
 * that this document has not heard of yet. The claim is then made as claim_task makes it.
 */
export async function claim_next(
  ctx: ActionContext,
  input: ActionInput<'claim_next'>,
): Promise<ActionResults['claim_next']> {
  return ctx.writeBoard(async (w) => {
    const now = ctx.clock.now()
    const view = new BoardView(w.doc, now)
    const r = {
      orgId: ctx.orgId,
      actor: ctx.actor,
      note: input.note,
      now,
      leaseMs: ctx.config.claimLeaseSeconds * 1000,
    }
    if (!w.claimsInStorage) {
      // The best card the document shows free, checked by the batch under its claim lock
      // (claims/batch.ts): the writes computed one after another each see the claims made
      // before them, so k agents waiting get k cards, in order, in one statement.
      const taskId = queued(view, input, now).take()?.id
      if (taskId === undefined) return NOTHING
      const row = createdRow({ ...r, taskId })
      w.checkClaim(claimCheck(taskId, claimInDoc(w.doc, ctx.orgId, taskId), now, row))
      const claim = project(w, row, now)
      const after = new BoardView(w.doc, now)
      return { task: after.present(after.requireTask(taskId)), claim }
    }
    // Offered a few at a time, best first: the first ones are nearly always free, and the
    // statement need not carry (nor Postgres walk) the whole queue each time.
    const free = queued(view, input, now).free()
    const next = () => {
      const ids: string[] = []
      for (let t = free.next(); !t.done; t = free.next()) {
        ids.push(t.value.id)
        if (ids.length === CANDIDATES_PER_STATEMENT) break
      }
      return ids
    }
    let ids = next()
    if (ids.length === 0) return NOTHING
    await w.beforeClaimLocks()
    let taskId: string | null | undefined
    while (!taskId && ids.length > 0) {
      const [picked] = await w.tx.query<{ id: string | null }>(
        'select claim_candidate($1, $2, $3::text[], $4::timestamptz) as id',
        [CLAIM_LOCK_SPACE, ctx.orgId, ids, new Date(now).toISOString()],
      )
      taskId = picked?.id
      if (!taskId) ids = next()
    }
    if (!taskId) return NOTHING
    const row = newClaim(w.tx, { ...r, taskId })
    const claim = project(w, row, now)
    const after = new BoardView(w.doc, now)
    return { task: after.present(after.requireTask(taskId)), claim }
  })
}
