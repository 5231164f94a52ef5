import { createApp } from '../../server/app.ts'
import { loadConfig } from '../../server/config.ts'
import type { Person } from '../support/client.ts'
import { Agent } from '../support/client.ts'
import type { StorageKind } from '../support/storage.ts'
import { benchStorage } from './harness.ts'
import { seedOrg, settle } from './history-seed.ts'
import { line, time } from './stats.ts'

/**
 * What people read of what agents wrote (issue 32), on an organisation with a long history
 * (the growth bench's 50×: 50,000 cards, 48,000 of them archived after comments and
 * claims, every step recorded in card_history) beside a small one (200 cards, the
 * baseline): a card's history through the app route (the first page of any card, and
 * pages deep into one card with 2,000 events of its own), and search as you type (each
 * prefix of a word, as the search box sends it, archived cards excluded and included).
 * `BENCH_STORAGES=postgres,pglite` picks the storages (Postgres alone by default: PGlite
 * seeds 50,000 cards slowly).
 */
const BIG = {
  onBoard: 2_000,
  commentsOnBoard: 1,
  archived: 48_000,
  commentsPerArchived: 1,
  claimedArchived: 10_000,
}
const SMALL = {
  onBoard: 200,
  commentsOnBoard: 1,
  archived: 0,
  commentsPerArchived: 0,
  claimedArchived: 0,
}
const HOT_EVENTS = 2_000
const SAMPLES = 300

export async function run(log: (line: string) => void): Promise<void> {
  const kinds = (process.env.BENCH_STORAGES ?? 'postgres').split(',') as StorageKind[]
  for (const kind of kinds) await storageRun(kind, log)
}

async function storageRun(kind: StorageKind, log: (line: string) => void): Promise<void> {
  log(`\n### ${kind}`)
  const storage = await benchStorage(kind)
  const app = await createApp({
    ...loadConfig({ ...process.env, ...storage.env }),
    port: 0,
    host: '127.0.0.1',
    logLevel: 'error',
    scryptN: 1024,
    // Every person of the bench signs up from 127.0.0.1; the hot card's 2,000 changes come
    // from one key.
    signupsPerAddress: 1_000_000,
    rateLimitPerKey: 1_000_000,
  })
  try {
    const url = await app.listen()
    const small = await seedOrg(app, url, SMALL)
    const t0 = performance.now()
    const big = await seedOrg(app, url, BIG)
    await app.live.flushPeople()
    await settle(app)
    log(`  seeded 50,000 cards in ${((performance.now() - t0) / 1000).toFixed(0)} s`)

    // One card with a long history of its own: 2,000 changes by an agent.
    const agent = new Agent(url, big.key)
    const hot = big.onBoard[0] as string
    for (let i = 0; i < HOT_EVENTS; i++) {
      await agent.ok('update_task', { taskId: hot, title: `Hot card, revision ${i}` })
    }
    const [rows] = await app.db.query<{ n: number }>(
      'select count(*)::int as n from card_history where org_id = $1',
      [big.orgId],
    )
    log(`  card_history rows of the organisation: ${rows?.n.toLocaleString('en')}`)

    const history = (who: Person, orgId: string, taskId: string, query = '') =>
      who.request('GET', `/api/app/orgs/${orgId}/cards/${taskId}/history?limit=50${query}`)
    const pick = (ids: string[], i: number) => ids[(i * 7919) % ids.length] as string
    const ok = async (p: Promise<{ status: number }>) => {
      const res = await p
      if (res.status !== 200) throw new Error(`status ${res.status}`)
    }

    const baseline = await time(SAMPLES, (i) =>
      ok(history(small.owner, small.orgId, pick(small.onBoard, i))),
    )
    log(line('history, first page, small organisation (baseline)', baseline))
    const all = [...big.onBoard, ...big.archived]
    log(
      line(
        'history, first page, any card of the long history',
        await time(SAMPLES, (i) => ok(history(big.owner, big.orgId, pick(all, i)))),
        baseline,
      ),
    )
    // Cursors spread through the hot card's 2,000 events.
    const cursors: string[] = []
    let cursor: string | null = null
    do {
      const res: { body: { nextCursor: string | null } } = await history(
        big.owner,
        big.orgId,
        hot,
        cursor ? `&cursor=${cursor}` : '',
      )
      cursor = res.body.nextCursor
      if (cursor) cursors.push(cursor)
    } while (cursor)
    log(
      line(
        `history, pages of a card with ${HOT_EVENTS.toLocaleString('en')} events`,
        await time(SAMPLES, (i) =>
          ok(history(big.owner, big.orgId, hot, `&cursor=${cursors[i % cursors.length]}`)),
        ),
        baseline,
      ),
    )

    // Search as you type: every prefix of the words people look for.
    const typed = ['f', 'fl', 'fla', 'flak', 'flaky', 'flaky t', 'flaky te', 'flaky test']
      .concat(['l', 'lo', 'log', 'logi', 'login', 'login r', 'login retry'])
      .concat(['c', 'ca', 'car', 'card 4', 'card 41', 'card 417'])
    const search = (who: Person, orgId: string, q: string, archived: boolean) =>
      who.request(
        'GET',
        `/api/app/orgs/${orgId}/search?q=${encodeURIComponent(q)}&archived=${archived}&limit=12`,
      )
    const searchBase = await time(SAMPLES, (i) =>
      ok(search(small.owner, small.orgId, typed[i % typed.length] as string, false)),
    )
    log(line('search as you type, 200 cards (baseline)', searchBase))
    for (const archived of [false, true]) {
      log(
        line(
          `search as you type, 50,000 cards${archived ? ', archived too' : ' (2,000 on the board)'}`,
          await time(SAMPLES, (i) =>
            ok(search(big.owner, big.orgId, typed[i % typed.length] as string, archived)),
          ),
          searchBase,
        ),
      )
    }
  } finally {
    await app.close()
    await storage.drop()
  }
}
