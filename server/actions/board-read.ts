import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import type { StoredTask } from '../../shared/board-doc.ts'
import type { StoredAttachment, StoredComment } from '../../shared/card-doc.ts'
import { LIMITS } from '../../shared/constants.ts'
import type { Attachment, ClaimRecord, Comment, Task, TaskSummary } from '../../shared/records.ts'
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
import { currentCursor } from '../changes/feed.ts'
import { badRequest, notFound } from '../errors.ts'
import { attachmentLinker, screenshotImages } from '../files/attachments.ts'
import { prepareJson, prepareObject } from '../http/prepared-json.ts'
import {
  answerLength,
  decodeCursor,
  encodeCursor,
  fits,
  fittingCount,
  jsonLength,
  listPage,
  pageNote,
  roomFor,
} from './answer-budget.ts'
import type { ActionContext } from './context.ts'

/** whoami: the organisation, the key and how much is on the board. */
export async function whoami(ctx: ActionContext): Promise<ActionResults['whoami']> {
  const board = await ctx.readBoard(
    (view) => ({
      columns: view.columns.size,
      tasks: view.maps.tasks.size,
      projects: view.projects.size,
    }),
    { descriptions: false },
  )
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
 * With `limit` or `cursor`, or under an answer budget, it answers pages (boardPage).
 */
export async function get_board(
  ctx: ActionContext,
  input: ActionInput<'get_board'>,
): Promise<ActionResults['get_board']> {
  if (input.limit !== undefined || input.cursor !== undefined || ctx.budget !== undefined) {
    return boardPage(ctx, input)
  }
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
  // The summary form shows no description: it waits for none.
  const reading = input.summary ? ({ descriptions: false } as const) : undefined
  if (include.size === 0) {
    // Without `include` the answer follows the board document alone (and the clock, for
    // leases): kept, serialized, until either moves (board/answer-cache.ts).
    const board = await ctx.readBoard(
      (view) =>
        boardAnswer(view.doc, filterKey(input), view.now, () => {
          const { columns, tags, cards } = boardCards(view, input)
          const presented = cards.map((c) => c.task)
          const tasks = input.summary ? presented.map((t) => summaryOf(t)) : presented
          return { columns, tags, tasks: prepareJson(tasks, JSON.stringify(tasks)) }
        }),
      reading,
    )
    const [claims] = await history
    return prepareObject<ActionResults['get_board']>({
      columns: board.columns,
      tasks: board.tasks,
      activity: claims,
      tags: board.tags,
    })
  }
  const board = await ctx.readBoard((view) => boardCards(view, input), reading)
  const [claims, newest, screenshots, link] = await history
  const presented = board.cards.map((c) => c.task)
  const extra = includedOf(input, presented, newest, screenshots, link)
  return prepareObject<ActionResults['get_board']>({
    columns: board.columns,
    tasks: input.summary ? presented.map((t) => summaryOf(t)) : presented,
    activity: claims,
    tags: board.tags,
    comments: extra.comments,
    attachments: extra.attachments,
  })
}

/** What makes two get_board answers the same board read (the cache key, a cursor's query). */
function filterKey(input: ActionInput<'get_board'>): string {
  return JSON.stringify([
    input.projectId,
    input.columnId,
    input.tag?.trim().toLowerCase(),
    input.priority,
    input.lastCommentBy,
    input.blocked,
    input.summary === true,
  ])
}

/**
 * With include: each returned card's newest comments (commentsPerCard, from the
 * organisation's newest 500) and screenshots (from the newest 250), setting each card's
 * commentsTruncated.
 */
function includedOf(
  input: ActionInput<'get_board'>,
  presented: Task[],
  newest: StoredComment[] | undefined,
  screenshots: StoredAttachment[] | undefined,
  link: ((a: StoredAttachment) => Attachment) | undefined,
): { comments?: Comment[]; attachments?: Attachment[] } {
  const returned = new Set(presented.map((t) => t.id))
  const out: { comments?: Comment[]; attachments?: Attachment[] } = {}
  if (newest) {
    const perCard = input.commentsPerCard ?? LIMITS.commentsPerCard.default
    const taken = new Map<string, number>()
    const comments: Comment[] = []
    for (const c of newest) {
      if (!returned.has(c.taskId)) continue
      const n = taken.get(c.taskId) ?? 0
      if (n >= perCard) continue
      taken.set(c.taskId, n + 1)
      comments.push(c)
    }
    for (const t of presented) t.commentsTruncated = t.commentCount > (taken.get(t.id) ?? 0)
    out.comments = comments
  }
  if (screenshots && link) {
    out.attachments = screenshots.filter((a) => returned.has(a.taskId)).map(link)
  }
  return out
}

/** Where a card sits in board order: its column's position and id, its position, its id. */
type BoardKey = [number, string, number, string]

function compareKeys(a: BoardKey, b: BoardKey): number {
  return (
    a[0] - b[0] ||
    (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0) ||
    a[2] - b[2] ||
    (a[3] < b[3] ? -1 : a[3] > b[3] ? 1 : 0)
  )
}

function isBoardKey(v: unknown[]): v is BoardKey {
  return (
    v.length === 4 &&
    typeof v[0] === 'number' &&
    typeof v[1] === 'string' &&
    typeof v[2] === 'number' &&
    typeof v[3] === 'string'
  )
}

/** The cards after `after`, in board order (binary search: the cards are sorted by key). */
function cardsAfter<T extends { key: BoardKey }>(cards: readonly T[], after: BoardKey): T[] {
  let lo = 0
  let hi = cards.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (compareKeys((cards[mid] as T).key, after) <= 0) lo = mid + 1
    else hi = mid
  }
  return cards.slice(lo)
}

/**
 * get_board in pages: cards in board order (column position, card position, id) after the
 * cursor's card, at most `limit`, and under a budget as many as fit. A walk through the
 * pages gives every card that stayed put exactly once; the first page carries `activity`,
 * `tags` and a get_changes cursor taken before the board was read, to catch what moved
 * meanwhile. A card is never cut in two.
 */
async function boardPage(
  ctx: ActionContext,
  input: ActionInput<'get_board'>,
): Promise<ActionResults['get_board']> {
  const orgId = ctx.orgId
  const include = new Set(input.include ?? [])
  const query = [filterKey(input), [...include].sort(), input.commentsPerCard]
  const decoded = input.cursor === undefined ? undefined : decodeCursor(input.cursor, query)
  if (decoded !== undefined && !isBoardKey(decoded)) {
    throw badRequest('cursor must be the nextCursor of a previous page, sent unchanged')
  }
  const first = decoded === undefined
  const now = ctx.clock.now()
  const changesCursor = first ? await currentCursor(ctx.db) : undefined
  const history = Promise.all([
    first ? activity(ctx.db, orgId, now) : undefined,
    include.has('comments') ? newestComments(ctx.db, orgId, LIMITS.includeComments) : undefined,
    include.has('attachments')
      ? newestAttachments(ctx.db, orgId, LIMITS.includeAttachments)
      : undefined,
    include.has('attachments') ? attachmentLinker(ctx.db, ctx.config, orgId) : undefined,
  ])
  history.catch(() => {})
  const board = await ctx.readBoard(
    (view) =>
      boardAnswer(view.doc, `paged:${filterKey(input)}`, view.now, () => boardCards(view, input)),
    input.summary ? { descriptions: false } : undefined,
  )
  const [claims, newest, screenshots, link] = await history
  const rest = decoded === undefined ? board.cards : cardsAfter(board.cards, decoded)
  const limited = rest.slice(0, input.limit ?? rest.length)
  const form = (t: Task): Task | TaskSummary => (input.summary ? summaryOf(t) : t)
  // Copies: the cached cards are shared, and include sets commentsTruncated on its own.
  const tasks = limited.map((c) => ({ ...c.task }))
  const extra = includedOf(input, tasks, newest, screenshots, link)
  const answer: ActionResults['get_board'] = {
    columns: board.columns,
    tasks: tasks.map(form) as ActionResults['get_board']['tasks'],
    ...(claims ? { activity: claims.value, tags: board.tags } : {}),
    ...extra,
    nextCursor: null,
    ...(changesCursor ? { changesCursor } : {}),
  }
  let shown = tasks.length
  const budget = ctx.budget
  if (budget && !fits(budget, answer)) {
    if (answer.activity && jsonLength(answer.activity) > budget.chars / 3) {
      answer.activity = liveFirst(answer.activity, budget.chars / 3)
      answer.activityTruncated = true
    }
    const perCard = (t: Task) =>
      jsonLength(form(t)) +
      jsonLength(extra.comments?.filter((c) => c.taskId === t.id)) +
      jsonLength(extra.attachments?.filter((a) => a.taskId === t.id))
    const room = roomFor(budget, { ...answer, tasks: [], comments: [], attachments: [] })
    shown = fittingCount(tasks, room, perCard)
    const kept = new Set(tasks.slice(0, shown).map((t) => t.id))
    answer.tasks = tasks.slice(0, shown).map(form) as ActionResults['get_board']['tasks']
    if (answer.comments) answer.comments = answer.comments.filter((c) => kept.has(c.taskId))
    if (answer.attachments)
      answer.attachments = answer.attachments.filter((a) => kept.has(a.taskId))
  }
  const last = limited[shown - 1]
  if (last && shown < rest.length) answer.nextCursor = encodeCursor(query, last.key)
  if (shown < limited.length || answer.activityTruncated) {
    const from = board.cards.length - rest.length + 1
    answer.note =
      `${shown < limited.length ? `Cards ${from}–${from + shown - 1} of ${board.cards.length} fit the answer budget: call get_board with this nextCursor for the next page, or` : 'To read less,'} narrow with summary:true, columnId, tag, priority, projectId, or find cards with search_tasks.` +
      (answer.activityTruncated
        ? ' activity was cut to fit: live claims first, then the most recent.'
        : '')
  }
  return answer
}

/** Claim records that fit in `chars`: live ones first, then the most recently changed. */
function liveFirst(records: readonly ClaimRecord[], chars: number): ClaimRecord[] {
  const ordered = [...records.filter((r) => r.isLive), ...records.filter((r) => !r.isLive)]
  return ordered.slice(0, fittingCount(ordered, chars, jsonLength, 0))
}

/** get_board's columns, tags and cards (presented, in board order, with their keys). */
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
  // Sorted by key, each card's column looked up once rather than at every comparison. A
  // card whose column is gone sorts last (it cannot stay so: delete_column moves cards).
  const cards = tasks.map((t) => {
    const column = view.columns.get(t.columnId)
    const key: BoardKey = [column?.position ?? Number.MAX_VALUE, t.columnId, t.position, t.id]
    return { t, key }
  })
  cards.sort((a, b) => compareKeys(a.key, b.key))
  return { columns, tags, cards: cards.map(({ t, key }) => ({ task: view.present(t), key })) }
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
  const answer: ActionResults['get_task'] = {
    task,
    claim: task.claim,
    assignees: assignees.map((a) => ({ id: a.id, name: a.name, email: a.email })),
    comments: comments satisfies StoredComment[],
    attachments: attachments.map(link),
    images: await screenshotImages(ctx.db, orgId, attachments),
  }
  if (input.commentsBefore === undefined && fits(ctx.budget, answer)) {
    return answer
  }
  return commentsPage(ctx, answer, input)
}

/**
 * get_task's thread in pages, oldest first: the comments before `commentsBefore` (all of
 * them, or under a budget the newest that fit), `commentsTruncated` when older ones were
 * left out and `commentsBefore` to ask for them.
 */
function commentsPage(
  ctx: ActionContext,
  answer: ActionResults['get_task'],
  input: ActionInput<'get_task'>,
): ActionResults['get_task'] {
  const query = ['comments', input.taskId]
  let older = answer.comments
  if (input.commentsBefore !== undefined) {
    const at = decodeCursor(input.commentsBefore, query, 'commentsBefore')
    const [createdAt, id] = at
    if (at.length !== 2 || typeof createdAt !== 'string' || typeof id !== 'string') {
      throw badRequest('commentsBefore must be the commentsBefore of an answer, sent unchanged')
    }
    older = older.filter((c) => c.createdAt < createdAt || (c.createdAt === createdAt && c.id < id))
  }
  let page = older
  if (ctx.budget) {
    const rest = answerLength({ ...answer, comments: [], commentsBefore: 'x'.repeat(80) })
    const room = roomFor(ctx.budget, undefined) - rest
    const newestFirst = [...older].reverse()
    page = newestFirst.slice(0, fittingCount(newestFirst, room, jsonLength, 0)).reverse()
  }
  const oldest = page[0]
  const truncated = page.length < older.length
  const out: ActionResults['get_task'] = {
    ...answer,
    comments: page,
    commentsTruncated: truncated,
    commentsBefore: truncated && oldest ? encodeCursor(query, [oldest.createdAt, oldest.id]) : null,
  }
  if (truncated) {
    out.note = `The newest ${page.length} of ${older.length} comments${input.commentsBefore === undefined ? '' : ' before commentsBefore'} fit the answer budget: call get_task with this commentsBefore for the older ones.`
  }
  return out
}

/** An archived card, presented as the board presents cards (its claim from Postgres), or 404. */
async function archivedTask(ctx: ActionContext, taskId: string, now: number): Promise<Task> {
  const orgId = ctx.orgId
  const [stored, claim] = await Promise.all([
    findArchived(ctx.db, orgId, taskId, ctx.live.pendingArchived(orgId)),
    cardClaim(ctx.db, orgId, taskId, now),
    ctx.descriptions.load(orgId, [taskId]),
  ])
  if (!stored) throw notFound(`No card with taskId ${taskId} in this organisation`)
  return ctx.readBoard((view) => view.present(stored satisfies StoredTask, claim))
}

/** list_columns: board order; with projectId, the project's own columns plus organisation-level ones. */
export async function list_columns(
  ctx: ActionContext,
  input: ActionInput<'list_columns'>,
): Promise<ActionResults['list_columns']> {
  const columns = await ctx.readBoard(
    (view) => {
      const { projectId } = input
      if (projectId !== undefined && !view.projects.has(projectId)) {
        throw badRequest(`projectId ${projectId} is not a project of this organisation`)
      }
      return view
        .sortedColumns()
        .filter((c) => projectId === undefined || c.projectId === projectId || c.projectId === null)
        .map(({ id, title, position, role, projectId: p }) => ({
          id,
          title,
          position,
          role,
          projectId: p,
        }))
    },
    { descriptions: false },
  )
  const page = listPage({
    items: columns,
    query: ['list_columns', input.projectId],
    cursor: input.cursor,
    budget: ctx.budget,
    rest: { columns: [], nextCursor: null },
  })
  return {
    columns: page.items,
    ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
    ...(page.cut ? { note: pageNote(page, 'Columns', 'list_columns') } : {}),
  }
}

/** list_projects: every project, oldest first. */
export async function list_projects(
  ctx: ActionContext,
  input: ActionInput<'list_projects'>,
): Promise<ActionResults['list_projects']> {
  const projects = await ctx.readBoard(
    (view) =>
      [...view.projects.values()].sort(
        (a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id),
      ),
    { descriptions: false },
  )
  const page = listPage({
    items: projects,
    query: 'list_projects',
    cursor: input.cursor,
    budget: ctx.budget,
    rest: { projects: [], nextCursor: null },
  })
  return {
    projects: page.items,
    ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
    ...(page.cut ? { note: pageNote(page, 'Projects', 'list_projects') } : {}),
  }
}
