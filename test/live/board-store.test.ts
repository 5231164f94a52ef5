import { describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { BoardStore } from '../../client/src/board/board-store.ts'
import { boardMaps, taskMap } from '../../shared/board-doc.ts'
import { POSITION_STEP } from '../../shared/constants.ts'
import { EMPTY_STATS } from '../../shared/records.ts'

/**
 * A board document as the server writes it: three columns, cards spread over them in an
 * order their positions (not their insertion) decide, one archived, one waiting for
 * another, and a live claim on one.
 */
function boardUpdate(): {
  update: Uint8Array
  /** The columns alone, as they were before any card. */
  columnsOnly: Uint8Array
  columns: string[]
  ids: string[]
} {
  const doc = new Y.Doc()
  const maps = boardMaps(doc)
  const columns = ['Backlog', 'Doing', 'Done'].map((title, i) => {
    const id = crypto.randomUUID()
    const m = new Y.Map<unknown>()
    m.set('title', title)
    m.set('position', (i + 1) * POSITION_STEP)
    maps.columns.set(id, m)
    return id
  })
  const columnsOnly = Y.encodeStateAsUpdate(doc)
  const ids = Array.from({ length: 60 }, () => crypto.randomUUID())
  doc.transact(() => {
    ids.forEach((id, i) => {
      maps.tasks.set(
        id,
        taskMap({
          columnId: columns[i % 3] as string,
          projectId: null,
          title: `Card ${i}`,
          type: 'chore',
          priority: null,
          tags: i % 4 === 0 ? [`tag${i % 3}`] : [],
          blockedBy: i === 7 ? [ids[8] as string] : [],
          assigneeIds: [],
          // Reversed: the first written is the last shown.
          position: (60 - i) * POSITION_STEP,
          createdAt: '2026-01-01T00:00:00.000Z',
          updatedAt: '2026-01-01T00:00:00.000Z',
          archivedAt: i === 5 ? '2026-01-02T00:00:00.000Z' : null,
          createdByEmail: 'a@example.com',
          stats: EMPTY_STATS,
        }),
      )
    })
    maps.claims.set(
      ids[3] as string,
      {
        taskId: ids[3] as string,
        keyId: 'k1',
        agentName: 'worker',
        house: null,
        generation: null,
        isSubChild: false,
        status: 'working',
        note: null,
        startedAt: '2026-01-01T00:00:00.000Z',
        updatedAt: '2026-01-01T00:00:00.000Z',
        expiresAt: new Date(Date.now() + 3_600_000).toISOString(),
        isLive: true,
        holder: 'worker',
        releasedAt: null,
      } as never,
    )
  })
  return { update: Y.encodeStateAsUpdate(doc), columnsOnly, columns, ids }
}

/** What the board shows: each column's cards in order, and every card as read. */
function shown(store: BoardStore, columns: string[], ids: string[]) {
  return {
    columns: columns.map((c) => store.cardsOf(c).ids),
    cards: ids.map((id) => store.card(id)),
    tags: store.tags(),
    blocked: ids.filter((id) => store.card(id)?.blocked),
  }
}

describe('the board store', () => {
  test('a board that arrives whole (first sync, the device copy) reads the same as one read when the store starts, and as one arriving card by card', () => {
    const { update, columns, ids } = boardUpdate()

    const whole = new BoardStore(new Y.Doc())
    Y.applyUpdate(whole.doc, update)

    const startedOnIt = new Y.Doc()
    Y.applyUpdate(startedOnIt, update)
    const atStart = new BoardStore(startedOnIt)

    // Card by card: the same cards, each written on its own after the first.
    const source = new Y.Doc()
    Y.applyUpdate(source, update)
    const oneByOne = new BoardStore(new Y.Doc())
    const sourceMaps = boardMaps(source)
    const targetMaps = boardMaps(oneByOne.doc)
    oneByOne.doc.transact(() => {
      sourceMaps.columns.forEach((m, id) => {
        targetMaps.columns.set(id, m.clone())
      })
    })
    for (const id of ids) {
      oneByOne.doc.transact(() => {
        targetMaps.tasks.set(id, (sourceMaps.tasks.get(id) as Y.Map<unknown>).clone())
        const claim = sourceMaps.claims.get(id)
        if (claim) targetMaps.claims.set(id, claim)
      })
    }

    const expected = shown(atStart, columns, ids)
    expect(shown(whole, columns, ids)).toEqual(expected)
    expect(shown(oneByOne, columns, ids)).toEqual(expected)
    // The order is the positions', the archived card is off its column, and the claim and
    // the blocker were read with the cards.
    expect(expected.columns[0]?.[0]).toBe(ids[57])
    expect(expected.columns.flat()).not.toContain(ids[5])
    expect(expected.cards[3]?.claim?.holder).toBe('worker')
    expect(expected.blocked).toEqual([ids[7]])
  })

  test('a board that arrives whole notifies every column, the layout, the tags, and whoever already watches a card or its dependencies', () => {
    const { update, columnsOnly, columns, ids } = boardUpdate()
    const store = new BoardStore(new Y.Doc())
    // The columns first (each new column notifies its list), then every card at once.
    Y.applyUpdate(store.doc, columnsOnly)
    const heard = new Map<string, number>()
    const topics = [
      ...columns.map((c) => `cards:${c}`),
      'layout',
      'tags',
      `card:${ids[3]}`,
      `deps:${ids[8]}`,
    ]
    for (const topic of topics) {
      store.subscribe(topic, () => heard.set(topic, (heard.get(topic) ?? 0) + 1))
    }
    const depsBefore = store.depsVersion(ids[8] as string)
    Y.applyUpdate(store.doc, update)
    // Each once, in the one transaction the board arrived in.
    expect(Object.fromEntries(heard)).toEqual(Object.fromEntries(topics.map((t) => [t, 1])))
    expect(store.depsVersion(ids[8] as string)).toBeGreaterThan(depsBefore)
    expect(store.card(ids[3] as string)?.claim?.holder).toBe('worker')

    // Then edits are read card by card again: a retitle notifies that card and its column.
    heard.clear()
    const card = boardMaps(store.doc).tasks.get(ids[3] as string) as Y.Map<unknown>
    card.set('title', 'Renamed')
    expect(store.card(ids[3] as string)?.title).toBe('Renamed')
    expect([...heard.keys()].sort()).toEqual([`card:${ids[3]}`, `cards:${columns[0]}`].sort())
  })
})
