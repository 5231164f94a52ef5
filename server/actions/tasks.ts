import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { boardMaps } from '../../shared/board-doc.ts'
import { LIMITS, POSITION_STEP } from '../../shared/constants.ts'
import { replaceText } from '../../shared/ytext.ts'
import type { ActionContext } from '../agent/context.ts'
import { badRequest } from '../api-error.ts'
import { assertClaimsAllow } from '../claims/locks.ts'
import type { WriteScope } from '../live/live-docs.ts'
import { BoardView } from './board-view.ts'

/** A project of this organisation, or 400: a project from another organisation is a wrong value. */
export function requireProject(view: BoardView, projectId: string): void {
  if (!view.projects.has(projectId)) {
    throw badRequest(`projectId ${projectId} is not a project of this organisation`)
  }
}

function presentAfterWrite(w: WriteScope, taskId: string) {
  const view = new BoardView(w.doc)
  return view.present(view.requireTask(taskId))
}

/** create_task: appended to the bottom of its column unless `position` is given. */
export async function create_task(
  ctx: ActionContext,
  input: ActionInput<'create_task'>,
): Promise<ActionResults['create_task']> {
  return ctx.writeBoard(async (w) => {
    const view = new BoardView(w.doc)
    view.requireColumn(input.columnId)
    if (input.projectId !== undefined) requireProject(view, input.projectId)
    const id = randomUUID()
    const position = input.position ?? view.appendPosition(input.columnId, POSITION_STEP)
    w.mutate((doc) => {
      const m = new Y.Map<unknown>()
      m.set('columnId', input.columnId)
      m.set('projectId', input.projectId ?? null)
      m.set('title', input.title)
      m.set('description', new Y.Text(input.description ?? ''))
      m.set('type', input.type ?? null)
      m.set('priority', input.priority ?? null)
      m.set('tags', [])
      m.set('assigneeIds', [])
      m.set('position', position)
      m.set('createdAt', w.now)
      m.set('updatedAt', w.now)
      m.set('archivedAt', null)
      m.set('createdByEmail', w.origin.type === 'agent' ? w.origin.email : '')
      boardMaps(doc).tasks.set(id, m)
    })
    w.changed('task', id)
    const task = presentAfterWrite(w, id)
    w.emit({ type: 'card.created', data: { task } })
    return { task }
  })
}

/** update_task: only the fields sent; "" clears description, type or priority. Claim locked. */
export async function update_task(
  ctx: ActionContext,
  input: ActionInput<'update_task'>,
): Promise<ActionResults['update_task']> {
  const { taskId, title, description, projectId, type, priority } = input
  if ([title, description, projectId, type, priority].every((v) => v === undefined)) {
    throw badRequest(
      'update_task needs at least one of title, description, projectId, type, priority',
    )
  }
  return ctx.writeBoard(async (w) => {
    const view = new BoardView(w.doc)
    view.requireTask(taskId)
    if (projectId !== undefined) requireProject(view, projectId)
    await assertClaimsAllow(w.tx, [taskId], ctx.actor)
    w.mutate((doc) => {
      const m = boardMaps(doc).tasks.get(taskId) as Y.Map<unknown>
      if (title !== undefined) m.set('title', title)
      if (description !== undefined) {
        const text = m.get('description')
        if (text instanceof Y.Text) replaceText(text, description)
        else m.set('description', new Y.Text(description))
      }
      if (projectId !== undefined) m.set('projectId', projectId)
      if (type !== undefined) m.set('type', type === '' ? null : type)
      if (priority !== undefined) m.set('priority', priority === '' ? null : priority)
      m.set('updatedAt', w.now)
    })
    w.changed('task', taskId)
    return { task: presentAfterWrite(w, taskId) }
  })
}

/**
 * Trims each tag and folds duplicates that differ only in case, keeping the first casing
 * and the input order. Refuses (never truncates) empty tags, tags over 40 characters and
 * more than 20 tags.
 */
export function normaliseTags(tags: readonly string[]): string[] {
  const out = new Map<string, string>()
  tags.forEach((raw, i) => {
    const tag = raw.trim()
    if (tag === '')
      throw badRequest(`tags[${i}] is empty; tags must be 1–${LIMITS.tagLength} characters`)
    if (tag.length > LIMITS.tagLength) {
      throw badRequest(
        `tags[${i}] is ${tag.length} characters; each tag is at most ${LIMITS.tagLength} characters`,
      )
    }
    if (!out.has(tag.toLowerCase())) out.set(tag.toLowerCase(), tag)
  })
  if (out.size > LIMITS.tagsPerCard) {
    throw badRequest(`tags holds ${out.size} tags; a card has at most ${LIMITS.tagsPerCard} tags`)
  }
  return [...out.values()]
}

/** set_task_tags: replaces the whole set ([] clears it). Claim locked. */
export async function set_task_tags(
  ctx: ActionContext,
  input: ActionInput<'set_task_tags'>,
): Promise<ActionResults['set_task_tags']> {
  const tags = normaliseTags(input.tags)
  return ctx.writeBoard(async (w) => {
    new BoardView(w.doc).requireTask(input.taskId)
    await assertClaimsAllow(w.tx, [input.taskId], ctx.actor)
    w.mutate((doc) => {
      const m = boardMaps(doc).tasks.get(input.taskId) as Y.Map<unknown>
      m.set('tags', tags)
      m.set('updatedAt', w.now)
    })
    w.changed('task', input.taskId)
    return { task: presentAfterWrite(w, input.taskId) }
  })
}

/** move_task: appended to the bottom of the destination unless `position` is given. Claim locked. */
export async function move_task(
  ctx: ActionContext,
  input: ActionInput<'move_task'>,
): Promise<ActionResults['move_task']> {
  return ctx.writeBoard(async (w) => {
    const view = new BoardView(w.doc)
    const before = view.requireTask(input.taskId)
    const destination = view.requireColumn(input.columnId)
    await assertClaimsAllow(w.tx, [input.taskId], ctx.actor)
    const position = input.position ?? view.appendPosition(input.columnId, POSITION_STEP)
    w.mutate((doc) => {
      const m = boardMaps(doc).tasks.get(input.taskId) as Y.Map<unknown>
      m.set('columnId', input.columnId)
      m.set('position', position)
      m.set('updatedAt', w.now)
    })
    w.changed('task', input.taskId)
    const task = presentAfterWrite(w, input.taskId)
    if (before.columnId !== destination.id) {
      w.emit({
        type: 'card.moved',
        data: {
          task,
          fromColumnId: before.columnId,
          toColumnId: destination.id,
          toColumnTitle: destination.title,
        },
      })
    }
    return { task }
  })
}

/** archive_task: idempotent; archiving again returns the original archivedAt. Claim locked. */
export async function archive_task(
  ctx: ActionContext,
  input: ActionInput<'archive_task'>,
): Promise<ActionResults['archive_task']> {
  return ctx.writeBoard(async (w) => {
    const task = new BoardView(w.doc).requireTask(input.taskId)
    await assertClaimsAllow(w.tx, [input.taskId], ctx.actor)
    if (task.archivedAt) return { taskId: task.id, archivedAt: task.archivedAt }
    w.mutate((doc) => {
      const m = boardMaps(doc).tasks.get(input.taskId) as Y.Map<unknown>
      m.set('archivedAt', w.now)
      m.set('updatedAt', w.now)
    })
    w.changed('task', input.taskId)
    return { taskId: input.taskId, archivedAt: w.now }
  })
}
