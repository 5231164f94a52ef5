import { describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { dominated } from '../../server/live/compaction.ts'
import { boardMaps, taskMap } from '../../shared/board-doc.ts'
import { CLEARLY_LIVE, liveItemBytes, rebuilt } from '../../shared/rebase.ts'
import { EMPTY_STATS } from '../../shared/records.ts'

/**
 * A snapshot is measured against what its document would weigh re-based, to tell when its
 * tombstones dominate it. Building that next generation costs a second copy of the
 * document; where the live items' bytes already say the snapshot is clearly not dominated,
 * they stand for it (compaction.worker.ts). These tests hold the estimate to the real thing.
 */

/** A board as agents leave it: cards written in one go, then stats and moves rewritten. */
function board(cards: number, archived: number, rewrites: number): Y.Doc {
  const doc = new Y.Doc()
  const { tasks } = boardMaps(doc)
  const ids = Array.from(
    { length: cards },
    (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
  )
  doc.transact(() => {
    for (const [i, id] of ids.entries()) {
      tasks.set(
        id,
        taskMap({
          columnId: 'c0c0c0c0-0000-4000-8000-000000000001',
          projectId: null,
          title: `Card ${i}: fix the retry in the login flow`,
          type: 'bug',
          priority: null,
          tags: ['backend'],
          blockedBy: [],
          assigneeIds: [],
          position: i,
          createdAt: '2026-11-27T10:00:00.000Z',
          updatedAt: '2026-11-27T10:00:00.000Z',
          archivedAt: null,
          createdByEmail: 'agent-7f3a@agents.corkboard.local',
          stats: EMPTY_STATS,
        }),
      )
    }
  })
  for (let r = 0; r < rewrites; r++) {
    for (const id of ids.slice(archived)) {
      const card = tasks.get(id) as Y.Map<unknown>
      card.set('stats', { ...EMPTY_STATS, commentCount: r + 1, lastCommentBy: 'agent' })
      card.set('updatedAt', `2026-11-27T11:00:0${r}.000Z`)
    }
  }
  for (const id of ids.slice(0, archived)) tasks.delete(id)
  return doc
}

const measured = (doc: Y.Doc) => ({
  snapshot: Y.encodeStateAsUpdate(doc).length,
  live: liveItemBytes(doc),
  rebased: Y.encodeStateAsUpdate(rebuilt('board', doc, 1)).length,
})

describe('measuring a snapshot against its next generation', () => {
  test("a board's live items weigh within 10% of its next generation, rewritten or not", () => {
    for (const doc of [board(300, 0, 0), board(300, 30, 3)]) {
      const { live, rebased } = measured(doc)
      expect(Math.abs(live - rebased) / rebased).toBeLessThan(0.1)
    }
  })

  test('a board dominated by tombstones is never taken as clearly live, so its next generation is built and measured', () => {
    const doc = board(2_000, 1_900, 2)
    const { snapshot, live, rebased } = measured(doc)
    expect(dominated(snapshot, rebased)).toBe(true)
    expect(snapshot).toBeGreaterThanOrEqual(CLEARLY_LIVE * live)
  })

  test('a board taken as clearly live is not dominated by its tombstones', () => {
    const doc = board(1_000, 100, 3)
    const { snapshot, live, rebased } = measured(doc)
    expect(snapshot).toBeLessThan(CLEARLY_LIVE * live)
    expect(dominated(snapshot, rebased)).toBe(false)
  })
})
