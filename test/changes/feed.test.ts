import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { Db } from '../../persistence/types.ts'
import { isoFromMicros, readChangePage } from '../../server/changes/feed.ts'
import { freshDb, STORAGES, type TestDb } from '../support/storage.ts'

/**
 * The cursor arithmetic on crafted change rows: timestamps an hour in the past, so the
 * safe point is well past them and every page boundary comes from the rows themselves.
 */
describe.each(STORAGES)('change feed pages (%s)', (kind) => {
  let storage: TestDb
  let db: Db
  const base = (Date.now() - 3_600_000) * 1000

  beforeAll(async () => {
    storage = await freshDb(kind)
    db = storage.db
  })
  afterAll(() => storage.drop())

  async function insert(
    orgId: string,
    rows: { kind: string; id: string; at: number; via?: string }[],
  ): Promise<void> {
    for (const r of rows) {
      await db.query(
        `insert into changes (org_id, kind, entity_id, changed_at, via_column)
         values ($1, $2, $3, $4::text::timestamptz, $5)`,
        [orgId, r.kind, r.id, isoFromMicros(r.at), r.via ?? null],
      )
    }
  }

  const page = (orgId: string, since: number, limit: number) =>
    db.transaction((tx) => readChangePage(tx, orgId, isoFromMicros(since), limit))

  /** Follows the feed from `since` until a page is not truncated. */
  async function all(orgId: string, since: number, limit: number) {
    const pages = []
    let cursor = isoFromMicros(since)
    for (let i = 0; i < 100; i++) {
      const p = await db.transaction((tx) => readChangePage(tx, orgId, cursor, limit))
      pages.push(p)
      if (!p.truncated) return pages
      expect(p.cursor > cursor, 'the cursor moves forward').toBe(true)
      cursor = p.cursor
    }
    throw new Error('the feed did not come to an end')
  }

  test('a cursor keeps microseconds: changes a microsecond apart are each delivered, none skipped', async () => {
    const orgId = randomUUID()
    const ids = Array.from({ length: 6 }, () => randomUUID())
    await insert(
      orgId,
      ids.map((id, i) => ({ kind: 'task', id, at: base + i })),
    )
    const pages = await all(orgId, base, 1)
    expect(pages.flatMap((p) => p.ids.tasks)).toEqual(ids)
    expect(pages[0]?.cursor).toBe(isoFromMicros(base + 1))
  })

  test('since is inclusive', async () => {
    const orgId = randomUUID()
    const id = randomUUID()
    await insert(orgId, [{ kind: 'comment', id, at: base + 500 }])
    expect((await page(orgId, base + 500, 10)).ids.comments).toEqual([id])
    expect((await page(orgId, base + 501, 10)).ids.comments).toEqual([])
  })

  test('a cut never splits the changes of one timestamp', async () => {
    const orgId = randomUUID()
    const [a, b, c, d] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()] as const
    await insert(orgId, [
      { kind: 'task', id: a, at: base + 10 },
      { kind: 'task', id: b, at: base + 20 },
      { kind: 'task', id: c, at: base + 20 },
      { kind: 'task', id: d, at: base + 30 },
    ])
    const pages = await all(orgId, base, 2)
    expect(pages.map((p) => p.ids.tasks)).toEqual([[a], [b, c], [d]])
    expect(pages[0]).toMatchObject({ truncated: true, cursor: isoFromMicros(base + 20) })
  })

  test('one write that changed more entities than the limit comes whole instead of stalling', async () => {
    const orgId = randomUUID()
    const ids = Array.from({ length: 5 }, () => randomUUID()).sort()
    await insert(
      orgId,
      ids.map((id) => ({ kind: 'column', id, at: base + 100 })),
    )
    const first = await page(orgId, base + 100, 2)
    expect(first.ids.columns.sort()).toEqual(ids)
    expect(first.cursor).toBe(isoFromMicros(base + 101))
    expect((await page(orgId, base + 101, 2)).ids.columns).toEqual([])
  })

  test('an entity changed several times is listed once, at its first change in the page', async () => {
    const orgId = randomUUID()
    const [a, b] = [randomUUID(), randomUUID()]
    await insert(orgId, [
      { kind: 'claim', id: a, at: base + 1 },
      { kind: 'claim', id: b, at: base + 2 },
      { kind: 'claim', id: a, at: base + 3 },
    ])
    expect((await page(orgId, base, 10)).ids.claims).toEqual([a, b])
  })

  test('each list has its own limit, and cards re-prioritised by a fire have theirs', async () => {
    const orgId = randomUUID()
    const column = randomUUID()
    const direct = [randomUUID(), randomUUID()]
    const fire = [randomUUID(), randomUUID(), randomUUID()].sort()
    const comments = [randomUUID(), randomUUID()]
    await insert(orgId, [
      ...direct.map((id, i) => ({ kind: 'task', id, at: base + i })),
      ...comments.map((id, i) => ({ kind: 'comment', id, at: base + i })),
      { kind: 'column', id: column, at: base + 50 },
      ...fire.map((id) => ({ kind: 'task', id, at: base + 50, via: column })),
    ])
    const p = await page(orgId, base, 2)
    expect(p.ids.tasks).toEqual(direct)
    expect(p.ids.comments).toEqual(comments)
    expect(p.ids.columns).toEqual([column])
    expect(p.ids.fireTasks.sort()).toEqual(fire)
    // The fire's three cards filled their list of two: the page says so, and nothing is left.
    expect(p).toMatchObject({ truncated: true, cursor: isoFromMicros(base + 51) })
    expect((await page(orgId, base + 51, 2)).ids).toMatchObject({ tasks: [], fireTasks: [] })
  })

  test('rows of another organisation are never read', async () => {
    const orgId = randomUUID()
    await insert(randomUUID(), [{ kind: 'task', id: randomUUID(), at: base + 7 }])
    expect((await page(orgId, base, 10)).ids.tasks).toEqual([])
  })

  test('without since: nothing, and a cursor about one second behind the database clock', async () => {
    const orgId = randomUUID()
    await insert(orgId, [{ kind: 'task', id: randomUUID(), at: base }])
    const p = await db.transaction((tx) => readChangePage(tx, orgId, undefined, 10))
    expect(p.ids.tasks).toEqual([])
    const [row] = await db.query<{ now: Date }>('select clock_timestamp() as now')
    const lag = (row?.now.getTime() ?? 0) - Date.parse(p.cursor)
    expect(lag).toBeGreaterThanOrEqual(1000)
    expect(lag).toBeLessThan(10_000)
  })
})
