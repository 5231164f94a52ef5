import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { boardMaps, type StoredTask, taskMap } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { LIMITS, POSITION_STEP } from '../../shared/constants.ts'
import { cardDocName } from '../../shared/doc-names.ts'
import { EMPTY_STATS, type Task } from '../../shared/records.ts'
import { replaceText } from '../../shared/ytext.ts'
import { archivedRow } from '../board/archive.ts'
import { BoardView } from '../board/board-view.ts'
import { descriptionOf } from '../board/descriptions.ts'
import { cardClaim, lockArchived } from '../board/history.ts'
import { archivedTextOp } from '../board/texts.ts'
import { badRequest, notFound } from '../errors.ts'
import type { WriteScope } from '../live/write-scope.ts'
import type { ActionContext } from './context.ts'

/** A project of this organisation, or 400: a project from another organisation is a wrong value. */
export function requireProject(view: BoardView, projectId: string): void {
  if (!view.projects.has(projectId)) {
    throw badRequest(`projectId ${projectId} is not a project of this organisation`)
  }
}

function presentAfterWrite(w: WriteScope, taskId: string): Task {
  const view = new BoardView(w.doc)
  return view.present(view.requireTask(taskId))
}

/**
 * An edit of a card, on the board (its fields in the board document) or archived (its
 * row): 404 when the card is neither. Returns the card as the write left it. The claim
 * lock is the caller's: the gate of claim-locked actions (server/claims/gate.ts) has
 * passed before this runs.
 */
export async function editCard(
  ctx: ActionContext,
  w: WriteScope,
  taskId: string,
  edit: {
    board(m: Y.Map<unknown>, view: BoardView): void
    archived(t: StoredTask): StoredTask
    /** True when the edit would change nothing: the card is returned as it is (idempotent). */
    unchanged?(t: StoredTask): boolean
    /**
     * A new description, written into the card's document (which the write opened) whether
     * the card is on the board or archived.
     */
    description?: string | undefined
  },
): Promise<Task> {
  const view = new BoardView(w.doc)
  const onBoard = boardMaps(w.doc).tasks.get(taskId)
  const archived = onBoard ? undefined : await lockArchived(w, ctx.orgId, taskId)
  if (!onBoard && !archived) {
    throw notFound(`No card with taskId ${taskId} in this organisation`)
  }
  const current = onBoard ? view.requireTask(taskId) : (archived as StoredTask)
  if (!onBoard) await ctx.descriptions.load(ctx.orgId, [taskId], w.tx)
  if (edit.unchanged?.(current)) {
    return onBoard
      ? view.present(current)
      : view.present(current, await cardClaim(w.tx, ctx.orgId, taskId, ctx.clock.now()))
  }
  if (edit.description !== undefined) {
    const text = edit.description
    w.mutateDoc(w.open(cardDocName(ctx.orgId, taskId)), (doc) =>
      replaceText(cardMaps(doc).description, text),
    )
    tellDescription(ctx, w, taskId, text)
  }
  if (onBoard) {
    w.mutate(() => {
      edit.board(onBoard, view)
      onBoard.set('updatedAt', w.now)
    })
    w.changed('task', taskId)
    return presentAfterWrite(w, taskId)
  }
  const changed = { ...edit.archived(archived as StoredTask), updatedAt: w.now }
  w.row({ t: 'archived', id: taskId, rec: archivedRow(changed) })
  w.row(archivedTextOp(changed, ctx.descriptions.get(ctx.orgId, taskId)))
  w.changed('task', taskId)
  return view.present(changed, await cardClaim(w.tx, ctx.orgId, taskId, ctx.clock.now()))
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
    const description = input.description ?? ''
    if (description !== '') {
      // The new card's document starts with its description, stored with the card: no
      // document is loaded for it until someone opens the card.
      w.append(cardDocName(ctx.orgId, id), firstDescription(description))
    }
    tellDescription(ctx, w, id, description)
    w.mutate((doc) => {
      boardMaps(doc).tasks.set(
        id,
        taskMap({
          columnId: input.columnId,
          projectId: input.projectId ?? null,
          title: input.title,
          type: input.type ?? null,
          priority: input.priority ?? null,
          tags: [],
          blockedBy: [],
          assigneeIds: [],
          position,
          createdAt: w.now,
          updatedAt: w.now,
          archivedAt: null,
          createdByEmail: w.origin.type === 'agent' ? w.origin.email : '',
          stats: EMPTY_STATS,
        }),
      )
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
  const typeValue = type === '' ? null : type
  const priorityValue = priority === '' ? null : priority
  // A description lives in the card's document (version 3): the write opens it.
  const opens = description === undefined ? [] : [cardDocName(ctx.orgId, taskId)]
  return ctx.writeBoard(async (w) => {
    if (projectId !== undefined) requireProject(new BoardView(w.doc), projectId)
    const task = await editCard(ctx, w, taskId, {
      board: (m) => {
        if (title !== undefined) m.set('title', title)
        if (projectId !== undefined) m.set('projectId', projectId)
        if (typeValue !== undefined) m.set('type', typeValue)
        if (priorityValue !== undefined) m.set('priority', priorityValue)
      },
      archived: (t) => ({
        ...t,
        ...(title !== undefined ? { title } : {}),
        ...(projectId !== undefined ? { projectId } : {}),
        ...(typeValue !== undefined ? { type: typeValue } : {}),
        ...(priorityValue !== undefined ? { priority: priorityValue } : {}),
      }),
      description,
    })
    return { task }
  }, opens)
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
  return ctx.writeBoard(async (w) => ({
    task: await editCard(ctx, w, input.taskId, {
      board: (m) => m.set('tags', tags),
      archived: (t) => ({ ...t, tags }),
    }),
  }))
}

/**
 * move_task: appended to the bottom of the destination unless `position` is given. Claim
 * locked. An archived card moves too and stays archived (it comes back there if restored).
 */
export async function move_task(
  ctx: ActionContext,
  input: ActionInput<'move_task'>,
): Promise<ActionResults['move_task']> {
  return ctx.writeBoard(async (w) => {
    const view = new BoardView(w.doc)
    const destination = view.requireColumn(input.columnId)
    const position = input.position ?? view.appendPosition(input.columnId, POSITION_STEP)
    let from: string | undefined
    const task = await editCard(ctx, w, input.taskId, {
      board: (m) => {
        from = String(m.get('columnId'))
        m.set('columnId', input.columnId)
        m.set('position', position)
      },
      archived: (t) => ({ ...t, columnId: input.columnId, position }),
    })
    if (from !== undefined && from !== destination.id) {
      w.emit({
        type: 'card.moved',
        data: {
          task,
          fromColumnId: from,
          toColumnId: destination.id,
          toColumnTitle: destination.title,
        },
      })
    }
    return { task }
  })
}

/**
 * archive_task: the card leaves the board document (its claim entry with it) and its
 * whole record goes to `archived_tasks`, in one transaction. Idempotent: archiving again
 * returns the original archivedAt. Claim locked.
 */
export async function archive_task(
  ctx: ActionContext,
  input: ActionInput<'archive_task'>,
): Promise<ActionResults['archive_task']> {
  const { taskId } = input
  return ctx.writeBoard(async (w) => {
    const view = new BoardView(w.doc)
    const onBoard = view.storedTask(taskId)
    const archived = onBoard ? undefined : await lockArchived(w, ctx.orgId, taskId)
    if (!onBoard && !archived) throw notFound(`No card with taskId ${taskId} in this organisation`)
    if (!onBoard) return { taskId, archivedAt: archived?.archivedAt ?? w.now }
    archive(w, { ...onBoard, archivedAt: w.now, updatedAt: w.now })
    return { taskId, archivedAt: w.now }
  })
}

/** Takes a card off the board into history (see archive_task). */
export function archive(w: WriteScope, task: StoredTask): void {
  const description = descriptionOf(w.doc, task.id)
  w.mutate((doc) => {
    const maps = boardMaps(doc)
    maps.tasks.delete(task.id)
    if (maps.claims.has(task.id)) maps.claims.delete(task.id)
  })
  w.row({ t: 'archived', id: task.id, rec: archivedRow(task) })
  w.row(archivedTextOp(task, description))
  w.changed('task', task.id)
}

/** A new card document's first update: its description. */
export function firstDescription(text: string): Uint8Array {
  const doc = new Y.Doc()
  cardMaps(doc).description.insert(0, text)
  const update = Y.encodeStateAsUpdate(doc)
  doc.destroy()
  return update
}

/**
 * A description this write changes, told to the cache cards are presented from at once
 * (the write's own answer presents it) and taken back if the write fails.
 */
function tellDescription(ctx: ActionContext, w: WriteScope, taskId: string, text: string): void {
  const before = ctx.descriptions.get(ctx.orgId, taskId)
  ctx.descriptions.set(ctx.orgId, taskId, text)
  w.onFailure(() => ctx.descriptions.set(ctx.orgId, taskId, before))
}
