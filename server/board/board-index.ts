import type * as Y from 'yjs'
import { boardMaps, readStoredTask, type StoredTask } from '../../shared/board-doc.ts'

/**
 * What reads of a board document would otherwise cost a scan of every card for: each card
 * read once and kept (read again only when it changes), and the highest card position
 * per column. Built on first use, then kept current by one deep observer, so get_board on a
 * 2,000-card board reads only the cards that changed since the last read, and appending to
 * it reads none.
 */
export class BoardIndex {
  private readonly tasks: Y.Map<Y.Map<unknown>>
  /** Cards as last read; those in `stale` are read again before use. */
  private readonly cards = new Map<string, StoredTask>()
  private readonly stale = new Set<string>()
  /** Highest position seen per column. Never lowered: appending after it is still "after the last card". */
  private readonly maxPosition = new Map<string, number>()
  /** Blocker id → the cards on the board waiting for it (their `blockedBy`). */
  private readonly waiting = new Map<string, Set<string>>()

  constructor(doc: Y.Doc) {
    this.tasks = boardMaps(doc).tasks
    this.tasks.forEach((_m, id) => {
      this.stale.add(id)
    })
    this.tasks.observeDeep((events) => {
      for (const event of events) {
        if (event.target === this.tasks) {
          for (const key of (event as Y.YMapEvent<unknown>).keysChanged) this.stale.add(key)
        } else {
          // A card's own field (or its description's text) changed.
          const id = event.path[0]
          if (typeof id === 'string') this.stale.add(id)
        }
      }
    })
  }

  private refresh(): void {
    if (this.stale.size === 0) return
    for (const id of this.stale) {
      const m = this.tasks.get(id)
      const before = this.cards.get(id)
      if (before) this.unlink(before)
      if (!m) {
        this.cards.delete(id)
        continue
      }
      const card = readStoredTask(id, m)
      this.cards.set(id, card)
      this.link(card)
      if (card.position > (this.maxPosition.get(card.columnId) ?? Number.NEGATIVE_INFINITY))
        this.maxPosition.set(card.columnId, card.position)
    }
    this.stale.clear()
  }

  private link(card: StoredTask): void {
    for (const b of card.blockedBy) {
      let set = this.waiting.get(b)
      if (!set) {
        set = new Set()
        this.waiting.set(b, set)
      }
      set.add(card.id)
    }
  }

  private unlink(card: StoredTask): void {
    for (const b of card.blockedBy) {
      const set = this.waiting.get(b)
      set?.delete(card.id)
      if (set?.size === 0) this.waiting.delete(b)
    }
  }

  /** The cards on the board waiting for `taskId` (what it blocks). */
  dependents(taskId: string): string[] {
    this.refresh()
    return [...(this.waiting.get(taskId) ?? [])]
  }

  /** Every card some card on the board waits for (on the board or not). */
  blockers(): string[] {
    this.refresh()
    return [...this.waiting.keys()]
  }

  /** Every card on the board, as stored (shared objects: copy before changing one). */
  all(): StoredTask[] {
    this.refresh()
    return [...this.cards.values()]
  }

  get(taskId: string): StoredTask | undefined {
    if (this.stale.has(taskId)) this.refresh()
    return this.cards.get(taskId)
  }

  /** The position after the last card of a column. */
  appendPosition(columnId: string, step: number): number {
    this.refresh()
    const max = this.maxPosition.get(columnId)
    return max === undefined ? step : max + step
  }
}

const indexes = new WeakMap<Y.Doc, BoardIndex>()

/** The document's index, built on first use and maintained from then on. */
export function boardIndex(doc: Y.Doc): BoardIndex {
  let index = indexes.get(doc)
  if (!index) {
    index = new BoardIndex(doc)
    indexes.set(doc, index)
  }
  return index
}
