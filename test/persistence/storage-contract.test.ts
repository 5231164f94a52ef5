import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { migrate } from '../../persistence/migrate.ts'
import type { Db } from '../../persistence/types.ts'
import {
  appendUpdate,
  compact,
  type Encoded,
  loadInto,
  snapshotOf,
  storedBeyond,
} from '../../server/live/doc-store.ts'
import { freshDb, STORAGES, type TestDb } from '../support/storage.ts'

/** One contract, every storage: the same SQL must behave the same on PGlite and Postgres. */
describe.each(STORAGES)('storage contract (%s)', (kind) => {
  let t: TestDb
  let db: Db

  beforeAll(async () => {
    t = await freshDb(kind)
    db = t.db
  })
  afterAll(() => t.drop())

  test('migrations are recorded and applying them again changes nothing', async () => {
    const applied = await db.query<{ name: string }>(
      'select name from schema_migrations order by name',
    )
    expect(applied.map((r) => r.name)).toContain('001_core.sql')
    expect(await migrate(db)).toEqual([])
  })

  test('timestamps come back as Date, bigint ids as numbers, bytea as bytes', async () => {
    await appendUpdate(db, 'contract/types', new Uint8Array([1, 2, 3]))
    const [row] = await db.query<{ id: unknown; data: unknown; created_at: unknown }>(
      "select id, data, created_at from doc_updates where doc_name = 'contract/types'",
    )
    expect(typeof row?.id).toBe('number')
    expect(row?.created_at).toBeInstanceOf(Date)
    expect(row?.data).toBeInstanceOf(Uint8Array)
    expect(Array.from(row?.data as Uint8Array)).toEqual([1, 2, 3])
  })

  test('the lane runs statements on the same database: it sees what the pool committed, and the other way round', async () => {
    await db.query('create table lane_check (n int)')
    await db.query('insert into lane_check values (1)')
    expect(await db.lane.query('select n from lane_check')).toEqual([{ n: 1 }])
    await Promise.all(
      [2, 3, 4].map((n) => db.lane.query('insert into lane_check values ($1)', [n])),
    )
    expect(await db.query('select n from lane_check order by n')).toEqual(
      [1, 2, 3, 4].map((n) => ({ n })),
    )
  })

  test.runIf(kind === 'postgres')(
    "the lane's statements commit without waiting for the WAL flush; the pool's (writes) wait for it",
    async () => {
      const [lane] = await db.lane.query<{ synchronous_commit: string }>('show synchronous_commit')
      const [pool] = await db.query<{ synchronous_commit: string }>('show synchronous_commit')
      expect(lane?.synchronous_commit).toBe('off')
      expect(pool?.synchronous_commit).toBe('on')
    },
  )

  test("a transaction's final statement commits with the ones before it, or alone, and nothing may follow it", async () => {
    await db.query('create table final_check (n int check (n > 0))')
    await db.transaction(async (tx) => {
      void tx.query('insert into final_check values (1)')
      void tx.final('insert into final_check values (2)')
    })
    await db.transaction(async (tx) => {
      void tx.final('insert into final_check values (3)')
      expect(() => tx.query('insert into final_check values (4)')).toThrow(/after the final/)
    })
    // A final statement that fails, alone or after others, leaves nothing behind.
    await expect(
      db.transaction(async (tx) => {
        void tx.final('insert into final_check values (-1)')
      }),
    ).rejects.toThrow(/check/)
    await expect(
      db.transaction(async (tx) => {
        void tx.query('insert into final_check values (5)')
        void tx.final('insert into final_check values (-1)')
      }),
    ).rejects.toThrow(/check/)
    expect(await db.query('select n from final_check order by n')).toEqual(
      [1, 2, 3].map((n) => ({ n })),
    )
  })

  test('a transaction that throws leaves nothing behind', async () => {
    await expect(
      db.transaction(async (tx) => {
        await tx.query(
          "insert into organizations (id, name) values ('00000000-0000-4000-8000-000000000001', 'gone')",
        )
        throw new Error('boom')
      }),
    ).rejects.toThrow('boom')
    expect(await db.query("select 1 from organizations where name = 'gone'")).toEqual([])
  })

  test('a transaction that resolves commits every statement', async () => {
    await db.transaction(async (tx) => {
      await Promise.all([
        tx.query(
          "insert into organizations (id, name) values ('00000000-0000-4000-8000-000000000002', 'kept a')",
        ),
        tx.query(
          "insert into organizations (id, name) values ('00000000-0000-4000-8000-000000000003', 'kept b')",
        ),
      ])
    })
    const rows = await db.query(
      "select name from organizations where name like 'kept %' order by name",
    )
    expect(rows).toEqual([{ name: 'kept a' }, { name: 'kept b' }])
  })

  test('array parameters bind as Postgres arrays', async () => {
    const rows = await db.query<{ n: number }>(
      'select count(*)::int as n from unnest($1::text[]) as t',
      [['a', 'b', 'c']],
    )
    expect(rows[0]?.n).toBe(3)
  })

  test('a document loads back from its appended updates', async () => {
    const source = new Y.Doc()
    const updates: Uint8Array[] = []
    source.on('update', (u: Uint8Array) => updates.push(u))
    for (let i = 0; i < 10; i++) source.getMap('m').set(`k${i}`, i)
    for (const u of updates) await appendUpdate(db, 'contract/doc', u)
    const copy = new Y.Doc()
    const heard: Uint8Array[] = []
    copy.on('update', (u: Uint8Array) => heard.push(u))
    const loaded = await loadInto(db, 'contract/doc', copy)
    expect(loaded.rows).toHaveLength(10)
    expect(copy.getMap('m').toJSON()).toEqual(source.getMap('m').toJSON())
    // Nothing is told of the load itself (there is nobody to tell), and what follows is.
    expect(heard).toEqual([])
    copy.getMap('m').set('after', true)
    expect(heard).toHaveLength(1)
  })

  test('compaction replaces the rows by one snapshot holding the same state', async () => {
    const source = new Y.Doc()
    const updates: Uint8Array[] = []
    source.on('update', (u: Uint8Array) => updates.push(u))
    for (let i = 0; i < 300; i++) source.getArray('a').push([i])
    for (const u of updates) await appendUpdate(db, 'contract/compact', u)
    await compact(db, 'contract/compact', 2, async (u) => snapshotOf(u))
    const rows = await db.query("select id from doc_updates where doc_name = 'contract/compact'")
    expect(rows).toHaveLength(1)
    const copy = new Y.Doc()
    await loadInto(db, 'contract/compact', copy)
    expect(copy.getArray('a').toJSON()).toEqual(source.getArray('a').toJSON())
  })

  test('rows appended after a compaction read are kept alongside the snapshot', async () => {
    const source = new Y.Doc()
    const updates: Uint8Array[] = []
    source.on('update', (u: Uint8Array) => updates.push(u))
    source.getMap('m').set('a', 1)
    source.getMap('m').set('b', 2)
    for (const u of updates) await appendUpdate(db, 'contract/later', u)
    await compact(db, 'contract/later', 2, async (u) => snapshotOf(u))
    source.getMap('m').set('c', 3)
    await appendUpdate(db, 'contract/later', updates.at(-1) as Uint8Array)
    const copy = new Y.Doc()
    await loadInto(db, 'contract/later', copy)
    expect(copy.getMap('m').toJSON()).toEqual({ a: 1, b: 2, c: 3 })
  })

  test('a load applies the snapshot first, then the rows appended while it was made, though their ids are lower', async () => {
    const source = new Y.Doc()
    source.getMap('m').set('a', 1)
    source.getMap('m').set('b', 2)
    const snapshot = Y.encodeStateAsUpdate(source)
    const later: Uint8Array[] = []
    source.on('update', (u: Uint8Array) => later.push(u))
    // Built on the snapshot's items (an overwrite), stored while the compaction ran.
    source.getMap('m').set('a', 3)
    await appendUpdate(db, 'contract/order', later[0] as Uint8Array)
    await appendUpdate(db, 'contract/order', snapshot, 2)
    const copy = new Y.Doc()
    const loaded = await loadInto(db, 'contract/order', copy)
    expect(loaded.rows.map((r) => r.level)).toEqual([2, 0])
    expect(copy.getMap('m').toJSON()).toEqual({ a: 3, b: 2 })
    expect(copy.store.pendingStructs).toBeNull()
  })

  test('a snapshot is stored in update format 2, smaller than format 1, and loads with the same state', async () => {
    const source = new Y.Doc()
    const updates: Uint8Array[] = []
    source.on('update', (u: Uint8Array) => updates.push(u))
    const cards = source.getMap<Y.Map<unknown>>('tasks')
    for (let i = 0; i < 200; i++) {
      const card = new Y.Map<unknown>()
      cards.set(`card-${i}`, card)
      for (const [k, v] of Object.entries({ title: `Card ${i}`, columnId: 'c1', position: i })) {
        card.set(k, v)
      }
    }
    for (const u of updates) await appendUpdate(db, 'contract/v2', u)
    await compact(db, 'contract/v2', 2, async (u) => snapshotOf(u))
    const [row] = await db.query<{ encoding: number; bytes: number }>(
      "select encoding, length(data)::int as bytes from doc_updates where doc_name = 'contract/v2'",
    )
    expect(row?.encoding).toBe(2)
    expect(row?.bytes).toBeLessThan(0.85 * Y.encodeStateAsUpdate(source).length)
    const copy = new Y.Doc()
    await loadInto(db, 'contract/v2', copy)
    expect(copy.getMap('tasks').toJSON()).toEqual(cards.toJSON())
  })

  test('rows of both formats load together, and what storage holds beyond a copy is answered in format 1', async () => {
    const source = new Y.Doc()
    source.getMap('m').set('a', 1)
    // A snapshot an earlier version stored (format 1, as every row before migration 027).
    await appendUpdate(db, 'contract/mixed', Y.encodeStateAsUpdate(source), 2)
    const known = Y.encodeStateVector(source)
    source.getMap('m').set('b', 2)
    await appendUpdate(
      db,
      'contract/mixed',
      { data: Y.encodeStateAsUpdateV2(source, known), v2: true },
      2,
    )
    const later: Uint8Array[] = []
    source.on('update', (u: Uint8Array) => later.push(u))
    source.getMap('m').set('a', 3)
    await appendUpdate(db, 'contract/mixed', later[0] as Uint8Array)

    const copy = new Y.Doc()
    const loaded = await loadInto(db, 'contract/mixed', copy)
    expect(loaded.rows).toHaveLength(3)
    expect(loaded.missing).toEqual([])
    expect(copy.getMap('m').toJSON()).toEqual({ a: 3, b: 2 })

    // A copy holding only the first row learns the rest from one update in format 1 (what
    // a reload patches a live copy with, and what providers are sent).
    const behind = new Y.Doc()
    const [row] = await db.query<{ data: Uint8Array }>(
      "select data from doc_updates where doc_name = 'contract/mixed' order by id limit 1",
    )
    Y.applyUpdate(behind, row?.data as Uint8Array)
    expect(behind.getMap('m').toJSON()).toEqual({ a: 1 })
    const beyond = await storedBeyond(db, 'contract/mixed', behind, 0)
    expect(beyond).toBeInstanceOf(Uint8Array)
    Y.applyUpdate(behind, beyond as Uint8Array)
    expect(behind.store.pendingStructs).toBeNull()
    expect(behind.getMap('m').toJSON()).toEqual({ a: 3, b: 2 })
  })
})

/**
 * Several processes share one Postgres, and each compacts the documents it holds: one
 * finding a document under compaction elsewhere leaves it alone at once (it used to wait
 * for the other's replay, seconds on a big board, until its lock timeout failed it).
 * PGlite is one process's own database: no one else compacts there.
 */
describe('compaction beside another process (postgres)', () => {
  let t: TestDb

  beforeAll(async () => {
    t = await freshDb('postgres')
  })
  afterAll(() => t.drop())

  test('a document being compacted elsewhere is left as it is, without waiting, and compacts once that is done', async () => {
    const source = new Y.Doc()
    const updates: Uint8Array[] = []
    source.on('update', (u: Uint8Array) => updates.push(u))
    for (let i = 0; i < 20; i++) source.getArray('a').push([i])
    for (const u of updates) await appendUpdate(t.db, 'contract/elsewhere', u)
    const rows = () =>
      t.db.query("select id from doc_updates where doc_name = 'contract/elsewhere'")

    let made = 0
    const make = async (u: Encoded[]) => {
      made++
      return snapshotOf(u)
    }
    const outcome = await t.db.transaction(async (tx) => {
      // The other process's compaction holds the document's lock.
      await tx.query('select pg_advisory_xact_lock(hashtext($1))', ['contract/elsewhere'])
      // Waiting for that lock here would wait for this very transaction (until the lock
      // timeout failed it): it answers at once instead.
      return compact(t.db, 'contract/elsewhere', 2, make)
    })
    expect(outcome).toBe('busy')
    expect(made).toBe(0)
    expect(await rows()).toHaveLength(20)

    expect(await compact(t.db, 'contract/elsewhere', 2, make)).toMatchObject({ replaced: 20 })
    expect(await rows()).toHaveLength(1)
    const copy = new Y.Doc()
    await loadInto(t.db, 'contract/elsewhere', copy)
    expect(copy.getArray('a').toJSON()).toEqual(source.getArray('a').toJSON())
  })
})
