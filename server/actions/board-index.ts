import * as Y from 'yjs'
import { boardMaps } from '../../shared/board-doc.ts'

/**
 * Per-document facts that would otherwise cost a scan of every card or comment on each
 * request: the highest card position per column, and each card's comments and
 * screenshots. Built once per document by a full scan, then kept current by Yjs
 * observers, so a write on a 2,000-card board does not read 2,000 cards.
 */
export class BoardIndex {
  /** Highest position seen per column. Never lowered: appending after it is still "after the last card". */
  private readonly maxPosition = new Map<string, number>()
  private readonly commentsByTask = new Map<string, Set<string>>()
  private readonly commentTask = new Map<string, string>()
  private readonly attachmentsByTask = new Map<string, Set<string>>()
  private readonly attachmentTask = new Map<string, string>()

  constructor(doc: Y.Doc) {
    const maps = boardMaps(doc)
    maps.tasks.forEach((m) => {
      this.notePosition(m)
    })
    maps.comments.forEach((m, id) => {
      this.link(this.commentsByTask, this.commentTask, id, m.get('taskId'))
    })
    maps.attachments.forEach((m, id) => {
      this.link(this.attachmentsByTask, this.attachmentTask, id, m.get('taskId'))
    })
    maps.tasks.observeDeep((events) => {
      for (const event of events) {
        if (event.target === maps.tasks) {
          for (const key of (event as Y.YMapEvent<unknown>).keysChanged) {
            const m = maps.tasks.get(key)
            if (m) this.notePosition(m)
          }
        } else if (event.target instanceof Y.Map) {
          // A card's own fields changed (a description edit targets its Y.Text: no position there).
          this.notePosition(event.target)
        }
      }
    })
    maps.comments.observe((event) => {
      for (const key of event.keysChanged) {
        const m = maps.comments.get(key)
        if (m) this.link(this.commentsByTask, this.commentTask, key, m.get('taskId'))
        else this.unlink(this.commentsByTask, this.commentTask, key)
      }
    })
    maps.attachments.observe((event) => {
      for (const key of event.keysChanged) {
        const m = maps.attachments.get(key)
        if (m) this.link(this.attachmentsByTask, this.attachmentTask, key, m.get('taskId'))
        else this.unlink(this.attachmentsByTask, this.attachmentTask, key)
      }
    })
  }

  private notePosition(m: Y.Map<unknown>): void {
    const columnId = m.get('columnId')
    const position = m.get('position')
    if (typeof columnId !== 'string' || typeof position !== 'number' || !Number.isFinite(position))
      return
    if (position > (this.maxPosition.get(columnId) ?? Number.NEGATIVE_INFINITY))
      this.maxPosition.set(columnId, position)
  }

  private link(
    byTask: Map<string, Set<string>>,
    owner: Map<string, string>,
    id: string,
    taskId: unknown,
  ): void {
    if (typeof taskId !== 'string' || owner.get(id) === taskId) return
    this.unlink(byTask, owner, id)
    owner.set(id, taskId)
    let set = byTask.get(taskId)
    if (!set) {
      set = new Set()
      byTask.set(taskId, set)
    }
    set.add(id)
  }

  private unlink(byTask: Map<string, Set<string>>, owner: Map<string, string>, id: string): void {
    const taskId = owner.get(id)
    if (taskId === undefined) return
    owner.delete(id)
    byTask.get(taskId)?.delete(id)
  }

  /** The position after the last card of a column. */
  appendPosition(columnId: string, step: number): number {
    const max = this.maxPosition.get(columnId)
    return max === undefined ? step : max + step
  }

  commentIds(taskId: string): ReadonlySet<string> {
    return this.commentsByTask.get(taskId) ?? EMPTY
  }

  attachmentIds(taskId: string): ReadonlySet<string> {
    return this.attachmentsByTask.get(taskId) ?? EMPTY
  }
}

const EMPTY: ReadonlySet<string> = new Set()
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
