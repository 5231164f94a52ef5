import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { boardMaps, readColumn, type StoredTask } from '../../shared/board-doc.ts'
import { POSITION_STEP } from '../../shared/constants.ts'
import { archivedRow } from '../board/archive.ts'
import { BoardView } from '../board/board-view.ts'
import { archivedInColumn } from '../board/history.ts'
import { badRequest } from '../errors.ts'
import type { ActionContext } from './context.ts'
import { requireProject } from './tasks.ts'

/** create_column: appended at the end unless `position` is given; organisation-level without projectId. */
export async function create_column(
  ctx: ActionContext,
  input: ActionInput<'create_column'>,
): Promise<ActionResults['create_column']> {
  return ctx.writeBoard(async (w) => {
    const view = new BoardView(w.doc)
    if (input.projectId !== undefined) requireProject(view, input.projectId)
    const last = view.sortedColumns().at(-1)
    const position = input.position ?? (last ? last.position + POSITION_STEP : POSITION_STEP)
    const id = randomUUID()
    w.mutate((doc) => {
      const m = new Y.Map<unknown>()
      m.set('title', input.title)
      m.set('position', position)
      m.set('role', null)
      m.set('projectId', input.projectId ?? null)
      m.set('onFire', false)
      m.set('createdAt', w.now)
      m.set('updatedAt', w.now)
      boardMaps(doc).columns.set(id, m)
    })
    w.changed('column', id)
    return { column: readColumn(id, boardMaps(w.doc).columns.get(id) as Y.Map<unknown>) }
  })
}

/** rename_column: cards and positions untouched. */
export async function rename_column(
  ctx: ActionContext,
  input: ActionInput<'rename_column'>,
): Promise<ActionResults['rename_column']> {
  return ctx.writeBoard(async (w) => {
    new BoardView(w.doc).requireColumn(input.columnId)
    w.mutate((doc) => {
      const m = boardMaps(doc).columns.get(input.columnId) as Y.Map<unknown>
      m.set('title', input.title)
      m.set('updatedAt', w.now)
    })
    w.changed('column', input.columnId)
    return { columnId: input.columnId, title: input.title, updatedAt: w.now }
  })
}

/**
 * delete_column: cards (archived ones count) move to the bottom of destinationColumnId in
 * their order; without a destination a non-empty column is refused. The claim gate
 * (server/claims/gate.ts) has refused it with 409 while any card in it is actively worked.
 */
export async function delete_column(
  ctx: ActionContext,
  input: ActionInput<'delete_column'>,
): Promise<ActionResults['delete_column']> {
  return ctx.writeBoard(async (w) => {
    const view = new BoardView(w.doc)
    view.requireColumn(input.columnId)
    const dest = input.destinationColumnId
    if (dest !== undefined) {
      if (dest === input.columnId) throw badRequest('destinationColumnId must differ from columnId')
      view.requireColumn(dest, 'destinationColumnId')
    }
    // Locked below: an earlier write of the lane may be storing a change of these rows.
    await w.earlierCommitted()
    const archived = await archivedInColumn(
      w.tx,
      ctx.orgId,
      input.columnId,
      true,
      w.pendingArchivedAll(),
    )
    const archivedIds = new Set(archived.map((t) => t.id))
    const cards = [
      ...view.storedTasks().filter((t) => t.columnId === input.columnId),
      ...archived,
    ].sort((a, b) => a.position - b.position || a.id.localeCompare(b.id))
    if (cards.length > 0 && dest === undefined) {
      throw badRequest(
        `Column ${input.columnId} still holds ${cards.length} card(s) (archived ones count); pass destinationColumnId to move them`,
      )
    }
    const moved: StoredTask[] = []
    w.mutate((doc) => {
      const maps = boardMaps(doc)
      if (dest !== undefined) {
        let position = view.appendPosition(dest, POSITION_STEP)
        for (const card of cards) {
          const next = { ...card, columnId: dest, position, updatedAt: w.now }
          moved.push(next)
          position += POSITION_STEP
          if (archivedIds.has(card.id)) continue
          const m = maps.tasks.get(card.id) as Y.Map<unknown>
          m.set('columnId', dest)
          m.set('position', next.position)
          m.set('updatedAt', w.now)
        }
      }
      maps.columns.delete(input.columnId)
    })
    if (dest !== undefined) {
      const after = new BoardView(w.doc)
      const destination = after.requireColumn(dest, 'destinationColumnId')
      for (const card of moved) {
        if (archivedIds.has(card.id)) w.row({ t: 'archived', id: card.id, rec: archivedRow(card) })
        w.changed('task', card.id)
        w.emit({
          type: 'card.moved',
          data: {
            task: archivedIds.has(card.id) ? after.present(card, null) : after.present(card),
            fromColumnId: input.columnId,
            toColumnId: dest,
            toColumnTitle: destination.title,
          },
        })
      }
    }
    return { deleted: true as const, columnId: input.columnId, movedCount: cards.length }
  })
}
