import type * as Y from 'yjs'
import { boardMaps } from '../../shared/board-doc.ts'
import type { StoredClaim } from '../../shared/claims.ts'

/**
 * claim_next's candidates, ordered once and handed out in turn (issue 28). Finding the best
 * free card means reading every card of the board; a fleet asks for the next card dozens of
 * times a second, and between two asks usually only claims changed. So the order is kept per
 * board document and query, and each ask takes the next card still free, while it holds:
 *
 * - the board's cards, columns and projects are unchanged (a card added, moved, edited or
 *   removed, a column's role, a blocker's column: any of them may change the order);
 * - no claim was released (its card is free again);
 * - no claim has lapsed: the order is valid until the earliest expiry among the claims it
 *   left out or that were made since.
 *
 * A claim made meanwhile (claim_next's own, claim_task's) keeps it: the card is skipped when
 * its turn comes. Anything else builds the order again, as the first ask did.
 */
export interface Queue<T> {
  /** The candidates, best first. */
  readonly order: readonly T[]
  /** The first one not yet handed out. */
  next: number
}

interface Entry {
  queue: Queue<unknown>
  builtAt: number
  /** The order holds until then (ms since epoch): the earliest expiry of a claim it saw. */
  lapseAt: number
}

class BoardQueues {
  readonly entries = new Map<string, Entry>()

  constructor(doc: Y.Doc) {
    const maps = boardMaps(doc)
    const board: unknown[] = [maps.tasks, maps.columns, maps.projects]
    doc.on('afterTransaction', (tr: Y.Transaction) => {
      if (this.entries.size === 0) return
      // A change anywhere in them, nested fields included (Yjs lists every ancestor).
      const changed = tr.changedParentTypes as Map<unknown, unknown>
      if (board.some((type) => changed.has(type))) {
        this.entries.clear()
        return
      }
      const claims = (tr.changed as Map<unknown, Set<string | null>>).get(maps.claims)
      if (!claims) return
      for (const taskId of claims) {
        const claim = taskId === null ? undefined : (maps.claims.get(taskId) as StoredClaim)
        if (!claim || (claim.releasedAt ?? null) !== null) {
          this.entries.clear()
          return
        }
        const expires = Date.parse(claim.expiresAt)
        for (const entry of this.entries.values()) {
          if (expires < entry.lapseAt) entry.lapseAt = expires
        }
      }
    })
  }
}

const boards = new WeakMap<Y.Doc, BoardQueues>()

function queuesOf(doc: Y.Doc): BoardQueues {
  let queues = boards.get(doc)
  if (!queues) {
    queues = new BoardQueues(doc)
    boards.set(doc, queues)
  }
  return queues
}

/**
 * The queue of `key` (the ask's filters) on this board at `now`: kept while it holds (see
 * above), else built by `build`, which orders the candidates and reports the earliest
 * expiry among the live claims it left out.
 */
export function workQueue<T>(
  doc: Y.Doc,
  key: string,
  now: number,
  build: () => { order: T[]; lapseAt: number },
): Queue<T> {
  const queues = queuesOf(doc)
  const kept = queues.entries.get(key)
  if (kept && now >= kept.builtAt && now < kept.lapseAt) {
    return kept.queue as Queue<T>
  }
  const { order, lapseAt } = build()
  const queue: Queue<T> = { order, next: 0 }
  queues.entries.set(key, { queue, builtAt: now, lapseAt })
  return queue
}
