import type { Queryable } from '../../persistence/types.ts'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import {
  type DependencyBoard,
  dependencyProblem,
  describeDependencyProblem,
  foldBlockers,
} from '../../shared/dependencies.ts'
import { BoardView } from '../board/board-view.ts'
import { archivedByIds, type PendingRows } from '../board/history.ts'
import { badRequest, notFound } from '../errors.ts'
import type { ActionContext } from './context.ts'
import { editCard } from './tasks.ts'

/** What an archived card keeps of itself that the dependency rules read. */
interface ArchivedDeps {
  title: string
  blockedBy: string[]
}

/** Archived cards of the organisation among `ids`, with their blockers and titles. */
async function archivedDeps(
  q: Queryable,
  orgId: string,
  ids: readonly string[],
  pending: PendingRows,
): Promise<Map<string, ArchivedDeps>> {
  const cards = await archivedByIds(q, orgId, ids, pending)
  return new Map([...cards].map(([id, t]) => [id, { title: t.title, blockedBy: t.blockedBy }]))
}

/** A card as a refusal names it: its title (cut short) and id. */
function cardName(title: string | undefined, id: string): string {
  if (!title) return id
  const short = title.length > 60 ? `${title.slice(0, 59)}…` : title
  return `"${short}" (${id})`
}

/**
 * set_task_dependencies: see the schema. The cycle check follows archived cards' blockers
 * too (an archived card keeps its `blockedBy` and may be restored): the archived cards the
 * search reaches are read as it reaches them, a batch per round.
 */
export async function set_task_dependencies(
  ctx: ActionContext,
  input: ActionInput<'set_task_dependencies'>,
): Promise<ActionResults['set_task_dependencies']> {
  const { taskId } = input
  const blockedBy = foldBlockers(input.blockedBy)
  const orgId = ctx.orgId
  return ctx.writeBoard(async (w) => {
    const view = new BoardView(w.doc)
    const offBoard = blockedBy.filter((id) => id !== taskId && !view.hasTask(id))
    const archived = await archivedDeps(w.tx, orgId, offBoard, w.pendingArchivedAll())
    const missing = offBoard.find((id) => !archived.has(id))
    if (missing) {
      throw notFound(`blockedBy: no card with id ${missing} in this organisation`)
    }
    const titleOf = (id: string) => view.storedTask(id)?.title ?? archived.get(id)?.title
    for (;;) {
      const unread = new Set<string>()
      const board: DependencyBoard = {
        ...view.dependencies,
        blockersOf: (id) => {
          const onBoard = view.storedTask(id)
          if (onBoard) return onBoard.blockedBy
          const known = archived.get(id)
          if (known) return known.blockedBy
          unread.add(id)
          return []
        },
      }
      const problem = dependencyProblem(board, taskId, blockedBy)
      if (problem) {
        throw badRequest(describeDependencyProblem(problem, (id) => cardName(titleOf(id), id)))
      }
      if (unread.size === 0) break
      // Cards the search reached that are neither on the board nor read yet: read them (a
      // card deleted for good has no blockers) and search again.
      const more = await archivedDeps(w.tx, orgId, [...unread], w.pendingArchivedAll())
      for (const id of unread) archived.set(id, more.get(id) ?? { title: '', blockedBy: [] })
    }
    const same = (list: readonly string[]) =>
      list.length === blockedBy.length && list.every((id, i) => id === blockedBy[i])
    return {
      task: await editCard(ctx, w, taskId, {
        board: (m) => m.set('blockedBy', blockedBy),
        archived: (t) => ({ ...t, blockedBy }),
        unchanged: (t) => same(t.blockedBy),
      }),
    }
  })
}
