import { z } from 'zod'
import { actions } from '../../../shared/actions.ts'
import { boardMaps, readColumn, type StoredTask } from '../../../shared/board-doc.ts'
import { effectivePriority } from '../../../shared/priority.ts'
import type { Column } from '../../../shared/records.ts'
import * as body from '../../../shared/schemas/app.ts'
import { column as columnRecord } from '../../../shared/schemas/outputs.ts'
import { run } from '../../actions/perform.ts'
import { parseParams } from '../../actions/validation.ts'
import { BoardView } from '../../board/board-view.ts'
import { archivedInColumn } from '../../board/history.ts'
import { recordFireChanges } from '../../changes/feed.ts'
import { badRequest } from '../../errors.ts'
import { readJson } from '../../http/json.ts'
import { answer } from '../../http/route-docs.ts'
import { type AppRouter, pathId, queryOf } from './route.ts'

const withColumn = z.strictObject({ column: columnRecord })

/** A column's role and fire (people only), and deleting a column as delete_column does. */
export function columnRoutes(app: AppRouter): void {
  /**
   * Sets a column's role and/or fire. Setting it on fire (or putting it out) is a change
   * of the column and of every card in it, archived ones included, whose effective
   * priority moved; those cards are logged with the column so get_changes delivers them
   * together. A role change leaves no timestamp, as the specification says.
   */
  app.org(
    'PATCH',
    '/columns/:columnId',
    {
      summary: "Set a column's role and/or fire",
      description:
        'At least one field. A fire change is logged for the column and for every card in it (archived ones too) whose effective priority moved; a role change leaves no change row.',
      access: 'member',
      body: body.patchColumn,
      answers: [answer.json(200, 'The column.', withColumn)],
      errors: { 400: 'Neither role nor onFire was sent.', 404: 'No such column.' },
    },
    async (req, { user, org, params: p }) => {
      const columnId = pathId(p, 'columnId')
      const input = parseParams('update column', body.patchColumn, (await readJson(req)) ?? {})
      if (input.role === undefined && input.onFire === undefined) {
        throw badRequest('Send role and/or onFire to change')
      }
      const column = await app.context({ user, org }).writeBoard(async (w): Promise<Column> => {
        const view = new BoardView(w.doc)
        const before = view.requireColumn(columnId)
        const fireChanges = input.onFire !== undefined && input.onFire !== before.onFire
        const moved = (t: StoredTask) =>
          effectivePriority(t.priority, before.onFire) !==
          effectivePriority(t.priority, input.onFire === true)
        const reprioritised = fireChanges
          ? [
              ...view.storedTasks().filter((t) => t.columnId === columnId),
              ...(await archivedInColumn(w.tx, org.id, columnId, false, w.pendingArchivedAll())),
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
   * Deletes a column as delete_column does (the same handler): cards, archived ones
   * included, move to `destinationColumnId` (query parameter) in their order; 409 while a
   * card in it is actively worked.
   */
  app.org(
    'DELETE',
    '/columns/:columnId',
    {
      summary: 'Delete a column, as delete_column',
      description: actions.delete_column.description,
      access: 'member',
      query: {
        destinationColumnId: {
          description:
            'The column that receives the cards; needed when the column holds any (archived ones count).',
          schema: actions.delete_column.input.shape.destinationColumnId,
        },
      },
      answers: [answer.json(200, 'As delete_column answers.', actions.delete_column.output)],
      claimLocked: actions.delete_column.claimLocked,
      errors: { 404: 'No such column.' },
    },
    async (req, { user, org, params }) => {
      const query = queryOf(req)
      const input = parseParams('delete column', actions.delete_column.input, {
        columnId: params.columnId,
        ...(query.get('destinationColumnId')
          ? { destinationColumnId: query.get('destinationColumnId') }
          : {}),
      })
      const result = await run(app.deps, {
        action: 'delete_column',
        input,
        caller: app.caller({ user, org }),
      })
      return { status: 200, body: result }
    },
  )
}
