import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openDb } from '../../persistence/db.ts'
import type { Db } from '../../persistence/types.ts'
import { type App, createApp } from '../../server/app.ts'
import { readChangePage, STREAMS } from '../../server/changes/feed.ts'
import { boardDocName } from '../../shared/board-doc.ts'
import { testConfig } from '../claims/harness.ts'
import { freshDb, type TestDb } from '../support/storage.ts'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
const RUN_MS = 6_000

/**
 * On real Postgres (PGlite runs one transaction at a time): three server processes write
 * through the one write path and six more writers commit change rows on the service's
 * own connections, some holding their transaction open for well over a second (as a lock
 * wait or a slow fsync would), some rolling back. A follower pages through the feed with a
 * small limit the whole time. Every committed change must be in the union of its pages.
 * A naive "now minus one second" follower runs beside it and must miss some, which shows
 * the writers really do commit rows stamped behind such a cursor.
 */
describe('the change feed under concurrent writers (postgres)', () => {
  let storage: TestDb
  const apps: App[] = []
  const pools: Db[] = []

  beforeAll(async () => {
    storage = await freshDb('postgres')
    for (let i = 0; i < 3; i++) {
      const db = await openDb({ databaseUrl: storage.url, maxConnections: 8 })
      pools.push(db)
      const app = await createApp(testConfig(), { db })
      await app.listen()
      apps.push(app)
    }
  })
  afterAll(async () => {
    for (const app of apps) await app.close()
    for (const db of pools) await db.close()
    await storage.drop()
  })

  test('no committed change is ever missing from the union of polled pages', async () => {
    const orgId = randomUUID()
    const committed = new Set<string>()
    const rolledBack = new Set<string>()
    let slowCommits = 0
    let running = true
    const stopAt = Date.now() + RUN_MS

    /** One writer: a loop of writes, one in three held open 1.1–1.6 s, one in eight rolled back. */
    const writer = async (
      write: (body: (record: (id: string) => void) => Promise<void>) => Promise<void>,
    ) => {
      let n = 0
      while (Date.now() < stopAt) {
        n += 1
        const slow = n % 3 === 0
        const fail = n % 8 === 0
        const ids: string[] = []
        try {
          await write(async (record) => {
            for (let k = 0; k < 2; k++) {
              const id = randomUUID()
              ids.push(id)
              record(id)
            }
            await sleep(slow ? 1100 + Math.random() * 500 : Math.random() * 30)
            if (fail) throw new Error('rolled back on purpose')
          })
          for (const id of ids) committed.add(id)
          if (slow) slowCommits += 1
        } catch (error) {
          if (!fail) throw error
          for (const id of ids) rolledBack.add(id)
        }
      }
    }

    const viaWritePath = apps.map((app) =>
      writer((body) =>
        app.live.write(boardDocName(orgId), { type: 'server', orgId }, async (w) => {
          await body((id) => w.changed('task', id))
        }),
      ),
    )
    const db = pools[0] as Db
    const raw = [0, 1, 2, 3, 4, 5].map(() =>
      writer((body) =>
        db.transaction(async (tx) => {
          const ids: string[] = []
          await body((id) => ids.push(id))
          await tx.query(
            `insert into changes (org_id, kind, entity_id) select $1, 'comment', unnest($2::uuid[])`,
            [orgId, ids],
          )
        }),
      ),
    )

    const follower = pools[1] as Db
    const seen = new Set<string>()
    let cursor = (await follower.transaction((tx) => readChangePage(tx, orgId, undefined, 20)))
      .cursor
    let pages = 0
    const poll = async () => {
      const page = await follower.transaction((tx) => readChangePage(tx, orgId, cursor, 20))
      for (const s of STREAMS) for (const id of page.ids[s.name]) seen.add(id)
      cursor = page.cursor
      pages += 1
      return page
    }
    const following = (async () => {
      while (running) {
        const page = await poll()
        if (!page.truncated) await sleep(20)
      }
    })()

    const naiveSeen = new Set<string>()
    const naive = (async () => {
      let since = new Date(Date.now() - 1000).toISOString()
      while (running) {
        const rows = await follower.query<{ entity_id: string; until: string }>(
          `with c as (select clock_timestamp() - interval '1 second' as until)
           select ch.entity_id, c.until::text from c left join changes ch
             on ch.org_id = $1 and ch.changed_at >= $2::text::timestamptz and ch.changed_at < c.until`,
          [orgId, since],
        )
        for (const r of rows) if (r.entity_id) naiveSeen.add(r.entity_id)
        since = rows[0]?.until ?? since
        await sleep(20)
      }
    })()

    await Promise.all([...viaWritePath, ...raw])
    running = false
    await Promise.all([following, naive])
    // Catch up: follow until the cursor has passed everything the writers committed.
    const [end] = await follower.query<{ at: string }>(
      'select max(changed_at)::text as at from changes',
    )
    const deadline = Date.now() + 15_000
    for (;;) {
      const page = await poll()
      if (!page.truncated && Date.parse(page.cursor) > Date.parse(end?.at ?? '')) break
      if (Date.now() > deadline) throw new Error('the follower did not catch up')
      if (!page.truncated) await sleep(50)
    }

    expect(slowCommits).toBeGreaterThan(5)
    expect(committed.size).toBeGreaterThan(100)
    const missing = [...committed].filter((id) => !seen.has(id))
    expect(missing).toEqual([])
    expect([...rolledBack].filter((id) => seen.has(id))).toEqual([])
    expect(pages).toBeGreaterThan(50)
    const naiveMissing = [...committed].filter((id) => !naiveSeen.has(id))
    expect(naiveMissing.length, 'a plain "now minus one second" cursor skips rows').toBeGreaterThan(
      0,
    )
  }, 60_000)
})
