import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { shownOnCard } from '../../shared/claims.ts'
import { LIMITS } from '../../shared/constants.ts'
import type { Task } from '../../shared/records.ts'
import { archivedByIds, attachmentsByIds, claimsByIds, commentsByIds } from '../board/history.ts'
import { readChangePage } from '../changes/feed.ts'
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
    archivedByIds(ctx.db, orgId, offBoard),
    claimsByIds(ctx.db, orgId, offBoard, now),
    commentsByIds(ctx.db, orgId, page.ids.comments),
    attachmentsByIds(ctx.db, orgId, page.ids.attachments),
    claimsByIds(ctx.db, orgId, page.ids.claims, now),
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
  return {
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
}
