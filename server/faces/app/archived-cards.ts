import { z } from 'zod'
import { boardMaps, type StoredTask, taskMap } from '../../../shared/board-doc.ts'
import { shownOnCard } from '../../../shared/claims.ts'
import { POSITION_STEP } from '../../../shared/constants.ts'
import { isUuid } from '../../../shared/ids.ts'
import type { Task } from '../../../shared/records.ts'
import { task as taskRecord } from '../../../shared/schemas/outputs.ts'
import { BoardView } from '../../board/board-view.ts'
import { archivedPage, claimsByIds, findArchived, lockArchived } from '../../board/history.ts'
import { assertUnclaimed, storedClaimFromRow } from '../../claims/locks.ts'
import { lockClaim } from '../../claims/store.ts'
import { ApiError, badRequest, conflict } from '../../errors.ts'
import { answer } from '../../http/route-docs.ts'
import { type AppRouter, pathId, queryOf } from './route.ts'

/** The Archived view's page size: default and most. */
const ARCHIVED_PAGE = { default: 50, max: 200 }

const withTask = z.strictObject({ task: taskRecord })
const archivedTasks = z.strictObject({
  tasks: z.array(taskRecord),
  nextBefore: z.string().nullable(),
})

/**
 * The Archived view: archived cards a page at a time, one archived card, and putting one
 * back on the board (people only; agents read archived cards with get_task).
 */
export function archivedCardRoutes(app: AppRouter): void {
  const { db, clock } = app.deps

  /**
   * The Archived view: archived cards, newest archive first, in the get_task task shape,
   * a page at a time (`limit` 1–200, default 50; `before` is the previous page's
   * `nextBefore`, null after the last page).
   */
  app.org(
    'GET',
    '/archived-tasks',
    {
      summary: 'Archived cards, newest archive first, a page at a time',
      description:
        "In the get_task task shape; a card's claim is its working or lapsed claim, null when released or none.",
      access: 'member',
      query: {
        limit: {
          description: 'Cards per page.',
          schema: {
            type: 'integer',
            minimum: 1,
            maximum: ARCHIVED_PAGE.max,
            default: ARCHIVED_PAGE.default,
          },
        },
        before: {
          description: "The previous page's nextBefore.",
          schema: { type: 'string' },
        },
      },
      answers: [answer.json(200, 'nextBefore is null after the last page.', archivedTasks)],
      errors: {
        400: `limit is not an integer from 1 to ${ARCHIVED_PAGE.max}, or before is not a nextBefore.`,
      },
    },
    async (req, { user, org }) => {
      const query = queryOf(req)
      const limit = pageLimit(query.get('limit'))
      const before = pageCursor(query.get('before'))
      const page = await archivedPage(db, org.id, limit + 1, before)
      const shown = page.slice(0, limit)
      const ids = shown.map((t) => t.id)
      const [claims] = await Promise.all([
        claimsByIds(db, org.id, ids, clock.now()),
        app.deps.descriptions.load(org.id, ids),
      ])
      const tasks = await app
        .context({ user, org })
        .readBoard((view) => shown.map((t): Task => view.present(t, shownOnCard(claims.get(t.id)))))
      const lastShown = shown.at(-1)
      const nextBefore =
        page.length > limit && lastShown
          ? Buffer.from(JSON.stringify([lastShown.archivedAt, lastShown.id])).toString('base64url')
          : null
      return { status: 200, body: { tasks, nextBefore } }
    },
  )

  /**
   * One archived card, in the same shape: what the app shows of a card off the board that
   * another names (a blocker archived meanwhile).
   */
  app.org(
    'GET',
    '/archived-tasks/:taskId',
    {
      summary: 'One archived card',
      description:
        'In the get_task task shape, as the Archived view lists it. A card on the board is not archived: it is in the board document.',
      access: 'member',
      answers: [answer.json(200, 'The archived card.', withTask)],
      errors: {
        400: 'taskId is not a UUID.',
        404: 'No archived card of this organisation has that id (on the board, deleted, or never).',
      },
    },
    async (_req, { user, org, params: p }) => {
      const taskId = pathId(p, 'taskId')
      const stored = await findArchived(db, org.id, taskId, app.deps.live.pendingArchived(org.id))
      if (!stored)
        throw new ApiError(404, `No archived card with taskId ${taskId} in this organisation`)
      await app.deps.descriptions.load(org.id, [taskId])
      const claims = await claimsByIds(db, org.id, [taskId], clock.now())
      const task = await app
        .context({ user, org })
        .readBoard((view) => view.present(stored, shownOnCard(claims.get(taskId))))
      return { status: 200, body: { task } }
    },
  )

  /**
   * Puts an archived card back on the board: in its column, or the first column of its
   * project (or of the organisation) when that column is gone; archivedAt null; appended
   * at the bottom; its claim (if any) shown on the board again. Claim locked: a card an
   * agent holds stays where it is (409 + holder). Not archived: 409.
   */
  app.org(
    'POST',
    '/tasks/:taskId/restore',
    {
      summary: 'Put an archived card back on the board',
      description:
        'In its column, or when that column is gone the first column of its project, else the first organisation-level column, else the first column; appended at the bottom; its claim shown on the board again.',
      access: 'member',
      answers: [answer.json(200, 'The card, archivedAt null.', withTask)],
      claimLocked: true,
      errors: {
        400: 'taskId is not a UUID.',
        404: 'The card is neither archived nor on the board.',
        409: 'The card is on the board, or the board has no column.',
      },
    },
    async (_req, { user, org, params: p }) => {
      const taskId = pathId(p, 'taskId')
      const task = await app.context({ user, org }).writeBoard(async (w): Promise<Task> => {
        const view = new BoardView(w.doc, clock.now())
        if (view.hasTask(taskId)) throw conflict(`Card ${taskId} is on the board, not archived`)
        const archived = await lockArchived(w, org.id, taskId)
        if (!archived) throw new ApiError(404, `No card with taskId ${taskId} in this organisation`)
        await app.deps.descriptions.load(org.id, [taskId], w.tx)
        await assertUnclaimed(w.tx, org.id, [taskId], clock.now())
        const columnId = restoreColumn(view, archived)
        if (!columnId) throw conflict('The board has no column to restore the card into')
        const claim = await lockClaim(w.tx, taskId)
        const restored: StoredTask = {
          ...archived,
          columnId,
          position: view.appendPosition(columnId, POSITION_STEP),
          archivedAt: null,
          updatedAt: w.now,
        }
        w.mutate((doc) => {
          const maps = boardMaps(doc)
          maps.tasks.set(taskId, taskMap(restored))
          if (claim) maps.claims.set(taskId, storedClaimFromRow(claim, clock.now()))
        })
        w.row({ t: 'archived', id: taskId, rec: null })
        w.changed('task', taskId)
        const after = new BoardView(w.doc, clock.now())
        return after.present(after.requireTask(taskId))
      })
      return { status: 200, body: { task } }
    },
  )
}

/** Where a restored card goes: its column, else the first of its project's, else the organisation's. */
function restoreColumn(view: BoardView, task: StoredTask): string | undefined {
  if (view.columns.has(task.columnId)) return task.columnId
  const columns = view.sortedColumns()
  const own = task.projectId ? columns.find((c) => c.projectId === task.projectId) : undefined
  return (own ?? columns.find((c) => c.projectId === null) ?? columns[0])?.id
}

function pageLimit(raw: string | null): number {
  if (raw === null || raw === '') return ARCHIVED_PAGE.default
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 1 || n > ARCHIVED_PAGE.max) {
    throw badRequest(`limit must be an integer from 1 to ${ARCHIVED_PAGE.max}`)
  }
  return n
}

function pageCursor(raw: string | null): { archivedAt: string; id: string } | undefined {
  if (raw === null || raw === '') return undefined
  try {
    const v: unknown = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'))
    if (
      Array.isArray(v) &&
      v.length === 2 &&
      typeof v[0] === 'string' &&
      !Number.isNaN(Date.parse(v[0])) &&
      typeof v[1] === 'string' &&
      isUuid(v[1])
    ) {
      return { archivedAt: v[0], id: v[1] }
    }
  } catch {}
  throw badRequest('before must be the nextBefore of a previous page')
}
