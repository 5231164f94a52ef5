import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { boardMaps, readAttachment, readComment } from '../../shared/board-doc.ts'
import { presentClaim, type StoredClaim } from '../../shared/claims.ts'
import { LIMITS } from '../../shared/constants.ts'
import type { ActionContext } from '../agent/context.ts'
import { readChangePage } from '../changes/feed.ts'
import { BoardView } from './board-view.ts'

/**
 * get_changes: the change feed, in the get_board shapes. Read-only. It runs on the write
 * path (under the document's lock, in a transaction that writes nothing) so that every
 * change row it can see has already reached the document it presents from: a write of
 * this process commits and updates the document before the lock is let go.
 *
 * Entities that no longer exist (a card or comment deleted for good, a force-released
 * claim) cannot be shown and are left out, as the specification says.
 */
export async function get_changes(
  ctx: ActionContext,
  input: ActionInput<'get_changes'>,
): Promise<ActionResults['get_changes']> {
  const limit = input.limit ?? LIMITS.changesLimit.default
  return ctx.writeBoard(async (w) => {
    const page = await readChangePage(w.tx, ctx.key.orgId, input.since, limit)
    const view = new BoardView(w.doc, ctx.clock.now())
    const maps = boardMaps(w.doc)

    const taskIds = [...new Set([...page.ids.tasks, ...page.ids.fireTasks])]
    const tasks = taskIds.flatMap((id) => {
      const t = view.storedTask(id)
      return t ? [view.present(t)] : []
    })
    const columns = page.ids.columns.flatMap((id) => {
      const c = view.columns.get(id)
      return c ? [c] : []
    })
    const comments = page.ids.comments.flatMap((id) => {
      const m = maps.comments.get(id)
      return m ? [readComment(id, m)] : []
    })
    const attachments = page.ids.attachments.flatMap((id) => {
      const m = maps.attachments.get(id)
      return m ? [readAttachment(id, m)] : []
    })
    const claims = page.ids.claims.flatMap((taskId) => {
      const stored = maps.claims.get(taskId) as StoredClaim | undefined
      return stored ? [presentClaim(stored, view.now)] : []
    })
    return {
      cursor: page.cursor,
      tasks,
      columns,
      comments,
      attachments,
      claims,
      truncated: page.truncated,
    }
  })
}
