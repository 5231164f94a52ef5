import { z } from 'zod'
import { boardMaps } from '../../../shared/board-doc.ts'
import { cardDocName } from '../../../shared/doc-names.ts'
import { task as taskRecord } from '../../../shared/schemas/outputs.ts'
import { strings } from '../../../shared/ymap-fields.ts'
import { editCard } from '../../actions/tasks.ts'
import { BoardView } from '../../board/board-view.ts'
import { requireCard } from '../../board/history.ts'
import { assertUnclaimed } from '../../claims/locks.ts'
import { deleteClaim } from '../../claims/store.ts'
import { fileStore } from '../../files/store.ts'
import { answer } from '../../http/route-docs.ts'
import { deleteDoc } from '../../live/doc-store.ts'
import type { WriteScope } from '../../live/write-scope.ts'
import { type AppRouter, pathId } from './route.ts'

const withTask = z.strictObject({ task: taskRecord })

/**
 * What people do to cards in the app and agents cannot (docs/design.md, Contract 2): take
 * back a claim, delete a card for good, remove its project.
 * Each write has a `person` origin and commits in one transaction with its claim, history
 * and change rows.
 */
export function cardRoutes(app: AppRouter): void {
  const { db, live, clock } = app.deps

  /**
   * Force release (owner or admin): deletes the card's claim record whatever its state, so
   * the card is free and leaves `activity`. `released` says whether there was a record.
   * Leaves no trace in the change feed, as the specification says.
   */
  app.org(
    'POST',
    '/tasks/:taskId/force-release',
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
    async (_req, { user, org, params: p }) => {
      const taskId = pathId(p, 'taskId')
      const released = await app.context({ user, org }).writeBoard(async (w) => {
        // Claim locks after the lane's earlier writes: a batch of them may wait for this one.
        await w.beforeClaimLocks()
        await requireCard(w.tx, new BoardView(w.doc), org.id, taskId, w.pendingArchivedAll())
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
  app.org(
    'DELETE',
    '/tasks/:taskId',
    {
      summary: 'Delete a card for good, on the board or archived',
      description:
        'With its comments, its screenshots (entries and files), its card document and its claim, whoever holds it. Open copies of the card document close.',
      access: 'member',
      answers: [answer.noContent('The card is gone.')],
      errors: { 400: 'taskId is not a UUID.', 404: 'No such card.' },
    },
    async (_req, { user, org, params: p }) => {
      const taskId = pathId(p, 'taskId')
      const docName = cardDocName(org.id, taskId)
      await app.context({ user, org }).writeBoard(async (w) => {
        const { onBoard } = await requireCard(
          w.tx,
          new BoardView(w.doc),
          org.id,
          taskId,
          w.pendingArchivedAll(),
        )
        const screenshots = await w.tx.query<{ id: string }>(
          'delete from attachments where task_id = $1 and org_id = $2 returning id',
          [taskId, org.id],
        )
        const store = fileStore(db)
        // Same lock as compaction, so a compaction in flight cannot write a snapshot back.
        await w.beforeClaimLocks()
        await w.tx.query('select pg_advisory_xact_lock(hashtext($1))', [docName])
        live.forgetDocument(docName)
        await Promise.all([
          deleteClaim(w.tx, taskId),
          w.tx.query('delete from comments where task_id = $1 and org_id = $2', [taskId, org.id]),
          w.tx.query('delete from archived_tasks where id = $1 and org_id = $2', [taskId, org.id]),
          w.tx.query('delete from task_texts where id = $1 and org_id = $2', [taskId, org.id]),
          w.tx.query('delete from card_history where org_id = $1 and task_id = $2', [
            org.id,
            taskId,
          ]),
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
  app.org(
    'DELETE',
    '/tasks/:taskId/project',
    {
      summary: "Remove a card's project (projectId null)",
      description: 'Idempotent.',
      access: 'member',
      answers: [answer.json(200, 'The card, projectId null.', withTask)],
      claimLocked: true,
      errors: { 400: 'taskId is not a UUID.', 404: 'No such card.' },
    },
    async (_req, { user, org, params: p }) => {
      const taskId = pathId(p, 'taskId')
      const ctx = app.context({ user, org })
      const task = await ctx.writeBoard(async (w) => {
        await w.beforeClaimLocks()
        await assertUnclaimed(w.tx, org.id, [taskId], clock.now())
        return editCard(ctx, w, taskId, {
          board: (m) => m.set('projectId', null),
          archived: (t) => ({ ...t, projectId: null }),
          unchanged: (t) => t.projectId === null,
        })
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
