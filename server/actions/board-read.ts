import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { LIMITS } from '../../shared/constants.ts'
import type { Attachment, Comment, Task, TaskSummary } from '../../shared/records.ts'
import type { ActionContext } from '../agent/context.ts'
import { badRequest } from '../api-error.ts'
import { attachmentLinker, screenshotImages } from '../files/attachments.ts'

/** whoami: the organisation, the key and how much is on the board. */
export async function whoami(ctx: ActionContext): Promise<ActionResults['whoami']> {
  const board = await ctx.readBoard((view) => {
    const tasks = view.storedTasks()
    const archived = tasks.filter((t) => t.archivedAt).length
    return {
      columns: view.columns.size,
      tasks: tasks.length - archived,
      archivedTasks: archived,
      projects: view.projects.size,
      comments: view.maps.comments.size,
    }
  })
  const { key } = ctx
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

function newestFirst<T extends { createdAt: string; id: string }>(a: T, b: T): number {
  return b.createdAt.localeCompare(a.createdAt) || b.id.localeCompare(a.id)
}

/**
 * get_board. Scope first (projectId), then `tags` from the scope, then the narrowing
 * filters (columnId, tag, priority, lastCommentBy), which all combine.
 */
export async function get_board(
  ctx: ActionContext,
  input: ActionInput<'get_board'>,
): Promise<ActionResults['get_board']> {
  const link = await attachmentLinker(ctx.db, ctx.config, ctx.key.orgId)
  return ctx.readBoard((view) => {
    let scope = view.storedTasks().filter((t) => t.archivedAt === null)
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
    const columnOrder = new Map(view.sortedColumns().map((c, i) => [c.id, i]))
    tasks.sort(
      (a, b) =>
        (columnOrder.get(a.columnId) ?? 1e9) - (columnOrder.get(b.columnId) ?? 1e9) ||
        a.position - b.position ||
        a.id.localeCompare(b.id),
    )
    let presented = tasks.map((t) => view.present(t))
    if (input.lastCommentBy !== undefined) {
      const who = input.lastCommentBy
      presented = presented.filter((t) => t.lastCommentBy === who)
    }

    const include = new Set(input.include ?? [])
    const returned = new Set(presented.map((t) => t.id))
    let comments: Comment[] | undefined
    if (include.has('comments')) {
      const perCard = input.commentsPerCard ?? LIMITS.commentsPerCard.default
      const taken = new Map<string, number>()
      comments = []
      const newest = view.storedComments().sort(newestFirst).slice(0, LIMITS.includeComments)
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
    if (include.has('attachments')) {
      attachments = view
        .storedAttachments()
        .sort(newestFirst)
        .slice(0, LIMITS.includeAttachments)
        .filter((a) => returned.has(a.taskId))
        .map(link)
    }

    const out: ActionResults['get_board'] = {
      columns,
      tasks: input.summary ? presented.map((t) => summaryOf(t)) : presented,
      activity: view.activity(),
      tags,
    }
    if (comments) out.comments = comments
    if (attachments) out.attachments = attachments
    return out
  })
}

function summaryOf(t: Task): TaskSummary {
  const s: TaskSummary = {
    id: t.id,
    columnId: t.columnId,
    projectId: t.projectId,
    title: t.title,
    type: t.type,
    priority: t.priority,
    tags: t.tags,
    assigneeIds: t.assigneeIds,
    commentCount: t.commentCount,
    imageCount: t.imageCount,
    lastCommentBy: t.lastCommentBy,
    lastCommentAt: t.lastCommentAt,
    updatedAt: t.updatedAt,
    claimedBy: t.claim?.isLive ? t.claim.holder : null,
  }
  if (t.commentsTruncated !== undefined) s.commentsTruncated = t.commentsTruncated
  return s
}

/** get_task: one card in full with its whole thread, oldest comment first. Archived cards too. */
export async function get_task(
  ctx: ActionContext,
  input: ActionInput<'get_task'>,
): Promise<ActionResults['get_task']> {
  const found = await ctx.readBoard((view) => {
    const task = view.present(view.requireTask(input.taskId))
    const comments = view
      .storedComments()
      .filter((c) => c.taskId === input.taskId)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
    const attachments = view
      .storedAttachments()
      .filter((a) => a.taskId === input.taskId)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
    return { task, comments, attachments }
  })
  const assignees =
    found.task.assigneeIds.length === 0
      ? []
      : await ctx.db.query<{ id: string; name: string; email: string }>(
          `select u.id, u.name, u.email from users u join memberships m on m.user_id = u.id
            where m.org_id = $1 and u.id = any($2::uuid[]) order by u.name`,
          [ctx.key.orgId, found.task.assigneeIds],
        )
  return {
    task: found.task,
    claim: found.task.claim,
    assignees: assignees.map((a) => ({ id: a.id, name: a.name, email: a.email })),
    comments: found.comments,
    attachments: found.attachments.map(await attachmentLinker(ctx.db, ctx.config, ctx.key.orgId)),
    images: await screenshotImages(ctx.db, ctx.key.orgId, found.attachments),
  }
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
