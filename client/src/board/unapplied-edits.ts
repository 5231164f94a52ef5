import * as Y from 'yjs'
import { boardMaps } from '../../../shared/board-doc.ts'
import { changedKeys, type LiveDoc } from '../live/live-doc.ts'
import { LOCAL } from './board-actions.ts'

/**
 * A person's edits to cards that the server has not acknowledged yet, remembered on the
 * device until it has. An edit made offline to a card that someone archived (or deleted)
 * meanwhile lands on a card no longer on the board, where Yjs keeps it out of sight: the
 * server never sees it. docs/design.md's rule is that such an edit is applied to the archived
 * card or shown to the person as refused, never silently dropped; this is how the app
 * knows which edits those were, field by field, so it can offer to restore the card and
 * apply them again.
 */

/** The fields a person edits on a card, with the value they left each at. */
export interface CardEdit {
  taskId: string
  title: string
  fields: Record<string, unknown>
}

const EDITABLE = new Set([
  'title',
  'type',
  'priority',
  'projectId',
  'tags',
  'assigneeIds',
  'blockedBy',
  'columnId',
  'position',
  'archivedAt',
])

function keyOf(userId: string, docName: string): string {
  return `corkboard/${userId}/${docName}#unapplied-edits`
}

function isEdit(v: unknown): v is CardEdit {
  if (typeof v !== 'object' || v === null) return false
  const e = v as Record<string, unknown>
  return (
    typeof e.taskId === 'string' &&
    typeof e.title === 'string' &&
    typeof e.fields === 'object' &&
    e.fields !== null
  )
}

/** The card a change inside the tasks map belongs to, and the field it changed. */
function locate(tasks: Y.Map<Y.Map<unknown>>, type: Y.AbstractType<unknown>, key: string | null) {
  if (type.parent === tasks) {
    const taskId = type._item?.parentSub
    return taskId && key ? { taskId, field: key } : undefined
  }
  const card = type.parent
  if (type instanceof Y.Text && card instanceof Y.Map && card.parent === tasks) {
    const taskId = card._item?.parentSub
    const field = type._item?.parentSub
    return taskId && field ? { taskId, field } : undefined
  }
  return undefined
}

/**
 * Watches the board document. `onLost` hears about each card that left the board through
 * someone else's change while it carried edits of this person the server never took.
 */
export interface UnappliedEdits {
  /** Forgets a card's pending edits (the person deleted it: nothing to hand back). */
  forget(taskId: string): void
  stop(): void
}

export function watchUnappliedEdits(
  board: LiveDoc,
  userId: string,
  onLost: (edit: CardEdit) => void,
): UnappliedEdits {
  const key = keyOf(userId, board.name)
  const { tasks } = boardMaps(board.doc)
  let edits = new Map<string, CardEdit>()
  try {
    const data: unknown = JSON.parse(localStorage.getItem(key) ?? '[]')
    if (Array.isArray(data)) for (const e of data) if (isEdit(e)) edits.set(e.taskId, e)
  } catch {
    // Nothing usable kept: start afresh.
  }
  const save = () => {
    try {
      if (edits.size === 0) localStorage.removeItem(key)
      else localStorage.setItem(key, JSON.stringify([...edits.values()]))
    } catch {
      // Storage refused: the edits still travel in the document.
    }
  }

  const onTransaction = (tr: Y.Transaction) => {
    if (tr.origin === LOCAL) {
      let changed = false
      tr.changed.forEach((keys, type) => {
        for (const k of keys) {
          const at = locate(tasks, type as Y.AbstractType<unknown>, k)
          if (!at || !EDITABLE.has(at.field)) continue
          const m = tasks.get(at.taskId)
          if (!m) continue
          const value = m.get(at.field)
          const edit = edits.get(at.taskId) ?? {
            taskId: at.taskId,
            title: '',
            fields: {},
          }
          edit.fields[at.field] = value instanceof Y.Text ? value.toString() : value
          const title = m.get('title')
          edit.title = typeof title === 'string' ? title : edit.title
          edits.set(at.taskId, edit)
          changed = true
        }
      })
      if (changed) save()
      return
    }
    // Someone else's change took cards off the board: were any of them edited here?
    if (edits.size === 0) return
    const removed = changedKeys(tr, tasks)
    if (!removed) return
    let changed = false
    for (const taskId of removed) {
      if (taskId === null || tasks.has(taskId)) continue
      const edit = edits.get(taskId)
      if (!edit) continue
      edits.delete(taskId)
      changed = true
      // The person archived it themselves: the card left as they asked.
      if (edit.fields.archivedAt) continue
      onLost(edit)
    }
    if (changed) save()
  }
  board.doc.on('afterTransaction', onTransaction)
  const offStatus = board.subscribe(() => {
    const s = board.status
    if (s.synced && s.unsynced === 0 && edits.size > 0) {
      edits = new Map()
      save()
    }
  })
  return {
    forget(taskId) {
      if (edits.delete(taskId)) save()
    },
    stop() {
      board.doc.off('afterTransaction', onTransaction)
      offStatus()
    },
  }
}
