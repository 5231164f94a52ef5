import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import type { StoredTask } from '../../shared/board-doc.ts'
import { shownOnCard } from '../../shared/claims.ts'
import { LIMITS } from '../../shared/constants.ts'
import { summaryOf } from '../board/board-view.ts'
import { archivedByIds, claimsByIds } from '../board/history.ts'
import { badRequest } from '../errors.ts'
import { encodeCursor, fittingCount, offsetOf, roomFor } from './answer-budget.ts'
import type { ActionContext } from './context.ts'

type Hit = ActionResults['search_tasks']['tasks'][number]
type Match = Hit['match']

/** Words of a query: runs of letters and digits (anything else separates them). */
function wordsOf(query: string): string[] {
  return query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []
}

/**
 * The tsquery of a query: every word, stemmed (English), the last one also as the start of
 * a longer word, as people type. Words are letters and digits only, so quoting is safe.
 */
function tsQueryOf(words: readonly string[], weight: '' | 'A' | 'B' = ''): string {
  return words
    .map((w, i) => (i === words.length - 1 ? `'${w}':*${weight}` : `'${w}':${weight}`))
    .join(' & ')
}

/** Highlights in snippets, as Markdown bold: agents and the app read Markdown. */
const HEADLINE = `'StartSel=**, StopSel=**, MaxWords=24, MinWords=8, MaxFragments=1, FragmentDelimiter=" … "'`

/**
 * search_tasks: the cards whose title, description or comments hold every word, best
 * match first (title above description, both above a match in comments only), through
 * Postgres full-text indexes (task_texts and comments, migrations 018 and 022); then
 * get_board's filters, and pages. Each hit is the card's summary form and where it matched, with a snippet.
 */
export async function search_tasks(
  ctx: ActionContext,
  input: ActionInput<'search_tasks'>,
): Promise<ActionResults['search_tasks']> {
  const words = wordsOf(input.query)
  if (words.length === 0) {
    throw badRequest('query must hold at least one word (letters or digits)')
  }
  const query = tsQueryOf(words)
  const orgId = ctx.orgId
  const includeArchived = input.includeArchived === true
  const pageQuery = [
    'search_tasks',
    input.query,
    input.columnId,
    input.projectId,
    input.tag,
    input.priority,
    includeArchived,
  ]
  const start = input.cursor === undefined ? 0 : offsetOf(input.cursor, pageQuery)
  const limit = input.limit ?? LIMITS.searchPage.default
  const pending = ctx.live.pendingArchived(orgId)
  // The best hits, enough of them to answer this page and say whether another follows; more
  // when the filters leave too few (a broad query matches most of a long history, and only
  // its best are read).
  const wanted = start + limit + 1
  let best = await bestHits(ctx, query, includeArchived, Math.max(wanted, MIN_HITS))
  let hits = await filterHits(ctx, input, best.hits, pending)
  while (hits.length < wanted && !best.complete) {
    best = await bestHits(ctx, query, includeArchived, best.hits.length * 4)
    hits = await filterHits(ctx, input, best.hits, pending)
  }
  const ranked = best.hits
  const page = hits.slice(start, start + limit)
  const unread = page.filter((h) => h.stored === undefined).map((h) => h.id)
  const offBoard = ranked.filter((r) => r.archived && page.some((h) => h.id === r.id))
  const now = ctx.clock.now()
  const [records, archivedClaims] = await Promise.all([
    archivedByIds(ctx.db, orgId, unread, pending),
    claimsByIds(
      ctx.db,
      orgId,
      offBoard.map((r) => r.id),
      now,
    ),
  ])
  const candidates = await ctx.readBoard((view) =>
    page.flatMap(({ id, stored }) => {
      const task = stored ?? records.get(id)
      if (!task) return []
      return [
        view.hasTask(id)
          ? view.present(task)
          : view.present(task, shownOnCard(archivedClaims.get(id))),
      ]
    }),
  )
  const byComment = new Set(ranked.filter((r) => r.byComment).map((r) => r.id))
  const matches = await matchesOf(
    ctx,
    words,
    candidates.map((t) => t.id).filter((id) => !byComment.has(id)),
    candidates.map((t) => t.id).filter((id) => byComment.has(id)),
  )
  let tasks: Hit[] = candidates.map((t) => ({
    ...summaryOf(t),
    archivedAt: t.archivedAt,
    match: matches.get(t.id) ?? { field: 'title', snippet: t.title },
  }))
  const fitting = ctx.budget
    ? fittingCount(tasks, roomFor(ctx.budget, { tasks: [], nextCursor: 'x'.repeat(60) }))
    : tasks.length
  const cut = fitting < tasks.length
  tasks = tasks.slice(0, fitting)
  const end = start + (cut ? tasks.length : page.length)
  return {
    tasks,
    nextCursor: end < hits.length ? encodeCursor(pageQuery, [end]) : null,
    ...(cut
      ? {
          note: `Hits ${start + 1}–${end}${best.complete ? ` of ${hits.length}` : ''} fit the answer budget: call search_tasks with this nextCursor for the next page, or add words or filters to narrow.`,
        }
      : {}),
  }
}

/** The fewest hits ranked at once: a page and a little more (pages ahead come cheaply). */
const MIN_HITS = 50

type Ranked = {
  id: string
  rank: number
  archived: boolean
  /** Matched by its own words (title, description), or by a comment only. */
  byComment: boolean
}

/**
 * The best `k` cards for a tsquery, best first: the cards whose own words (title and
 * description) match, by rank, then id; after them, the cards that match by their comments
 * only, by their best comment's rank. (With Postgres's weights a comment could only rank
 * above a description match in odd cases: A and B weigh 1.0 and 0.4, an unweighted comment
 * 0.1.) So a query that matches k cards' own words reads no comment at all, and each side
 * sorts only what a page needs, never every match of a long history. Without
 * includeArchived it reads only the board's cards and their comments (the partial indexes
 * of migration 022). `complete` when every hit is in `hits`. The tsquery is `materialized`:
 * parsed once, where a prepared statement's generic plan would parse it again for every row
 * it checks.
 */
async function bestHits(
  ctx: ActionContext,
  query: string,
  includeArchived: boolean,
  k: number,
): Promise<{ hits: Ranked[]; complete: boolean }> {
  const onBoard = includeArchived ? '' : 'and not t.archived'
  const commentsOnBoard = includeArchived ? '' : 'and not c.task_archived'
  const own = await ctx.db.query<Ranked>(
    `with q as materialized (select to_tsquery('english', $2) as q)
     select t.id, ts_rank(t.search, q.q) as rank, t.archived, false as "byComment"
       from task_texts t, q
      where t.org_id = $1 and t.search @@ q.q ${onBoard}
      order by rank desc, t.id
      limit $3`,
    [ctx.orgId, query, k],
  )
  if (own.length === k) return { hits: own, complete: false }
  // Every card whose own words match is known: comments rank the rest. A card's first
  // comment in this order is its best; many of one card's comments may come first, so read
  // on until enough new cards are seen, or every comment.
  const known = new Set(own.map((h) => h.id))
  const need = k - own.length
  const hits = [...own]
  for (let rows = Math.max(need * 4, MIN_HITS); ; rows *= 4) {
    const comments = await ctx.db.query<Ranked>(
      `with q as materialized (select to_tsquery('english', $2) as q)
       select c.task_id as id, ts_rank(c.search, q.q) as rank, c.task_archived as archived,
              true as "byComment"
         from comments c, q
        where c.org_id = $1 and c.search @@ q.q ${commentsOnBoard}
        order by rank desc, c.task_id
        limit $3`,
      [ctx.orgId, query, rows],
    )
    const fresh = new Map<string, Ranked>()
    for (const c of comments) if (!known.has(c.id) && !fresh.has(c.id)) fresh.set(c.id, c)
    const complete = comments.length < rows
    if (complete || fresh.size >= need) {
      hits.push(...[...fresh.values()].slice(0, complete ? undefined : need))
      return { hits, complete }
    }
  }
}

/**
 * The hits that pass get_board's filters, on each card as it is now: on the board, or its
 * archived record (read here only when a filter must look at it; else with its page).
 */
async function filterHits(
  ctx: ActionContext,
  input: ActionInput<'search_tasks'>,
  ranked: readonly Ranked[],
  pending: ReturnType<ActionContext['live']['pendingArchived']>,
): Promise<{ id: string; stored: StoredTask | undefined }[]> {
  const includeArchived = input.includeArchived === true
  const filtered =
    input.columnId !== undefined ||
    input.projectId !== undefined ||
    input.tag !== undefined ||
    input.priority !== undefined
  const archived = filtered
    ? await archivedByIds(
        ctx.db,
        ctx.orgId,
        ranked.filter((r) => r.archived).map((r) => r.id),
        pending,
      )
    : new Map<string, StoredTask>()
  return ctx.readBoard((view) => {
    if (input.projectId !== undefined && !view.projects.has(input.projectId)) {
      throw badRequest(`projectId ${input.projectId} is not a project of this organisation`)
    }
    if (input.columnId !== undefined && !view.columns.has(input.columnId)) {
      throw badRequest(`columnId ${input.columnId} is not a column of this organisation`)
    }
    const tag = input.tag?.trim().toLowerCase()
    const out: { id: string; stored: StoredTask | undefined }[] = []
    for (const r of ranked) {
      const stored: StoredTask | undefined = view.storedTask(r.id) ?? archived.get(r.id)
      if (!stored) {
        // Read with its page, if it is on the one shown.
        if (!filtered && includeArchived && r.archived) out.push({ id: r.id, stored: undefined })
        continue
      }
      if (!includeArchived && stored.archivedAt !== null) continue
      if (input.columnId !== undefined && stored.columnId !== input.columnId) continue
      if (input.projectId !== undefined && stored.projectId !== input.projectId) continue
      if (tag !== undefined && !stored.tags.some((t) => t.toLowerCase() === tag)) continue
      if (
        input.priority !== undefined &&
        (view.effectivePriority(stored) ?? 'none') !== input.priority
      ) {
        continue
      }
      out.push({ id: r.id, stored })
    }
    return out
  })
}

/**
 * Where each card matched: for the cards matched by their own words, the title, else the
 * description (told apart by the weights of the stored vector, A and B, not by parsing them
 * again; words split between both show in the description); for the cards matched by a
 * comment only, their best comment. Only the snippets shown are made.
 */
async function matchesOf(
  ctx: ActionContext,
  words: readonly string[],
  byWords: readonly string[],
  byComment: readonly string[],
): Promise<Map<string, Match>> {
  const query = tsQueryOf(words)
  const none = Promise.resolve([])
  const [texts, comments] = await Promise.all([
    byWords.length === 0
      ? none
      : ctx.db.query<{ id: string; field: 'title' | 'description'; snippet: string }>(
          `with q as materialized (
             select to_tsquery('english', $3) as q, to_tsquery('english', $4) as title)
           select t.id, f.field,
                  ts_headline('english', case f.field when 'title' then t.title
                                                      else t.description end, q.q, ${HEADLINE})
                    as snippet
             from task_texts t, q,
                  lateral (select case when t.search @@ q.title then 'title'
                                       else 'description' end as field) f
            where t.id = any($1::uuid[]) and t.org_id = $2`,
          [byWords, ctx.orgId, query, tsQueryOf(words, 'A')],
        ),
    byComment.length === 0
      ? none
      : ctx.db.query<{ task_id: string; id: string; snippet: string }>(
          `with q as materialized (select to_tsquery('english', $3) as q)
       select distinct on (c.task_id) c.task_id, c.id,
              ts_headline('english', c.body, q.q, ${HEADLINE}) as snippet
         from comments c, q
        where c.task_id = any($1::uuid[]) and c.org_id = $2 and c.search @@ q.q
        order by c.task_id, ts_rank(c.search, q.q) desc, c.created_at desc`,
          [byComment, ctx.orgId, query],
        ),
  ])
  const out = new Map<string, Match>()
  for (const c of comments) {
    out.set(c.task_id, { field: 'comment', snippet: c.snippet, commentId: c.id })
  }
  for (const t of texts) out.set(t.id, { field: t.field, snippet: t.snippet })
  return out
}
