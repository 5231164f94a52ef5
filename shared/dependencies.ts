import type * as Y from 'yjs'
import { str, strings, strOrNull } from './ymap-fields.ts'

/**
 * Card dependencies (issue 18). A card's `blockedBy` lists the cards it waits for; the
 * card is blocked while at least one of them is open: on the board and in a column whose
 * role is not `done`. A blocker that left the board (archived, deleted) counts as closed
 * and stays in `blockedBy`. These rules read a board through `DependencyBoard`, so the
 * server's document, the app's store and a test's fixture answer them alike.
 */

/** The most cards one card may wait for (`set_task_dependencies`: 0–50 ids). */
export const MAX_BLOCKERS = 50

/** What the dependency rules read of a board. */
export interface DependencyBoard {
  /** The column of a card on the board; undefined for a card not on it. */
  columnOf(taskId: string): string | undefined
  /** A column's role: null for none, undefined for no such column. */
  roleOf(columnId: string): string | null | undefined
  /** The cards a card on the board waits for; [] for none or a card not on the board. */
  blockersOf(taskId: string): readonly string[]
}

/** The board document's cards and columns as a `DependencyBoard`, read as wire data. */
export function docDependencyBoard(maps: {
  tasks: Y.Map<Y.Map<unknown>>
  columns: Y.Map<Y.Map<unknown>>
}): DependencyBoard {
  return {
    columnOf: (id) => {
      const m = maps.tasks.get(id)
      return m ? str(m, 'columnId') : undefined
    },
    roleOf: (id) => {
      const m = maps.columns.get(id)
      return m ? strOrNull(m, 'role') : undefined
    },
    blockersOf: (id) => {
      const m = maps.tasks.get(id)
      return m ? strings(m, 'blockedBy') : []
    },
  }
}

/** Open: on the board and not in a `done` column. A card in a missing column is open. */
export function isOpen(board: DependencyBoard, taskId: string): boolean {
  const columnId = board.columnOf(taskId)
  return columnId !== undefined && board.roleOf(columnId) !== 'done'
}

/** The blockers in `blockedBy` that are open, in its order. */
export function openBlockers(board: DependencyBoard, blockedBy: readonly string[]): string[] {
  return blockedBy.filter((id) => isOpen(board, id))
}

/** Blocked: at least one blocker is open. */
export function isBlocked(board: DependencyBoard, blockedBy: readonly string[]): boolean {
  return blockedBy.some((id) => isOpen(board, id))
}

/** Ids lower-cased (ids compare lower-cased), duplicates folded keeping the first. */
export function foldBlockers(blockedBy: readonly string[]): string[] {
  return [...new Set(blockedBy.map((id) => id.toLowerCase()))]
}

/**
 * The cycle that giving `taskId` these blockers would close, as the cards on it in
 * waiting order: `[taskId, b, …, z]` where the card waits for b, b waits for …, and z
 * waits for the card. Undefined when there is none. Follows the board's current
 * `blockedBy` values for every other card.
 */
export function findCycle(
  board: DependencyBoard,
  taskId: string,
  blockedBy: readonly string[],
): string[] | undefined {
  const target = taskId.toLowerCase()
  // Breadth first, so the cycle named is a shortest one.
  const cameFrom = new Map<string, string>()
  const queue: string[] = []
  for (const b of foldBlockers(blockedBy)) {
    if (b === target) return [target]
    if (!cameFrom.has(b)) {
      cameFrom.set(b, target)
      queue.push(b)
    }
  }
  for (let i = 0; i < queue.length; i++) {
    const at = queue[i] as string
    for (const raw of board.blockersOf(at)) {
      const next = raw.toLowerCase()
      if (next === target) {
        const path = [at]
        for (let p = cameFrom.get(at); p !== undefined && p !== target; p = cameFrom.get(p))
          path.push(p)
        return [target, ...path.reverse()]
      }
      if (cameFrom.has(next)) continue
      cameFrom.set(next, at)
      queue.push(next)
    }
  }
  return undefined
}

/** Why a card may not wait for exactly these cards. */
export type DependencyProblem =
  | { type: 'self' }
  | { type: 'tooMany'; count: number }
  | { type: 'cycle'; cycle: string[] }

/**
 * The first rule that `blockedBy` (already folded) breaks for `taskId`: the card itself
 * among them, more than MAX_BLOCKERS, or a cycle through the board. Undefined when it is
 * allowed. Whether each id is a card of the organisation is the caller's to check.
 */
export function dependencyProblem(
  board: DependencyBoard,
  taskId: string,
  blockedBy: readonly string[],
): DependencyProblem | undefined {
  const self = taskId.toLowerCase()
  if (blockedBy.some((id) => id.toLowerCase() === self)) return { type: 'self' }
  if (blockedBy.length > MAX_BLOCKERS) return { type: 'tooMany', count: blockedBy.length }
  const cycle = findCycle(board, taskId, blockedBy)
  return cycle ? { type: 'cycle', cycle } : undefined
}

/**
 * The problem in words, naming the parameter; `name` shows a card (its title, or its id).
 * A cycle reads as its cards in waiting order, back to the first.
 */
export function describeDependencyProblem(
  problem: DependencyProblem,
  name: (taskId: string) => string,
): string {
  switch (problem.type) {
    case 'self':
      return 'blockedBy must not include the card itself'
    case 'tooMany':
      return `blockedBy holds at most ${MAX_BLOCKERS} cards (got ${problem.count})`
    case 'cycle': {
      const [first] = problem.cycle
      const names = [...problem.cycle, first as string].map(name)
      return `blockedBy would make a cycle: ${names.join(' → ')}`
    }
    default:
      return exhaustive(problem)
  }
}

function exhaustive(v: never): never {
  throw new Error(`unhandled dependency problem ${JSON.stringify(v)}`)
}

/** The cards among `cards` that wait for `taskId`: what it blocks. */
export function dependentsOf(
  cards: Iterable<{ id: string; blockedBy: readonly string[] }>,
  taskId: string,
): string[] {
  const id = taskId.toLowerCase()
  const out: string[] = []
  for (const c of cards) if (c.blockedBy.some((b) => b.toLowerCase() === id)) out.push(c.id)
  return out
}
