import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { shownOnCard } from '../../shared/claims.ts'
import { LIMITS } from '../../shared/constants.ts'
import type { Task } from '../../shared/records.ts'
import { archivedByIds, attachmentsByIds, claimsByIds, commentsByIds } from '../board/history.ts'
import { type ChangePage, isoFromMicros, readChangePage, STREAMS } from '../changes/feed.ts'
import { type AnswerBudget, fits, fittingCount, jsonLength, roomFor } from './answer-budget.ts'
import type { ActionContext } from './context.ts'

/**
 * get_changes: the change feed, in the get_board shapes. Read-only. The page of change
 * rows is read while the board document is clean (lane.ts): every change row it can see
 * from this process has already reached the document it presents from. Cards off the
 * board, comments, screenshots and claims are read from their tables.
 *
 * Entities that no longer exist (a card or comment deleted for good, a force-released
 * claim) cannot be shown and are left out, as the specification says.
 */
export async function get_changes(
  ctx: ActionContext,
  input: ActionInput<'get_changes'>,
): Promise<ActionResults['get_changes']> {
  const limit = input.limit ?? LIMITS.changesLimit.default
  const orgId = ctx.orgId
  const now = ctx.clock.now()
  const read = await ctx.readBoard(async (view) => {
    const page = await ctx.db.transaction((tx) => readChangePage(tx, orgId, input.since, limit))
    const taskIds = [...new Set([...page.ids.tasks, ...page.ids.fireTasks])]
    const onBoard = new Map<string, Task>()
    for (const id of taskIds) {
      const t = view.storedTask(id)
      if (t) onBoard.set(id, view.present(t))
    }
    const columns = page.ids.columns.flatMap((id) => {
      const c = view.columns.get(id)
      return c ? [c] : []
    })
    return { page, taskIds, onBoard, columns }
  })
  const { page, taskIds, onBoard } = read
  const offBoard = taskIds.filter((id) => !onBoard.has(id))
  const [archived, archivedClaims, comments, attachments, claims] = await Promise.all([
    archivedByIds(ctx.db, orgId, offBoard, ctx.live.pendingArchived(orgId)),
    claimsByIds(ctx.db, orgId, offBoard, now),
    commentsByIds(ctx.db, orgId, page.ids.comments),
    attachmentsByIds(ctx.db, orgId, page.ids.attachments),
    claimsByIds(ctx.db, orgId, page.ids.claims, now),
    ctx.descriptions.load(orgId, offBoard),
  ])
  const presentedArchived =
    archived.size === 0
      ? new Map<string, Task>()
      : await ctx.readBoard(
          (view) =>
            new Map(
              [...archived].map(([id, t]) => [
                id,
                view.present(t, shownOnCard(archivedClaims.get(id))),
              ]),
            ),
        )
  const pick = <T>(ids: readonly string[], found: Map<string, T>) =>
    ids.flatMap((id) => {
      const v = found.get(id)
      return v ? [v] : []
    })
  const answer: ActionResults['get_changes'] = {
    cursor: page.cursor,
    tasks: taskIds.flatMap((id) => {
      const t = onBoard.get(id) ?? presentedArchived.get(id)
      return t ? [t] : []
    }),
    columns: read.columns,
    comments: pick(page.ids.comments, comments),
    attachments: pick(page.ids.attachments, attachments),
    claims: pick(page.ids.claims, claims),
    truncated: page.truncated,
  }
  return ctx.budget && !fits(ctx.budget, answer) ? fitted(ctx.budget, answer, page) : answer
}

type Lists = Omit<ActionResults['get_changes'], 'cursor' | 'truncated' | 'note'>

/**
 * A page of changes cut to fit a budget, at a moment in time: what changed first before it
 * is kept, the rest left for the next call, whose `since` (the cursor, inclusive) starts
 * there, so nothing is skipped. The changes of one moment (one write) are never split; if
 * they alone do not fit, their cards' descriptions are shortened (descriptionTruncated).
 */
function fitted(
  budget: AnswerBudget,
  answer: ActionResults['get_changes'],
  page: ChangePage,
): ActionResults['get_changes'] {
  const firstAt = new Map<string, number>()
  for (const stream of STREAMS) {
    page.ids[stream.name].forEach((id, i) => {
      const at = page.at[stream.name][i] as number
      const key = `${stream.kind}:${id}`
      firstAt.set(key, Math.min(firstAt.get(key) ?? at, at))
    })
  }
  const entries: { list: keyof Lists; record: { id?: string; taskId?: string }; at: number }[] = []
  const add = (list: keyof Lists, kind: string, records: { id?: string; taskId?: string }[]) => {
    for (const record of records) {
      const id = kind === 'claim' ? record.taskId : record.id
      entries.push({ list, record, at: firstAt.get(`${kind}:${id}`) ?? 0 })
    }
  }
  add('tasks', 'task', answer.tasks)
  add('columns', 'column', answer.columns)
  add('comments', 'comment', answer.comments)
  add('attachments', 'attachment', answer.attachments)
  add('claims', 'claim', answer.claims)
  entries.sort((a, b) => a.at - b.at)
  const room = roomFor(budget, {
    ...answer,
    tasks: [],
    columns: [],
    comments: [],
    attachments: [],
    claims: [],
  })
  const firstMoment = entries[0]?.at
  let cut = fittingCount(entries, room, (e) => jsonLength(e.record), 0)
  // Never inside one moment: back to its start, or, for the first moment, all of it.
  while (cut > 0 && cut < entries.length && entries[cut]?.at === entries[cut - 1]?.at) cut -= 1
  let shorten = false
  if (cut === 0) {
    cut = entries.findIndex((e) => e.at !== firstMoment)
    if (cut === -1) cut = entries.length
    shorten = true
  }
  const kept = entries.slice(0, cut)
  const lists: Lists = { tasks: [], columns: [], comments: [], attachments: [], claims: [] }
  for (const e of kept) (lists[e.list] as unknown[]).push(e.record)
  if (shorten) lists.tasks = shortened(lists.tasks, room - jsonLength({ ...lists, tasks: [] }))
  const next = entries[cut]
  const cursor = next ? isoFromMicros(next.at) : answer.cursor
  return {
    ...answer,
    ...lists,
    cursor,
    truncated: next !== undefined || answer.truncated,
    note: `The changes up to the cursor fit the answer budget (${kept.length} of ${entries.length}): call get_changes again at once with this cursor as since for the rest.`,
  }
}

/** Cards whose descriptions share `room` characters, each cut at most to an equal share. */
function shortened(tasks: Task[], room: number): Task[] {
  const share = Math.max(200, Math.floor(room / Math.max(1, tasks.length)) - 1_000)
  return tasks.map((t) =>
    t.description.length > share
      ? { ...t, description: t.description.slice(0, share), descriptionTruncated: true }
      : t,
  )
}
