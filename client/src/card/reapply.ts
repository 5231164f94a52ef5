import { PRIORITIES, TASK_TYPES } from '../../../shared/constants.ts'
import { appApi } from '../api/app-api.ts'
import { moveTask, type TaskPatch, updateTask } from '../board/board-actions.ts'
import type { BoardStore } from '../board/board-store.ts'
import type { CardEdit } from '../board/unapplied-edits.ts'
import { notify } from '../ui/notices.tsx'

const LABELS: Record<string, string> = {
  title: 'Title',
  type: 'Type',
  priority: 'Priority',
  projectId: 'Project',
  tags: 'Tags',
  assigneeIds: 'Assignees',
  blockedBy: 'Blocked by',
  columnId: 'Column',
}

function describe(edit: CardEdit, store: BoardStore): string {
  const lines: string[] = []
  for (const [field, value] of Object.entries(edit.fields)) {
    const label = LABELS[field]
    if (!label) continue
    let shown: string
    if (field === 'columnId') shown = store.column(String(value))?.title ?? 'another column'
    else if (field === 'projectId') shown = store.project(value as string)?.name ?? 'no project'
    else if (field === 'assigneeIds') shown = `${Array.isArray(value) ? value.length : 0} people`
    else if (field === 'blockedBy')
      shown =
        (strings(value) ?? [])
          .map((id) => store.card(id)?.title ?? 'a card not on the board')
          .join(', ') || '(none)'
    else if (Array.isArray(value)) shown = value.join(', ')
    else shown = value === null || value === '' ? '(none)' : String(value)
    lines.push(`${label}: ${shown}`)
  }
  return lines.join('\n')
}

const strings = (v: unknown) =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : undefined

/** Applies the remembered fields to the card, now back on the board. */
function apply(store: BoardStore, edit: CardEdit): void {
  const f = edit.fields
  const patch: TaskPatch = {}
  if (typeof f.title === 'string' && f.title.trim()) patch.title = f.title
  if ('type' in f)
    patch.type = TASK_TYPES.includes(f.type as never) ? (f.type as TaskPatch['type']) : null
  if ('priority' in f)
    patch.priority = PRIORITIES.includes(f.priority as never)
      ? (f.priority as TaskPatch['priority'])
      : null
  if (typeof f.projectId === 'string' && store.project(f.projectId)) patch.projectId = f.projectId
  const tags = strings(f.tags)
  if (tags) patch.tags = tags
  const assignees = strings(f.assigneeIds)
  if (assignees) patch.assigneeIds = assignees
  const blockers = strings(f.blockedBy)
  if (blockers) patch.blockedBy = blockers
  updateTask(store.doc, edit.taskId, patch)
  if (typeof f.columnId === 'string' && store.column(f.columnId)) {
    const ids = store.cardsOf(f.columnId).ids.filter((id) => id !== edit.taskId)
    const last = ids.length > 0 ? store.card(ids[ids.length - 1] as string) : undefined
    const position = typeof f.position === 'number' ? f.position : (last?.position ?? 0) + 1
    moveTask(store.doc, edit.taskId, f.columnId, position)
  }
}

/** Resolves once the card is on the board document (a restore's update arrives live). */
function cardOnBoard(store: BoardStore, taskId: string): Promise<void> {
  if (store.card(taskId)) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off()
      reject(new Error('The card was restored but has not reached this device yet; try again'))
    }, 15_000)
    const off = store.subscribe(`card:${taskId}`, () => {
      if (!store.card(taskId)) return
      clearTimeout(timer)
      off()
      resolve()
    })
  })
}

/**
 * Tells the person that edits they made offline reached a card that had left the board
 * meanwhile, shows what they were, and offers to put the card back with them applied.
 */
export function offerReapply(input: { orgId: string; store: BoardStore; edit: CardEdit }): void {
  const { orgId, store, edit } = input
  notify({
    title: `Your edit to “${edit.title || 'a card'}” was not applied`,
    message:
      'The card was archived or deleted while your changes were on their way, so they did not reach it.',
    text: describe(edit, store),
    actions: [
      {
        label: 'Restore the card and apply my edit',
        run: async () => {
          if (!store.card(edit.taskId)) {
            await appApi.restoreTask(orgId, edit.taskId)
            await cardOnBoard(store, edit.taskId)
          }
          apply(store, edit)
        },
      },
    ],
  })
}
