import { randomUUID } from 'node:crypto'
import { afterEach, describe, expect, test } from 'vitest'
import { migrate } from '../../persistence/migrate.ts'
import { RATE_WINDOW_MS, rateBudgets } from '../../server/rate-limit/budgets.ts'
import { RateLimiter, sweepRateSeconds } from '../../server/rate-limit/limiter.ts'
import { freshDb, STORAGES, type TestDb } from '../support/storage.ts'

/**
 * The agent budgets' sliding log, a row per second (migration 024): exact at the window's
 * edge inside a second, rows that leave the window gone, and the logs kept before the
 * upgrade still counting after it.
 */

describe.each(STORAGES)('the rate log kept by the second (%s)', (kind) => {
  let storage: TestDb | undefined
  afterEach(async () => {
    await storage?.drop()
    storage = undefined
  })

  const limiterAt = (db: TestDb['db'], clock: { now: number }, perKey: number) =>
    new RateLimiter(db, { now: () => clock.now }, rateBudgets({ perKey, imagesPerOrg: 30 }))

  test('a request leaves the window exactly 60 s after it was made, also in the middle of a second, and Retry-After names the request that must leave', async () => {
    storage = await freshDb(kind)
    const clock = { now: 1_700_000_000_250 }
    const limiter = limiterAt(storage.db, clock, 3)
    const key = { id: randomUUID(), orgId: randomUUID() }
    // Three requests in three different seconds: 0.25 s, 1.5 s and 1.9 s in.
    expect((await limiter.charge(key, 'whoami')).allowed).toBe(true)
    clock.now += 1_250
    expect((await limiter.charge(key, 'whoami')).allowed).toBe(true)
    clock.now += 400
    expect((await limiter.charge(key, 'whoami')).allowed).toBe(true)
    // A minute after the first, less a millisecond: it is still in the window.
    clock.now = 1_700_000_000_250 + RATE_WINDOW_MS - 1
    const refused = await limiter.charge(key, 'whoami')
    expect(refused.allowed).toBe(false)
    expect(refused.states[0]).toMatchObject({ remaining: 0, exceeded: true })
    // The first request leaves the next millisecond: Retry-After rounds up to 1 s.
    expect(refused.states[0]?.retryAfterSeconds).toBe(1)
    clock.now += 1
    const next = await limiter.charge(key, 'whoami')
    expect(next.allowed).toBe(true)
    expect(next.states[0]?.remaining).toBe(0)
    // The next to leave is the second request, 1.25 s after the first: t counts to it.
    expect(next.states[0]?.resetSeconds).toBe(2)
  })

  test('a key gone quiet leaves no rows behind once its requests are out of every window', async () => {
    storage = await freshDb(kind)
    const clock = { now: 1_700_000_000_000 }
    const limiter = limiterAt(storage.db, clock, 1_000)
    const quiet = { id: randomUUID(), orgId: randomUUID() }
    const busy = { id: randomUUID(), orgId: randomUUID() }
    for (let i = 0; i < 30; i++) {
      await limiter.charge(quiet, 'whoami')
      clock.now += 333
    }
    const db = storage.db
    const rows = async (bucket: string) =>
      (
        await db.query<{ n: number }>(
          'select count(*)::int as n from rate_seconds where bucket = $1',
          [bucket],
        )
      )[0]?.n
    expect(await rows(`key:${quiet.id}`)).toBe(10)
    // A second is swept once it is wholly out: the last one ends within the second after.
    clock.now += RATE_WINDOW_MS + 1_000
    await limiter.charge(busy, 'whoami')
    expect(await sweepRateSeconds(storage.db, clock.now)).toBe(10)
    expect(await rows(`key:${quiet.id}`)).toBe(0)
    // A log still in the window is kept.
    expect(await rows(`key:${busy.id}`)).toBe(1)
    // A charge trims its own bucket: the busy key's old seconds go as it is charged.
    clock.now += RATE_WINDOW_MS + 1_000
    await limiter.charge(busy, 'whoami')
    expect(await rows(`key:${busy.id}`)).toBe(1)
  })

  test('the logs kept before the upgrade count after it: a key that spent its minute stays refused until the minute passes', async () => {
    storage = await freshDb(kind, { migrate: false })
    await migrate(storage.db, { upTo: '023_claims_try_lock.sql' })
    const now = 1_700_000_000_000
    const keyId = randomUUID()
    const orgId = randomUUID()
    // Three requests of the per-key log and one of an image budget, as 002's arrays held them.
    await storage.db.query(
      'insert into rate_limits (bucket, hits, allowed) values ($1, $2, true), ($3, $4, true), ($5, $6, true)',
      [
        `key:${keyId}`,
        [now - 30_000, now - 29_000, now - 1_000],
        `org:${orgId}:attach_screenshot`,
        [now - 5_000],
        'login:someone@example.com',
        [now - 2_000],
      ],
    )
    await migrate(storage.db)
    const clock = { now }
    const limiter = limiterAt(storage.db, clock, 3)
    const refused = await limiter.charge({ id: keyId, orgId }, 'whoami')
    expect(refused.allowed).toBe(false)
    expect(refused.states[0]?.retryAfterSeconds).toBe(30)
    clock.now = now + 30_001
    expect((await limiter.charge({ id: keyId, orgId }, 'whoami')).allowed).toBe(true)
    const screenshot = await limiter.charge({ id: randomUUID(), orgId }, 'attach_screenshot')
    expect(screenshot.states.find((s) => s.budget.name !== 'per-key')?.remaining).toBe(28)
    // The sign-in throttle's log stays where its code reads it.
    const login = await storage.db.query('select hits from rate_limits where bucket = $1', [
      'login:someone@example.com',
    ])
    expect(login).toHaveLength(1)
  })
})
