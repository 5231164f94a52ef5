import type * as Y from 'yjs'
import { isOpen } from '../../shared/dependencies.ts'
import type { WriteScope } from '../live/write-scope.ts'
import { boardIndex } from './board-index.ts'
import { BoardView } from './board-view.ts'

/**
 * What closing and reopening blockers does to the cards waiting for them. A blocker closes
 * when it moves to a `done` column, is archived or deleted, or its column's role becomes
 * `done`; it reopens the other way round (restored, moved out, role changed back). The cards
 * whose `blocked` that moves are changes of their own, in the same transaction as the
 * blocker's (get_changes shows them), and a card whose last open blocker closed raises
 * `card.unblocked`. Every board write follows this (`followingBlockers`); people's live
 * edits follow it in the board guard.
 */

/** What a change of blockers' states did to the cards waiting for them. */
export interface BlockingChanges {
  /** Cards whose `blocked` changed. */
  changed: string[]
  /** Of those, the cards whose last open blocker closed (`card.unblocked`). */
  unblocked: string[]
}

/**
 * The cards whose `blocked` moved: each card waiting for a blocker whose open state differs
 * before and after, compared by its own `blocked` before and after. Only a blocker closing
 * unblocks: a card whose own list was edited is compared, but by the state of its blockers.
 * A card no longer on the board is left out (it is a change of its own).
 */
export function blockingChanges(opts: {
  /** Every blocker whose state may have changed. */
  blockers: Iterable<string>
  openBefore(id: string): boolean
  openAfter(id: string): boolean
  /** The cards waiting for a blocker, before or after. */
  dependentsOf(id: string): Iterable<string>
  blockedByBefore(id: string): readonly string[]
  /** undefined: not on the board now. */
  blockedByAfter(id: string): readonly string[] | undefined
}): BlockingChanges {
  const candidates = new Set<string>()
  for (const b of opts.blockers) {
    if (opts.openBefore(b) !== opts.openAfter(b)) {
      for (const d of opts.dependentsOf(b)) candidates.add(d)
    }
  }
  const changed: string[] = []
  const unblocked: string[] = []
  for (const d of candidates) {
    const after = opts.blockedByAfter(d)
    if (after === undefined) continue
    const was = opts.blockedByBefore(d).some((b) => opts.openBefore(b))
    const is = after.some((b) => opts.openAfter(b))
    if (was === is) continue
    changed.push(d)
    if (was) unblocked.push(d)
  }
  return { changed, unblocked }
}

/** The blockers' states and who waited for them, before a write. */
interface BlockerSnapshot {
  open: Map<string, boolean>
  dependents: Map<string, string[]>
  blockedBy: Map<string, readonly string[]>
}

/** Undefined when no card on the board waits for anything (nothing a write can unblock). */
function snapshot(doc: Y.Doc): BlockerSnapshot | undefined {
  const index = boardIndex(doc)
  const blockers = index.blockers()
  if (blockers.length === 0) return undefined
  const board = new BoardView(doc).dependencies
  const out: BlockerSnapshot = { open: new Map(), dependents: new Map(), blockedBy: new Map() }
  for (const b of blockers) {
    out.open.set(b, isOpen(board, b))
    const waiting = index.dependents(b)
    out.dependents.set(b, waiting)
    for (const d of waiting) out.blockedBy.set(d, index.get(d)?.blockedBy ?? [])
  }
  return out
}

/** Records what the write did to the cards waiting for blockers it closed or reopened. */
function record(w: WriteScope, before: BlockerSnapshot): void {
  const view = new BoardView(w.doc)
  const board = view.dependencies
  const { changed, unblocked } = blockingChanges({
    blockers: new Set([...before.open.keys(), ...boardIndex(w.doc).blockers()]),
    openBefore: (id) => before.open.get(id) ?? isOpen(board, id),
    openAfter: (id) => isOpen(board, id),
    dependentsOf: (id) => new Set([...(before.dependents.get(id) ?? []), ...view.dependents(id)]),
    blockedByBefore: (id) => before.blockedBy.get(id) ?? [],
    blockedByAfter: (id) => view.storedTask(id)?.blockedBy,
  })
  for (const id of changed) w.changed('task', id)
  for (const id of unblocked) {
    const t = view.storedTask(id)
    if (t) w.emit({ type: 'card.unblocked', data: { task: view.present(t) } })
  }
}

/**
 * A board write that also records the cards whose `blocked` it moved (see above). Both
 * the agents' and the people's board writes are made through it.
 */
export function followingBlockers<T>(
  fn: (w: WriteScope) => Promise<T>,
): (w: WriteScope) => Promise<T> {
  return async (w) => {
    const before = snapshot(w.doc)
    const result = await fn(w)
    if (before) record(w, before)
    return result
  }
}
