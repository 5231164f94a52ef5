import type { IncomingMessage } from 'node:http'
import { z } from 'zod'
import type { Db } from '../../../persistence/types.ts'
import { boardMaps, readColumn, type StoredTask, taskMap } from '../../../shared/board-doc.ts'
import { shownOnCard } from '../../../shared/claims.ts'
import { POSITION_STEP } from '../../../shared/constants.ts'
import { cardDocName } from '../../../shared/doc-names.ts'
import { effectivePriority } from '../../../shared/priority.ts'
import type { Column, Task } from '../../../shared/records.ts'
import * as body from '../../../shared/schemas/app.ts'
import { column as columnRecord, task as taskRecord } from '../../../shared/schemas/outputs.ts'
import { strings } from '../../../shared/ymap-fields.ts'
import { editCard } from '../../actions/tasks.ts'
import { parseParams } from '../../actions/validation.ts'
import type { OrgMembership, User } from '../../auth/accounts.ts'
import { requireMember, requireUser } from '../../auth/session.ts'
import { BoardView } from '../../board/board-view.ts'
import {
  archivedInColumn,
  archivedPage,
  claimsByIds,
  findArchived,
  lockArchived,
  requireCard,
} from '../../board/history.ts'
import { recordFireChanges } from '../../changes/feed.ts'
import { assertUnclaimed, storedClaimFromRow } from '../../claims/locks.ts'
import { deleteClaim, lockClaim } from '../../claims/store.ts'
import type { Clock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import { ApiError, badRequest, conflict } from '../../errors.ts'
import { fileStore } from '../../files/store.ts'
import { readJson, sendEmpty, sendJson } from '../../http/json.ts'
import { answer, type RouteDoc } from '../../http/route-docs.ts'
import type { Params, Router } from '../../http/router.ts'
import { deleteDoc } from '../../live/doc-store.ts'
import type { LiveDocs, WriteScope } from '../../live/live-docs.ts'
import { pathId } from './path-id.ts'
import { personContext } from './person-context.ts'

export interface PeopleActionDeps {
  db: Db
  live: LiveDocs
  config: Config
  clock?: Clock
}

/** The Archived view's page size: default and most. */
const ARCHIVED_PAGE = { default: 50, max: 200 }

/** Answers of the routes below: records of shared/schemas/outputs.ts, wrapped as sent. */
const withTask = z.strictObject({ task: taskRecord })
const withColumn = z.strictObject({ column: columnRecord })
const archivedTasks = z.strictObject({
  tasks: z.array(taskRecord),
  nextBefore: z.string().nullable(),
})

/**
 * What people do to the board in the app and agents cannot (docs/design.md, Contract 2): take
 * back a claim, delete a card, remove a card's project, set a column's role or fire, list
 * archived cards and put one back on the board. Each is one write with a `person` origin,
 * committed in one transaction with its claim rows, history rows and change rows. Members
 * of the organisation only (404 for anyone else); force release needs owner or admin (403
 * otherwise).
 */
export function peopleActionRoutes(router: Router, deps: PeopleActionDeps): void {
  const { db, live } = deps

  type Handler = (
    req: IncomingMessage,
    user: User,
    org: OrgMembership,
    params: Params,
  ) => Promise<{ status: number; body?: unknown }>

  /** Who may call it is the declared access, so the document and the check cannot differ. */
  const on = (
    method: string,
    path: string,
    doc: RouteDoc & { access: 'member' | 'owner-admin' },
    handler: Handler,
  ) =>
    router.on(method, `/api/app${path}`, doc, async (req, res, params) => {
      const user = await requireUser(db, req)
      const org = await requireMember(
        db,
        params.orgId ?? '',
        user,
        doc.access === 'owner-admin' ? ['owner', 'admin'] : undefined,
      )
      const out = await handler(req, user, org, params)
      if (out.body === undefined) sendEmpty(res, out.status)
      else sendJson(res, out.status, out.body)
    })

  const write = <T>(user: User, org: OrgMembership, fn: (w: WriteScope) => Promise<T>) =>
    personContext(deps, user, org).writeBoard(fn)
  const now = () => (deps.clock ?? { now: Date.now }).now()

  /**
   * Force release (owner or admin): deletes the card's claim record whatever its state, so
   * the card is free and leaves `activity`. `released` says whether there was a record.
   * Leaves no trace in the change feed, as the specification says.
   */
  on(
    'POST',
    '/orgs/:orgId/tasks/:taskId/force-release',
    {
      summary: "Force release: delete the card's claim record, whatever its state",
      description: 'The card is free and leaves activity; nothing in the change feed.',
      access: 'owner-admin',
      answers: [
        answer.json(
          200,
          'released says whether there was a claim record.',
          z.strictObject({ released: z.boolean() }),
        ),
      ],
      errors: { 400: 'taskId is not a UUID.', 404: 'No such card.' },
    },
    async (_req, user, org, p) => {
      const taskId = pathId(p, 'taskId')
      const released = await write(user, org, async (w) => {
        await requireCard(w.tx, new BoardView(w.doc), org.id, taskId)
        const deleted = await deleteClaim(w.tx, taskId)
        if (boardMaps(w.doc).claims.has(taskId)) {
          w.mutate((doc) => boardMaps(doc).claims.delete(taskId))
        }
        return deleted
      })
      return { status: 200, body: { released } }
    },
  )

  /**
   * Deletes a card for good, on the board or archived, with its comments, its screenshots
   * (entries and stored files), its own document and its claim, whoever holds it. A
   * permanent delete leaves no timestamp, so get_changes cannot show it. The cards that
   * waited for it no longer do (it leaves their `blockedBy`: an id that names no card could
   * not be sent back to set_task_dependencies); they are changes of their own.
   */
  on(
    'DELETE',
    '/orgs/:orgId/tasks/:taskId',
    {
      summary: 'Delete a card for good, on the board or archived',
      description:
        'With its comments, its screenshots (entries and files), its card document and its claim, whoever holds it. Open copies of the card document close.',
      access: 'member',
      answers: [answer.noContent('The card is gone.')],
      errors: { 400: 'taskId is not a UUID.', 404: 'No such card.' },
    },
    async (_req, user, org, p) => {
      const taskId = pathId(p, 'taskId')
      const docName = cardDocName(org.id, taskId)
      await write(user, org, async (w) => {
        const { onBoard } = await requireCard(w.tx, new BoardView(w.doc), org.id, taskId)
        const screenshots = await w.tx.query<{ id: string }>(
          'delete from attachments where task_id = $1 and org_id = $2 returning id',
          [taskId, org.id],
        )
        const store = fileStore(db)
        // Same lock as compaction, so a compaction in flight cannot write a snapshot back.
        await w.tx.query('select pg_advisory_xact_lock(hashtext($1))', [docName])
        live.forgetDocument(docName)
        await Promise.all([
          deleteClaim(w.tx, taskId),
          w.tx.query('delete from comments where task_id = $1 and org_id = $2', [taskId, org.id]),
          w.tx.query('delete from archived_tasks where id = $1 and org_id = $2', [taskId, org.id]),
          deleteDoc(w.tx, docName),
          ...screenshots.map((a) => store.delete(org.id, a.id, w.tx)),
        ])
        if (onBoard) {
          w.mutate((doc) => {
            const m = boardMaps(doc)
            if (m.claims.has(taskId)) m.claims.delete(taskId)
            m.tasks.delete(taskId)
          })
        }
        await forgetBlocker(w, org.id, taskId)
        // Nobody keeps the card's document open, on any process, and nothing of it is stored again.
        w.afterCommit(() => live.forgetDocument(docName, { documentName: docName }))
      })
      return { status: 204 }
    },
  )

  /**
   * Removes a card's project (projectId null), which the API cannot do. Claim locked: a
   * card someone holds is refused with 409 + holder. Idempotent.
   */
  on(
    'DELETE',
    '/orgs/:orgId/tasks/:taskId/project',
    {
      summary: "Remove a card's project (projectId null)",
      description: 'Idempotent.',
      access: 'member',
      answers: [answer.json(200, 'The card, projectId null.', withTask)],
      claimLocked: true,
      errors: { 400: 'taskId is not a UUID.', 404: 'No such card.' },
    },
    async (_req, user, org, p) => {
      const taskId = pathId(p, 'taskId')
      const ctx = personContext(deps, user, org)
      const task = await ctx.writeBoard(async (w) => {
        await assertUnclaimed(w.tx, org.id, [taskId], now())
        return editCard(ctx, w, taskId, {
          board: (m) => m.set('projectId', null),
          archived: (t) => ({ ...t, projectId: null }),
          unchanged: (t) => t.projectId === null,
        })
      })
      return { status: 200, body: { task } }
    },
  )

  /**
   * Sets a column's role and/or fire. Setting it on fire (or putting it out) is a change
   * of the column and of every card in it, archived ones included, whose effective
   * priority moved; those cards are logged with the column so get_changes delivers them
   * together. A role change leaves no timestamp, as the specification says.
   */
  on(
    'PATCH',
    '/orgs/:orgId/columns/:columnId',
    {
      summary: "Set a column's role and/or fire",
      description:
        'At least one field. A fire change is logged for the column and for every card in it (archived ones too) whose effective priority moved; a role change leaves no change row.',
      access: 'member',
      body: body.patchColumn,
      answers: [answer.json(200, 'The column.', withColumn)],
      errors: { 400: 'Neither role nor onFire was sent.', 404: 'No such column.' },
    },
    async (req, user, org, p) => {
      const columnId = pathId(p, 'columnId')
      const input = parseParams('update column', body.patchColumn, (await readJson(req)) ?? {})
      if (input.role === undefined && input.onFire === undefined) {
        throw badRequest('Send role and/or onFire to change')
      }
      const column = await write(user, org, async (w): Promise<Column> => {
        const view = new BoardView(w.doc)
        const before = view.requireColumn(columnId)
        const fireChanges = input.onFire !== undefined && input.onFire !== before.onFire
        const moved = (t: StoredTask) =>
          effectivePriority(t.priority, before.onFire) !==
          effectivePriority(t.priority, input.onFire === true)
        const reprioritised = fireChanges
          ? [
              ...view.storedTasks().filter((t) => t.columnId === columnId),
              ...(await archivedInColumn(w.tx, org.id, columnId)),
            ]
              .filter(moved)
              .map((t) => t.id)
          : []
        w.mutate((doc) => {
          const m = boardMaps(doc).columns.get(columnId)
          if (!m) return
          if (input.role !== undefined && input.role !== before.role) m.set('role', input.role)
          if (fireChanges) {
            m.set('onFire', input.onFire)
            m.set('updatedAt', w.now)
          }
        })
        if (fireChanges) {
          w.changed('column', columnId)
          await recordFireChanges(w.tx, org.id, columnId, reprioritised)
        }
        const m = boardMaps(w.doc).columns.get(columnId)
        return m ? readColumn(columnId, m) : before
      })
      return { status: 200, body: { column } }
    },
  )

  /**
   * The Archived view: archived cards, newest archive first, in the get_task task shape,
   * a page at a time (`limit` 1–200, default 50; `before` is the previous page's
   * `nextBefore`, null after the last page).
   */
  on(
    'GET',
    '/orgs/:orgId/archived-tasks',
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
    async (req, user, org) => {
      const query = new URL(req.url ?? '/', 'http://localhost').searchParams
      const limit = pageLimit(query.get('limit'))
      const before = pageCursor(query.get('before'))
      const page = await archivedPage(db, org.id, limit + 1, before)
      const shown = page.slice(0, limit)
      const claims = await claimsByIds(
        db,
        org.id,
        shown.map((t) => t.id),
        now(),
      )
      const tasks = await personContext(deps, user, org).readBoard((view) =>
        shown.map((t): Task => view.present(t, shownOnCard(claims.get(t.id)))),
      )
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
  on(
    'GET',
    '/orgs/:orgId/archived-tasks/:taskId',
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
    async (_req, user, org, p) => {
      const taskId = pathId(p, 'taskId')
      const stored = await findArchived(db, org.id, taskId)
      if (!stored)
        throw new ApiError(404, `No archived card with taskId ${taskId} in this organisation`)
      const claims = await claimsByIds(db, org.id, [taskId], now())
      const task = await personContext(deps, user, org).readBoard((view) =>
        view.present(stored, shownOnCard(claims.get(taskId))),
      )
      return { status: 200, body: { task } }
    },
  )

  /**
   * Puts an archived card back on the board: in its column, or the first column of its
   * project (or of the organisation) when that column is gone; archivedAt null; appended
   * at the bottom; its claim (if any) shown on the board again. Claim locked: a card an
   * agent holds stays where it is (409 + holder). Not archived: 409.
   */
  on(
    'POST',
    '/orgs/:orgId/tasks/:taskId/restore',
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
    async (_req, user, org, p) => {
      const taskId = pathId(p, 'taskId')
      const task = await write(user, org, async (w): Promise<Task> => {
        const view = new BoardView(w.doc, now())
        if (view.hasTask(taskId)) throw conflict(`Card ${taskId} is on the board, not archived`)
        const archived = await lockArchived(w, org.id, taskId)
        if (!archived) throw new ApiError(404, `No card with taskId ${taskId} in this organisation`)
        await assertUnclaimed(w.tx, org.id, [taskId], now())
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
          if (claim) maps.claims.set(taskId, storedClaimFromRow(claim, now()))
        })
        w.row({ t: 'archived', id: taskId, rec: null })
        w.changed('task', taskId)
        const after = new BoardView(w.doc, now())
        return after.present(after.requireTask(taskId))
      })
      return { status: 200, body: { task } }
    },
  )
}

/**
 * A card deleted for good leaves every `blockedBy` that names it: on the board (those cards
 * are changed and stamped) and in archived cards' records.
 */
async function forgetBlocker(w: WriteScope, orgId: string, taskId: string): Promise<void> {
  const waiting = new BoardView(w.doc).dependents(taskId)
  if (waiting.length > 0) {
    w.mutate((doc) => {
      const tasks = boardMaps(doc).tasks
      for (const id of waiting) {
        const m = tasks.get(id)
        if (!m) continue
        m.set(
          'blockedBy',
          strings(m, 'blockedBy').filter((b) => b !== taskId),
        )
        m.set('updatedAt', w.now)
      }
    })
    for (const id of waiting) w.changed('task', id)
  }
  const archived = await w.tx.query<{ id: string }>(
    `update archived_tasks set record = jsonb_set(record, '{blockedBy}',
       (select coalesce(jsonb_agg(b), '[]'::jsonb) from jsonb_array_elements(record->'blockedBy') b
         where b <> to_jsonb($2::text)))
      where org_id = $1 and record->'blockedBy' ? $2
     returning id`,
    [orgId, taskId],
  )
  for (const r of archived) w.changed('task', r.id)
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
      /^[0-9a-f-]{36}$/.test(v[1])
    ) {
      return { archivedAt: v[0], id: v[1] }
    }
  } catch {}
  throw badRequest('before must be the nextBefore of a previous page')
}
