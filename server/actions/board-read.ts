import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import type { StoredTask } from '../../shared/board-doc.ts'
import type { StoredComment } from '../../shared/card-doc.ts'
import { LIMITS } from '../../shared/constants.ts'
import type { Attachment, Comment, Task } from '../../shared/records.ts'
import { activity } from '../board/activity.ts'
import { boardAnswer } from '../board/answer-cache.ts'
import { type BoardView, summaryOf } from '../board/board-view.ts'
import {
  attachmentsOfTask,
  cardClaim,
  commentsOfTask,
  findArchived,
  newestAttachments,
  newestComments,
} from '../board/history.ts'
import { badRequest, notFound } from '../errors.ts'
import { attachmentLinker, screenshotImages } from '../files/attachments.ts'
import { prepareJson, prepareObject } from '../http/prepared-json.ts'
import type { ActionContext } from './context.ts'

/** whoami: the organisation, the key and how much is on the board. */
export async function whoami(ctx: ActionContext): Promise<ActionResults['whoami']> {
  const board = await ctx.readBoard((view) => ({
    columns: view.columns.size,
    tasks: view.maps.tasks.size,
    projects: view.projects.size,
  }))
  if (ctx.caller.type !== 'agent') throw new Error('whoami answers for an API key only')
  const { key } = ctx.caller
  return {
    organization: { id: key.orgId, name: key.orgName },
    key: { id: key.id, name: key.name, prefix: key.prefix, createdAt: key.createdAt },
    agent: { email: key.robotEmail, label: ctx.identity.agentName ?? 'An agent' },
    board,
  }
}

/** Every tag in use on these cards, deduplicated case-insensitively (first casing kept), sorted. */
function tagsInUse(tasks: { tags: string[] }[]): string[] {
  const seen = new Map<string, string>()
  for (const t of tasks)
    for (const tag of t.tags) if (!seen.has(tag.toLowerCase())) seen.set(tag.toLowerCase(), tag)
  return [...seen.values()].sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' }))
}

/**
 * get_board. Scope first (projectId), then `tags` from the scope, then the narrowing
 * filters (columnId, tag, priority, lastCommentBy, blocked), which all combine. Cards, columns and
 * each card's counts come from the board document; `activity` and the include caps
 * (the organisation's newest 500 comments and 250 screenshots) from Postgres indexes.
 */
export async function get_board(
  ctx: ActionContext,
  input: ActionInput<'get_board'>,
): Promise<ActionResults['get_board']> {
  const orgId = ctx.orgId
  const include = new Set(input.include ?? [])
  const now = ctx.clock.now()
  // Storage reads start with the board's: none of them waits for the other.
  const history = Promise.all([
    activity(ctx.db, orgId, now),
    include.has('comments') ? newestComments(ctx.db, orgId, LIMITS.includeComments) : undefined,
    include.has('attachments')
      ? newestAttachments(ctx.db, orgId, LIMITS.includeAttachments)
      : undefined,
    include.has('attachments') ? attachmentLinker(ctx.db, ctx.config, orgId) : undefined,
  ])
  history.catch(() => {})
  if (include.size === 0) {
    // Without `include` the answer follows the board document alone (and the clock, for
    // leases): kept, serialized, until either moves (board/board-answers.ts).
    const key = JSON.stringify([
      input.projectId,
      input.columnId,
      input.tag?.trim().toLowerCase(),
      input.priority,
      input.lastCommentBy,
      input.blocked,
      input.summary === true,
    ])
    const board = await ctx.readBoard((view) =>
      boardAnswer(view.doc, key, view.now, () => {
        const { columns, tags, presented } = boardCards(view, input)
        const tasks = input.summary ? presented.map((t) => summaryOf(t)) : presented
        return { columns, tags, tasks: prepareJson(tasks, JSON.stringify(tasks)) }
      }),
    )
    const [claims] = await history
    return prepareObject<ActionResults['get_board']>({
      columns: board.columns,
      tasks: board.tasks,
      activity: claims,
      tags: board.tags,
    })
  }
  const board = await ctx.readBoard((view) => boardCards(view, input))
  const [claims, newest, screenshots, link] = await history
  const { presented } = board
  const returned = new Set(presented.map((t) => t.id))
  let comments: Comment[] | undefined
  if (newest) {
    const perCard = input.commentsPerCard ?? LIMITS.commentsPerCard.default
    const taken = new Map<string, number>()
    comments = []
    for (const c of newest) {
      if (!returned.has(c.taskId)) continue
      const n = taken.get(c.taskId) ?? 0
      if (n >= perCard) continue
      taken.set(c.taskId, n + 1)
      comments.push(c)
    }
    for (const t of presented) t.commentsTruncated = t.commentCount > (taken.get(t.id) ?? 0)
  }
  let attachments: Attachment[] | undefined
  if (screenshots && link) {
    attachments = screenshots.filter((a) => returned.has(a.taskId)).map(link)
  }
  return prepareObject<ActionResults['get_board']>({
    columns: board.columns,
    tasks: input.summary ? presented.map((t) => summaryOf(t)) : presented,
    activity: claims,
    tags: board.tags,
    comments,
    attachments,
  })
}

/** get_board's columns, tags and cards (presented, in board order) for these filters. */
function boardCards(view: BoardView, input: ActionInput<'get_board'>) {
  let scope = view.storedTasks()
  let columns = view.sortedColumns()
  const { projectId } = input
  if (projectId !== undefined) {
    // A project of another organisation is a wrong value (400), like a missing one.
    if (!view.projects.has(projectId))
      throw badRequest(`projectId ${projectId} is not a project of this organisation`)
    scope = scope.filter((t) => t.projectId === projectId)
    const used = new Set(scope.map((t) => t.columnId))
    columns = columns.filter(
      (c) => c.projectId === projectId || c.projectId === null || used.has(c.id),
    )
  }
  const tags = tagsInUse(scope)

  let tasks = scope
  if (input.columnId !== undefined) {
    const columnId = input.columnId
    if (!columns.some((c) => c.id === columnId)) {
      throw badRequest(`columnId ${columnId} is not a column on the board asked about`)
    }
    tasks = tasks.filter((t) => t.columnId === columnId)
  }
  if (input.tag !== undefined) {
    const tag = input.tag.trim().toLowerCase()
    tasks = tasks.filter((t) => t.tags.some((x) => x.toLowerCase() === tag))
  }
  if (input.priority !== undefined) {
    const wanted = input.priority
    tasks = tasks.filter((t) => (view.effectivePriority(t) ?? 'none') === wanted)
  }
  if (input.lastCommentBy !== undefined) {
    const who = input.lastCommentBy
    tasks = tasks.filter((t) => t.stats.lastCommentBy === who)
  }
  if (input.blocked !== undefined) {
    const wanted = input.blocked
    tasks = tasks.filter((t) => view.blocked(t) === wanted)
  }
  const columnOrder = new Map(view.sortedColumns().map((c, i) => [c.id, i]))
  // Sorted by key, each card's column looked up once rather than at every comparison.
  const keyed = tasks.map((t) => ({ t, column: columnOrder.get(t.columnId) ?? 1e9 }))
  keyed.sort(
    (a, b) => a.column - b.column || a.t.position - b.t.position || a.t.id.localeCompare(b.t.id),
  )
  return { columns, tags, presented: keyed.map(({ t }) => view.present(t)) }
}

/**
 * get_task: one card in full with its whole thread, oldest comment first; archived cards
 * too. The card comes from the board document (or, archived, from its row); its thread
 * and screenshots from their per-card indexes.
 */
export async function get_task(
  ctx: ActionContext,
  input: ActionInput<'get_task'>,
): Promise<ActionResults['get_task']> {
  const orgId = ctx.orgId
  const { taskId } = input
  const now = ctx.clock.now()
  const rows = Promise.all([
    commentsOfTask(ctx.db, orgId, taskId),
    attachmentsOfTask(ctx.db, orgId, taskId),
    attachmentLinker(ctx.db, ctx.config, orgId),
  ])
  rows.catch(() => {})
  const onBoard = await ctx.readBoard((view) => {
    const t = view.storedTask(taskId)
    return t ? view.present(t) : undefined
  })
  const task = onBoard ?? (await archivedTask(ctx, taskId, now))
  const [comments, attachments, link] = await rows
  const assignees =
    task.assigneeIds.length === 0
      ? []
      : await ctx.db.query<{ id: string; name: string; email: string }>(
          `select u.id, u.name, u.email from users u join memberships m on m.user_id = u.id
            where m.org_id = $1 and u.id = any($2::uuid[]) order by u.name`,
          [orgId, task.assigneeIds],
        )
  return {
    task,
    claim: task.claim,
    assignees: assignees.map((a) => ({ id: a.id, name: a.name, email: a.email })),
    comments: comments satisfies StoredComment[],
    attachments: attachments.map(link),
    images: await screenshotImages(ctx.db, orgId, attachments),
  }
}

/** An archived card, presented as the board presents cards (its claim from Postgres), or 404. */
async function archivedTask(ctx: ActionContext, taskId: string, now: number): Promise<Task> {
  const orgId = ctx.orgId
  const [stored, claim] = await Promise.all([
    findArchived(ctx.db, orgId, taskId),
    cardClaim(ctx.db, orgId, taskId, now),
  ])
  if (!stored) throw notFound(`No card with taskId ${taskId} in this organisation`)
  return ctx.readBoard((view) => view.present(stored satisfies StoredTask, claim))
}

/** list_columns: board order; with projectId, the project's own columns plus organisation-level ones. */
export async function list_columns(
  ctx: ActionContext,
  input: ActionInput<'list_columns'>,
): Promise<ActionResults['list_columns']> {
  return ctx.readBoard((view) => {
    const { projectId } = input
    if (projectId !== undefined && !view.projects.has(projectId)) {
      throw badRequest(`projectId ${projectId} is not a project of this organisation`)
    }
    return {
      columns: view
        .sortedColumns()
        .filter((c) => projectId === undefined || c.projectId === projectId || c.projectId === null)
        .map(({ id, title, position, role, projectId: p }) => ({
          id,
          title,
          position,
          role,
          projectId: p,
        })),
    }
  })
}

/** list_projects: every project, oldest first. */
export async function list_projects(ctx: ActionContext): Promise<ActionResults['list_projects']> {
  return ctx.readBoard((view) => ({
    projects: [...view.projects.values()].sort(
      (a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id),
    ),
  }))
}
