import type { IncomingMessage } from 'node:http'
import type * as Y from 'yjs'
import type { Db } from '../../persistence/db.ts'
import { boardDocName, boardMaps, readColumn } from '../../shared/board-doc.ts'
import { effectivePriority } from '../../shared/priority.ts'
import type { Column, Task } from '../../shared/records.ts'
import * as body from '../../shared/schemas/app.ts'
import type { OrgMembership, User } from '../accounts.ts'
import { BoardView } from '../actions/board-view.ts'
import { type Clock, systemClock } from '../agent/context.ts'
import { parseParams } from '../agent/validation.ts'
import { badRequest } from '../api-error.ts'
import { recordFireChanges } from '../changes/feed.ts'
import { assertUnclaimed } from '../claims/locks.ts'
import { deleteClaim } from '../claims/store.ts'
import { fileStore } from '../files/store.ts'
import { readJson, sendEmpty, sendJson } from '../http/json.ts'
import type { Params, Router } from '../http/router.ts'
import type { LiveDocs, WriteScope } from '../live/live-docs.ts'
import { requireMember, requireUser } from './session.ts'

export interface PeopleActionDeps {
  db: Db
  live: LiveDocs
  clock?: Clock
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A path id, or 400 naming it, as the agent endpoint answers a malformed id. */
function pathId(params: Params, name: string): string {
  const value = params[name] ?? ''
  if (!UUID.test(value)) throw badRequest(`${name} must be a UUID (malformed id)`)
  return value.toLowerCase()
}

/**
 * What people do to the board in the app and agents cannot (DESIGN.md, Contract 2): take
 * back a claim, delete a card, remove a card's project, set a column's role or fire. Each
 * is one write on the board document with a `person` origin, committed in one transaction
 * with its claim rows and its change rows. Members of the organisation only (404 for
 * anyone else); force release needs owner or admin (403 otherwise).
 */
export function peopleActionRoutes(router: Router, deps: PeopleActionDeps): void {
  const { db, live } = deps
  const clock = deps.clock ?? systemClock

  type Handler = (
    req: IncomingMessage,
    user: User,
    org: OrgMembership,
    params: Params,
  ) => Promise<{ status: number; body?: unknown }>

  const on = (method: string, path: string, roles: 'any' | 'owner-admin', handler: Handler) =>
    router.on(method, `/api/app${path}`, async (req, res, params) => {
      const user = await requireUser(db, req)
      const org = await requireMember(
        db,
        params.orgId ?? '',
        user,
        roles === 'owner-admin' ? ['owner', 'admin'] : undefined,
      )
      const out = await handler(req, user, org, params)
      if (out.body === undefined) sendEmpty(res, out.status)
      else sendJson(res, out.status, out.body)
    })

  const write = <T>(user: User, org: OrgMembership, fn: (w: WriteScope) => Promise<T>) =>
    live.write(
      boardDocName(org.id),
      { type: 'person', orgId: org.id, userId: user.id, email: user.email },
      fn,
    )

  /**
   * Force release (owner or admin): deletes the card's claim record whatever its state, so
   * the card is free and leaves `activity`. `released` says whether there was a record.
   * Leaves no trace in the change feed, as the specification says.
   */
  on(
    'POST',
    '/orgs/:orgId/tasks/:taskId/force-release',
    'owner-admin',
    async (_req, user, org, p) => {
      const taskId = pathId(p, 'taskId')
      const released = await write(user, org, async (w) => {
        new BoardView(w.doc).requireTask(taskId)
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
   * Deletes a card for good, with its comments, its screenshots (document entries and
   * stored files) and its claim, whoever holds it. A permanent delete leaves no timestamp,
   * so get_changes cannot show it.
   */
  on('DELETE', '/orgs/:orgId/tasks/:taskId', 'any', async (_req, user, org, p) => {
    const taskId = pathId(p, 'taskId')
    await write(user, org, async (w) => {
      new BoardView(w.doc).requireTask(taskId)
      const maps = boardMaps(w.doc)
      const owned = (m: Y.Map<Y.Map<unknown>>) => {
        const ids: string[] = []
        m.forEach((entry, id) => {
          if (entry.get('taskId') === taskId) ids.push(id)
        })
        return ids
      }
      const comments = owned(maps.comments)
      const attachments = owned(maps.attachments)
      const store = fileStore(db)
      await Promise.all([
        deleteClaim(w.tx, taskId),
        ...attachments.map((id) => store.delete(org.id, id, w.tx)),
      ])
      w.mutate((doc) => {
        const m = boardMaps(doc)
        for (const id of comments) m.comments.delete(id)
        for (const id of attachments) m.attachments.delete(id)
        m.claims.delete(taskId)
        m.tasks.delete(taskId)
      })
    })
    return { status: 204 }
  })

  /**
   * Removes a card's project (projectId null), which the API cannot do. Claim locked: a
   * card someone holds is refused with 409 + holder. Idempotent.
   */
  on('DELETE', '/orgs/:orgId/tasks/:taskId/project', 'any', async (_req, user, org, p) => {
    const taskId = pathId(p, 'taskId')
    const task = await write(user, org, async (w): Promise<Task> => {
      const view = new BoardView(w.doc, clock.now())
      const before = view.requireTask(taskId)
      await assertUnclaimed(w.tx, [taskId], clock.now())
      if (before.projectId !== null) {
        w.mutate((doc) => {
          const m = boardMaps(doc).tasks.get(taskId) as Y.Map<unknown>
          m.set('projectId', null)
          m.set('updatedAt', w.now)
        })
        w.changed('task', taskId)
      }
      const after = new BoardView(w.doc, clock.now())
      return after.present(after.requireTask(taskId))
    })
    return { status: 200, body: { task } }
  })

  /**
   * Sets a column's role and/or fire. Setting it on fire (or putting it out) is a change
   * of the column and of every card in it, archived ones included, whose effective
   * priority moved; those cards are logged with the column so get_changes delivers them
   * together. A role change leaves no timestamp, as the specification says.
   */
  on('PATCH', '/orgs/:orgId/columns/:columnId', 'any', async (req, user, org, p) => {
    const columnId = pathId(p, 'columnId')
    const input = parseParams('update column', body.patchColumn, (await readJson(req)) ?? {})
    if (input.role === undefined && input.onFire === undefined) {
      throw badRequest('Send role and/or onFire to change')
    }
    const column = await write(user, org, async (w): Promise<Column> => {
      const view = new BoardView(w.doc)
      const before = view.requireColumn(columnId)
      const fireChanges = input.onFire !== undefined && input.onFire !== before.onFire
      const reprioritised = fireChanges
        ? view
            .storedTasks()
            .filter(
              (t) =>
                t.columnId === columnId &&
                effectivePriority(t.priority, before.onFire) !==
                  effectivePriority(t.priority, input.onFire === true),
            )
            .map((t) => t.id)
        : []
      w.mutate((doc) => {
        const m = boardMaps(doc).columns.get(columnId) as Y.Map<unknown>
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
      return readColumn(columnId, boardMaps(w.doc).columns.get(columnId) as Y.Map<unknown>)
    })
    return { status: 200, body: { column } }
  })
}
