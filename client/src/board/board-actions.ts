import * as Y from 'yjs'
import { boardMaps } from '../../../shared/board-doc.ts'
import { cardMaps } from '../../../shared/card-doc.ts'
import { LIMITS, POSITION_STEP, type Priority, type TaskType } from '../../../shared/constants.ts'
import { uuid } from '../ids.ts'
import type { BoardStore } from './board-store.ts'

/**
 * A person's edits to the board document (docs/design.md Contract 3). These are plain Yjs
 * edits; the server checks them and reverts what the rules refuse, saying why, and stamps
 * what it owns (updatedAt, createdAt, authorship, editedAt), so the app writes only the
 * fields a person changes. It never removes a card, column, project or comment from the
 * document: deletions go through the app API, so the server does them.
 */

/** Marks this app's own transactions (the Y.Text binding tells its own edits apart by it). */
export const LOCAL = Symbol('local edit')

const now = () => new Date().toISOString()

function task(doc: Y.Doc, id: string): Y.Map<unknown> | undefined {
  return boardMaps(doc).tasks.get(id)
}

/**
 * Where a card lands between two neighbours: halfway, so nothing else in the column is
 * rewritten (every overwritten value stays in the document forever).
 */
export function positionBetween(before: number | undefined, after: number | undefined): number {
  if (before === undefined && after === undefined) return POSITION_STEP
  if (before === undefined) return (after as number) - POSITION_STEP
  if (after === undefined) return before + POSITION_STEP
  return (before + after) / 2
}

/**
 * Where a card dropped at `index` of a column's shown cards lands: right after the shown
 * card before it (or right before the first one), judged in the column's full order, so a
 * filter hiding cards never makes two cards share a position. Undefined when the card
 * would stay exactly where it is (nothing to write).
 */
export function planDrop(
  store: BoardStore,
  columnId: string,
  shown: readonly string[],
  index: number,
  movingId: string,
): number | undefined {
  const all = store.cardsOf(columnId).ids
  const others = all.filter((id) => id !== movingId)
  const shownOthers = shown.filter((id) => id !== movingId)
  let at: number
  if (index <= 0 || shownOthers.length === 0) {
    const first = shownOthers[0]
    at = first === undefined ? others.length : others.indexOf(first)
  } else {
    const before = shownOthers[Math.min(index, shownOthers.length) - 1] as string
    at = others.indexOf(before) + 1
  }
  const prev = others[at - 1]
  const next = others[at]
  const card = store.card(movingId)
  if (card?.columnId === columnId) {
    const i = all.indexOf(movingId)
    if (all[i - 1] === prev && all[i + 1] === next) return undefined
  }
  return positionBetween(
    prev === undefined ? undefined : store.card(prev)?.position,
    next === undefined ? undefined : store.card(next)?.position,
  )
}

export function createTask(
  store: BoardStore,
  input: { columnId: string; projectId: string | null; title: string; email: string },
): string {
  const id = uuid()
  const ids = store.cardsOf(input.columnId).ids
  const last = ids.length > 0 ? store.card(ids[ids.length - 1] as string) : undefined
  const stamp = now()
  store.doc.transact(() => {
    const m = new Y.Map<unknown>()
    m.set('columnId', input.columnId)
    m.set('projectId', input.projectId)
    m.set('title', input.title.slice(0, LIMITS.taskTitle.max))
    m.set('type', null)
    m.set('priority', null)
    m.set('tags', [])
    m.set('assigneeIds', [])
    m.set('position', last ? last.position + POSITION_STEP : POSITION_STEP)
    m.set('createdAt', stamp)
    m.set('updatedAt', stamp)
    m.set('archivedAt', null)
    m.set('createdByEmail', input.email)
    boardMaps(store.doc).tasks.set(id, m)
  }, LOCAL)
  return id
}

export interface TaskPatch {
  title?: string
  type?: TaskType | null
  priority?: Priority | null
  projectId?: string
  tags?: string[]
  assigneeIds?: string[]
  /** The whole list of cards this one waits for, set at once as `tags` is. */
  blockedBy?: string[]
}

/** Writes only the fields that differ, so an unchanged value costs nothing. */
export function updateTask(doc: Y.Doc, taskId: string, patch: TaskPatch): void {
  const m = task(doc, taskId)
  if (!m) return
  const changes = Object.entries(patch).filter(([k, v]) => {
    const cur = m.get(k)
    if (Array.isArray(v) && Array.isArray(cur)) return v.join('\n') !== cur.join('\n')
    return (cur ?? null) !== v
  })
  if (changes.length === 0) return
  doc.transact(() => {
    for (const [k, v] of changes) m.set(k, v)
  }, LOCAL)
}

export function moveTask(doc: Y.Doc, taskId: string, columnId: string, position: number): void {
  const m = task(doc, taskId)
  if (!m) return
  if (m.get('columnId') === columnId && m.get('position') === position) return
  doc.transact(() => {
    if (m.get('columnId') !== columnId) m.set('columnId', columnId)
    m.set('position', position)
  }, LOCAL)
}

/**
 * Archives a card: the server takes it off the board in the transaction that accepts the
 * edit (docs/design.md Contract 3). Putting it back is the app API's restore, since the card is
 * no longer in the document to edit.
 */
export function archiveTask(doc: Y.Doc, taskId: string): void {
  const m = task(doc, taskId)
  if (!m) return
  doc.transact(() => m.set('archivedAt', now()), LOCAL)
}

/** Trims, folds case duplicates keeping the first casing, and refuses what the limits refuse. */
export function normaliseTags(tags: readonly string[]): { tags: string[]; error?: string } {
  const out = new Map<string, string>()
  for (const raw of tags) {
    const tag = raw.trim()
    if (tag === '') continue
    if (tag.length > LIMITS.tagLength) {
      return { tags: [], error: `A tag is at most ${LIMITS.tagLength} characters` }
    }
    if (!out.has(tag.toLowerCase())) out.set(tag.toLowerCase(), tag)
  }
  if (out.size > LIMITS.tagsPerCard) {
    return { tags: [], error: `A card has at most ${LIMITS.tagsPerCard} tags` }
  }
  return { tags: [...out.values()] }
}

export function createColumn(
  store: BoardStore,
  input: { title: string; projectId: string | null },
): string {
  const id = uuid()
  const last = store.columns().at(-1)
  const stamp = now()
  store.doc.transact(() => {
    const m = new Y.Map<unknown>()
    m.set('title', input.title.slice(0, LIMITS.columnTitle.max))
    m.set('position', last ? last.position + POSITION_STEP : POSITION_STEP)
    m.set('role', null)
    m.set('projectId', input.projectId)
    m.set('onFire', false)
    m.set('createdAt', stamp)
    m.set('updatedAt', stamp)
    boardMaps(store.doc).columns.set(id, m)
  }, LOCAL)
  return id
}

export function renameColumn(doc: Y.Doc, columnId: string, title: string): void {
  const m = boardMaps(doc).columns.get(columnId)
  if (!m || m.get('title') === title) return
  doc.transact(() => m.set('title', title.slice(0, LIMITS.columnTitle.max)), LOCAL)
}

export function moveColumn(store: BoardStore, columnId: string, index: number): void {
  const others = store.columns().filter((c) => c.id !== columnId)
  const position = positionBetween(others[index - 1]?.position, others[index]?.position)
  const m = boardMaps(store.doc).columns.get(columnId)
  if (!m || m.get('position') === position) return
  store.doc.transact(() => m.set('position', position), LOCAL)
}

/** A person's comment in the card's own document: no agentName, so it counts as a human's. */
export function addComment(card: Y.Doc, input: { taskId: string; body: string; email: string }) {
  const id = uuid()
  card.transact(() => {
    const m = new Y.Map<unknown>()
    m.set('taskId', input.taskId)
    m.set('body', input.body.slice(0, LIMITS.commentBody.max))
    m.set('authorEmail', input.email)
    m.set('agentName', null)
    m.set('createdAt', now())
    m.set('editedAt', null)
    cardMaps(card).comments.set(id, m)
  }, LOCAL)
  return id
}

export function editComment(card: Y.Doc, commentId: string, body: string): void {
  const m = cardMaps(card).comments.get(commentId)
  if (!m || m.get('body') === body) return
  // The server stamps editedAt (and keeps author and time); only the body is ours to set.
  card.transact(() => m.set('body', body.slice(0, LIMITS.commentBody.max)), LOCAL)
}
