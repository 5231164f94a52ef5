import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { openDb } from '../../persistence/db.ts'
import type { Db } from '../../persistence/types.ts'
import { newApiKey } from '../../server/auth/api-key-format.ts'
import { rateBudgets } from '../../server/rate-limit/budgets.ts'
import { RateLimiter } from '../../server/rate-limit/limiter.ts'
import { type ClockServer, FakeClock, startClockServer } from '../claims/harness.ts'
import { Agent, Person, type Reply } from '../support/client.ts'
import { freshDb, STORAGES, type TestDb } from '../support/storage.ts'

const remaining = (res: Reply, policy = 'per-key') =>
  Number(new RegExp(`"${policy}";r=(\\d+)`).exec(res.headers.get('ratelimit') ?? '')?.[1])

/** Makes `n` allowed requests, a few at a time. */
async function spend(agent: Agent, n: number): Promise<void> {
  for (let done = 0; done < n; ) {
    const batch = Math.min(6, n - done)
    const replies = await Promise.all(Array.from({ length: batch }, () => agent.call('whoami')))
    for (const res of replies) {
      if (res.status !== 200) throw new Error(`${res.status} ${JSON.stringify(res.body)}`)
    }
    done += batch
  }
}

describe.each(STORAGES)('rate limits (%s)', (kind) => {
  let server: ClockServer
  let owner: Person
  let columnId: string

  beforeAll(async () => {
    server = await startClockServer(kind)
    owner = new Person(server.url)
    await owner.signUp()
    columnId = (await new Agent(server.url, await owner.createKey()).ok('list_columns')).columns[0]
      .id
  })
  afterAll(() => server.close())

  const freshAgent = async () => new Agent(server.url, await owner.createKey())

  test('every response carries RateLimit-Policy and RateLimit, and every request counts once, whatever it does', async () => {
    const agent = await freshAgent()
    const first = await agent.call('whoami')
    expect(first.headers.get('ratelimit-policy')).toBe('"per-key";q=240;w=60')
    expect(first.headers.get('ratelimit')).toBe('"per-key";r=239;t=60')
    const { map } = await agent.ok('create_map', { title: 'bulk' })
    const bulk = await agent.call('create_nodes', {
      mapId: map.id,
      nodes: Array.from({ length: 100 }, (_, i) => ({ text: `n${i}` })),
    })
    expect(bulk.status).toBe(200)
    expect(remaining(bulk)).toBe(237)
    const missing = await agent.call('get_task', { taskId: crypto.randomUUID() })
    expect(missing.status).toBe(404)
    expect(remaining(missing)).toBe(236)
    const unknown = await agent.call('no_such_action')
    expect(unknown.status).toBe(400)
    expect(remaining(unknown)).toBe(235)
    const anonymous = await fetch(`${server.url}/api/agent`, { method: 'POST', body: '{}' })
    expect(anonymous.status).toBe(401)
    expect(anonymous.headers.get('ratelimit-policy')).toBe('"per-key";q=240;w=60')
    const wrongMethod = await fetch(`${server.url}/api/agent`, { method: 'GET' })
    expect(wrongMethod.status).toBe(405)
    expect(wrongMethod.headers.get('ratelimit-policy')).toBe('"per-key";q=240;w=60')
  })

  test('the 241st request within a minute is a 429 naming the budget, with Retry-After, and runs nothing', async () => {
    const agent = await freshAgent()
    await spend(agent, 240)
    const refused = await agent.call('create_task', { columnId, title: 'over budget' })
    expect(refused.status).toBe(429)
    expect(refused.body.error).toMatch(/240 requests per minute per API key/)
    expect(refused.headers.get('retry-after')).toBe('60')
    expect(refused.headers.get('ratelimit')).toBe('"per-key";r=0;t=60')
    const board = await (await freshAgent()).ok('get_board')
    expect(board.tasks.some((t: { title: string }) => t.title === 'over budget')).toBe(false)
  })

  test('the window slides: a request comes back exactly 60 s after it was made, not at a fixed boundary', async () => {
    const agent = await freshAgent()
    await spend(agent, 120)
    server.clock.advance(30_000)
    await spend(agent, 120)
    expect((await agent.call('whoami')).status).toBe(429)
    server.clock.advance(29_999)
    const almost = await agent.call('whoami')
    expect(almost.status).toBe(429)
    expect(almost.headers.get('retry-after')).toBe('1')
    server.clock.advance(1)
    // The first 120 have left the window; the 120 made 30 s later still count.
    await spend(agent, 120)
    const refused = await agent.call('whoami')
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toBe('30')
  })

  test('a refused request does not count against the budget', async () => {
    const agent = await freshAgent()
    await spend(agent, 240)
    server.clock.advance(30_000)
    for (let i = 0; i < 10; i++) expect((await agent.call('whoami')).status).toBe(429)
    server.clock.advance(30_000)
    // The 240 have left the window; had the refused ten counted, they would still be in it.
    const res = await agent.call('whoami')
    expect(res.status).toBe(200)
    expect(remaining(res)).toBe(239)
  })

  test('each key has its own budget', async () => {
    const a = await freshAgent()
    const b = await freshAgent()
    await spend(a, 240)
    expect((await a.call('whoami')).status).toBe(429)
    const other = await b.call('whoami')
    expect(other.status).toBe(200)
    expect(remaining(other)).toBe(239)
  })

  test('attach_screenshot and set_node_image each have 30 a minute per organisation, shared by its keys, counted apart', async () => {
    const a = await freshAgent()
    const b = await freshAgent()
    const shot = (agent: Agent) =>
      agent.call('attach_screenshot', { taskId: crypto.randomUUID(), imageBase64: 'AAAA' })
    const first = await shot(a)
    expect(first.headers.get('ratelimit-policy')).toBe(
      '"per-key";q=240;w=60, "attach_screenshot-per-org";q=30;w=60',
    )
    expect(remaining(first, 'attach_screenshot-per-org')).toBe(29)
    for (let i = 1; i < 30; i++) expect((await shot(i % 2 ? b : a)).status).not.toBe(429)
    const keyLeft = remaining(await a.call('whoami'))
    const refused = await shot(b)
    expect(refused.status).toBe(429)
    expect(refused.body.error).toMatch(
      /attach_screenshot budget of 30 calls per minute per organisation/,
    )
    expect(refused.body.error).not.toMatch(/per API key/)
    // Refused by the organisation's budget, the request spent nothing of the key's.
    expect((await shot(a)).status).toBe(429)
    expect(remaining(await a.call('whoami'))).toBe(keyLeft - 1)
    const node = await a.call('set_node_image', {
      nodeId: crypto.randomUUID(),
      imageBase64: 'AAAA',
    })
    expect(node.status).not.toBe(429)
    expect(remaining(node, 'set_node_image-per-org')).toBe(29)
    server.clock.advance(60_000)
    expect((await shot(b)).status).not.toBe(429)
  })
})

describe.each(STORAGES)('the sliding log under concurrency (%s)', (kind) => {
  let storage: TestDb
  let db: Db
  let limiter: RateLimiter

  beforeAll(async () => {
    storage = await freshDb(kind)
    // A pool of its own, small: many requests contend for few rows, not for connections.
    db = storage.url ? await openDb({ databaseUrl: storage.url, maxConnections: 8 }) : storage.db
    limiter = new RateLimiter(db, new FakeClock(), rateBudgets({ perKey: 240, imagesPerOrg: 30 }))
  })
  afterAll(async () => {
    if (db !== storage.db) await db.close()
    await storage.drop()
  })

  test('300 requests of one key at once: exactly 240 allowed', async () => {
    const key = { id: crypto.randomUUID(), orgId: crypto.randomUUID() }
    const outcomes = await Promise.all(
      Array.from({ length: 300 }, () => limiter.charge(key, 'get_board')),
    )
    expect(outcomes.filter((o) => o.allowed)).toHaveLength(240)
  })

  test("50 screenshots at once from five keys of one organisation: exactly 30 allowed, and only those spend the keys' budgets", async () => {
    const orgId = crypto.randomUUID()
    const keys = Array.from({ length: 5 }, () => ({ id: crypto.randomUUID(), orgId }))
    const outcomes = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        limiter.charge(keys[i % 5] as (typeof keys)[number], 'attach_screenshot'),
      ),
    )
    expect(outcomes.filter((o) => o.allowed)).toHaveLength(30)
    let spent = 0
    for (const key of keys) {
      const after = await limiter.charge(key, 'get_board')
      spent += 240 - 1 - (after.states[0]?.remaining ?? 0)
    }
    expect(spent).toBe(30)
  })
})

describe.each(STORAGES)('requests admitted together (%s)', (kind) => {
  let server: ClockServer
  let owner: Person

  beforeAll(async () => {
    server = await startClockServer(kind, { rateLimitPerKey: 5 })
    owner = new Person(server.url)
    await owner.signUp()
  })
  afterAll(() => server.close())

  test('requests of many keys arriving at once are each charged once, to their own key: exactly the quota of each is allowed, and what the headers count is exact', async () => {
    const keys = await Promise.all(Array.from({ length: 6 }, () => owner.createKey()))
    // Seven requests of each key, interleaved, sent in the same instant.
    const replies = await Promise.all(
      Array.from({ length: 42 }, (_, i) =>
        new Agent(server.url, keys[i % keys.length] as string).call('whoami'),
      ),
    )
    for (let k = 0; k < keys.length; k++) {
      const own = replies.filter((_, i) => i % keys.length === k)
      const allowed = own.filter((r) => r.status === 200)
      expect(allowed).toHaveLength(5)
      expect(own.filter((r) => r.status === 429)).toHaveLength(2)
      // Each allowed request saw the count its own charge left: 4, 3, 2, 1, 0 remaining.
      expect(allowed.map((r) => remaining(r)).sort()).toEqual([0, 1, 2, 3, 4])
    }
  })

  test('a revoked or unknown key among requests arriving at once is a 401 alone, spends nothing, and the others are answered', async () => {
    const good = await owner.createKey()
    const created = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
      name: 'revoked',
    })
    const revoked = created.body.key as string
    const revokedId = created.body.apiKey.id as string
    expect(
      (await owner.request('DELETE', `/api/app/orgs/${owner.orgId}/api-keys/${revokedId}`)).status,
    ).toBe(204)
    // A well-formed key (its checksum holds) for a key id that was never issued.
    const unknown = newApiKey(crypto.randomUUID())
    const replies = await Promise.all([
      new Agent(server.url, good).call('whoami'),
      new Agent(server.url, revoked).call('whoami'),
      new Agent(server.url, good).call('whoami'),
      new Agent(server.url, unknown).call('whoami'),
    ])
    expect(replies.map((r) => r.status)).toEqual([200, 401, 200, 401])
    expect(
      replies
        .filter((r) => r.status === 200)
        .map((r) => remaining(r))
        .sort(),
    ).toEqual([3, 4])
  })
})

describe('rate budgets are shared by every server process (postgres)', () => {
  let server: ClockServer

  beforeAll(async () => {
    server = await startClockServer('postgres')
  })
  afterAll(() => server.close())

  test('a key spending its budget on two processes gets 240 in all', async () => {
    const owner = new Person(server.url)
    await owner.signUp()
    const key = await owner.createKey()
    const peer = await server.peer()
    await spend(new Agent(server.url, key), 120)
    await spend(new Agent(peer.url, key), 120)
    expect((await new Agent(server.url, key).call('whoami')).status).toBe(429)
    expect((await new Agent(peer.url, key).call('whoami')).status).toBe(429)
  })

  test('two processes admitting many keys at once, in opposite orders, never wait on each other in a circle: each key gets exactly its budget', async () => {
    const owner = new Person(server.url)
    await owner.signUp()
    const keys = await Promise.all(Array.from({ length: 8 }, () => owner.createKey()))
    const peer = await server.peer()
    // Each process receives every key's requests, one in key order, the other in reverse,
    // until each key has asked 250 times (240 allowed) in all.
    const rounds = 250 / 10
    const statuses = new Map(keys.map((k) => [k, [] as number[]]))
    for (let round = 0; round < rounds; round++) {
      await Promise.all(
        [server.url, peer.url].flatMap((url, p) =>
          (p === 0 ? keys : [...keys].reverse()).flatMap((key) =>
            Array.from({ length: 5 }, async () => {
              const res = await new Agent(url, key).call('whoami')
              statuses.get(key)?.push(res.status)
            }),
          ),
        ),
      )
    }
    for (const key of keys) {
      const seen = statuses.get(key) ?? []
      expect(seen).toHaveLength(250)
      expect(seen.filter((s) => s === 200)).toHaveLength(240)
      expect(seen.filter((s) => s === 429)).toHaveLength(10)
    }
  })
})
