import { randomUUID } from 'node:crypto'
import { RATE_WINDOW_MS, rateBudgets } from '../../server/rate-limit/budgets.ts'
import { RateLimiter } from '../../server/rate-limit/limiter.ts'
import { freshDb, type StorageKind } from '../support/storage.ts'
import { line, time } from './stats.ts'

/**
 * What a request's rate charge costs as a key's log grows: the exact sliding log keeps one
 * entry per request of the last minute, so a fleet with a quota of thousands a minute per
 * key carries logs of thousands (kept a row per second, migration 024). 1×, 10× and 50× the default quota's full log, against a
 * log of one request (the baseline), each charged while nothing leaves the window (the
 * steady case: appended) and while one request leaves it at each charge (trimmed).
 */

const N = 300
const SIZES = [240, 2_400, 12_000]

async function storageRun(kind: StorageKind, log: (l: string) => void) {
  const storage = await freshDb(kind)
  try {
    let now = 1_000_000_000
    const limiter = new RateLimiter(
      storage.db,
      { now: () => now },
      rateBudgets({ perKey: 1_000_000, imagesPerOrg: 30 }),
    )
    const orgId = randomUUID()
    const charge = (keyId: string) => limiter.charge({ id: keyId, orgId }, 'whoami')
    log(`\n### ${kind === 'postgres' ? 'real Postgres' : 'PGlite'}`)

    // A log of one: each charge a minute after the last, which leaves the window.
    const alone = randomUUID()
    const baseline = await time(N, async () => {
      now += RATE_WINDOW_MS + 1
      await charge(alone)
    })
    log(line('baseline: a charge with one request in the log', baseline))

    for (const size of SIZES) {
      const keyId = randomUUID()
      // The log as `size` requests a millisecond apart would have left it, the newest now.
      now += RATE_WINDOW_MS + 1
      const first = now - size + 1
      await storage.db.query(
        `insert into rate_seconds (bucket, second, hits)
         select $1, ($2::bigint + g) / 1000, array_agg($2::bigint + g order by g)
           from generate_series(0, $3::int - 1) g group by ($2::bigint + g) / 1000`,
        [`key:${keyId}`, first, size],
      )
      const appended = await time(N, async () => {
        now += 1
        await charge(keyId)
      })
      log(line(`${size.toLocaleString('en')} in the log, appended`, appended, baseline))
      // The window's edge reaches the log: from here each charge drops its oldest request.
      now = first + RATE_WINDOW_MS
      const trimmed = await time(N, async () => {
        now += 1
        await charge(keyId)
      })
      log(line(`${size.toLocaleString('en')} in the log, one leaving`, trimmed, baseline))
    }
  } finally {
    await storage.drop()
  }
}

export async function run(log: (l: string) => void) {
  const stores = (process.env.BENCH_STORAGES ?? 'postgres,pglite').split(',') as StorageKind[]
  for (const kind of stores) await storageRun(kind, log)
}
