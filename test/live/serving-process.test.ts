import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { type App, createApp } from '../../server/app.ts'
import { type Config, loadConfig } from '../../server/config.ts'
import { FORWARDED_HEADER } from '../../server/faces/agent/forward.ts'
import { appendUpdate } from '../../server/live/doc-store.ts'
import { boardDocName } from '../../shared/board-doc.ts'
import { Agent, connectProvider, eventually, Person } from '../support/client.ts'
import { freshDb, type TestDb } from '../support/storage.ts'

/**
 * Scaled out, one process serves each organisation's agent calls (server/live/owners.ts):
 * the others pass them on (server/faces/agent/forward.ts). Two apps in this process, one
 * Postgres, one Redis; what each app holds is looked at directly.
 */

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

async function forwarded(app: App, outcome: string): Promise<number> {
  const { values } = await app.metrics.agentForwarded.get()
  return values.find((v) => v.labels.outcome === outcome)?.value ?? 0
}

const holdsBoard = (app: App, orgId: string) =>
  app.live.hocuspocus.documents.has(boardDocName(orgId))

async function raw(url: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${url}/api/agent`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })
  return { status: res.status, headers: res.headers, body: await res.json() }
}

describe('one process serves an organisation’s agent calls (postgres + redis)', () => {
  let storage: TestDb
  let a: App
  let b: App
  let prefix: string
  let redis: Redis
  let config: Config
  const open = new Set<App>()

  beforeAll(async () => {
    storage = await freshDb('postgres', { migrate: false })
    prefix = `cb-test-${randomBytes(4).toString('hex')}`
    config = {
      ...loadConfig({}),
      port: 0,
      logLevel: 'error' as const,
      scryptN: 1024,
      databaseUrl: storage.url,
      redisUrl: REDIS_URL,
      redisPrefix: prefix,
    }
    ;[a, b] = await Promise.all([createApp(config), createApp(config)])
    await Promise.all([a.listen(), b.listen()])
    open.add(a).add(b)
    redis = new Redis(REDIS_URL)
  })
  afterAll(async () => {
    await Promise.all([...open].map((app) => app.close()))
    redis.disconnect()
    await storage.drop()
  })

  test('calls through either process are computed by the one serving the organisation; the other holds no copy of its board', async () => {
    // Signed up through B, which loads the board there; A has never had it.
    const owner = new Person(b.url)
    await owner.signUp()
    const key = await owner.createKey()
    const onA = new Agent(a.url, key)
    const onB = new Agent(b.url, key)
    // The first process asked takes the organisation.
    const { columns } = await onB.ok('list_columns')
    expect(b.live.owners?.serves(owner.orgId)).toBe(true)
    expect(a.live.owners?.serves(owner.orgId)).toBe(false)
    const lease = await redis.get(`${prefix}:serves:${owner.orgId}`)
    expect(lease?.endsWith(` ${b.url}`)).toBe(true)

    const before = await forwarded(a, 'forwarded')
    const made = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? onA : onB).ok('create_task', {
          columnId: columns[0].id,
          title: `card ${i}`,
        }),
      ),
    )
    expect(await forwarded(a, 'forwarded')).toBe(before + 5)
    expect(holdsBoard(b, owner.orgId)).toBe(true)
    expect(holdsBoard(a, owner.orgId)).toBe(false)
    // Every write is there whichever process is asked.
    const { tasks } = await onA.ok('get_board')
    expect(tasks.map((t: { id: string }) => t.id).sort()).toEqual(
      made.map((m) => m.task.id as string).sort(),
    )
  })

  test('claim_next raced through both processes hands each card out once, decided by the serving process', async () => {
    const owner = new Person(b.url)
    await owner.signUp()
    const keys = await Promise.all([0, 1, 2, 3].map((i) => owner.createKey(`k${i}`)))
    const agents = keys.flatMap((key, i) => [
      { agent: new Agent(a.url, key), name: `A${i}` },
      { agent: new Agent(b.url, key), name: `B${i}` },
    ])
    const first = agents[1]?.agent as Agent
    const { columns } = await first.ok('list_columns')
    const serving = [a, b].find((app) => app.live.owners?.serves(owner.orgId)) as App
    const other = serving === a ? b : a
    const ready = columns[1].id as string
    for (let i = 0; i < 40; i++) await first.ok('create_task', { columnId: ready, title: `q${i}` })
    const handed: string[] = []
    await Promise.all(
      agents.map(async ({ agent, name }) => {
        for (;;) {
          const got = await agent.ok('claim_next', { agentName: name, role: 'ready' })
          if (!got.task) return
          handed.push(got.task.id as string)
        }
      }),
    )
    expect(handed).toHaveLength(40)
    expect(new Set(handed).size).toBe(40)
    const rows = await storage.db.query<{ n: string }>(
      'select count(*)::text as n from claims where org_id = $1 and released_at is null',
      [owner.orgId],
    )
    expect(rows[0]?.n).toBe('40')
    expect(holdsBoard(other, owner.orgId)).toBe(false)
  })

  test('an answer passed on comes back as it was given: a 409 with holder, its rate-limit headers and the request id sent', async () => {
    const owner = new Person(a.url)
    await owner.signUp()
    const [k1, k2] = await Promise.all([owner.createKey('one'), owner.createKey('two')])
    const first = new Agent(a.url, k1 as string)
    const { columns } = await first.ok('list_columns')
    const serving = [a, b].find((app) => app.live.owners?.serves(owner.orgId)) as App
    const other = serving === a ? b : a
    const { task } = await first.ok('create_task', { columnId: columns[0].id, title: 'held' })
    await first.ok('claim_task', { taskId: task.id, agentName: 'first' })
    const refused = await raw(
      other.url,
      k2 as string,
      { action: 'claim_task', params: { taskId: task.id, agentName: 'second' } },
      { 'x-request-id': 'passed-on-409' },
    )
    expect(refused.status).toBe(409)
    expect(refused.body.holder.agentName).toBe('first')
    expect(refused.headers.get('ratelimit')).toMatch(/;r=\d+/)
    expect(refused.headers.get('x-request-id')).toBe('passed-on-409')
    const bad = await raw(other.url, k2 as string, { action: 'claim_tusk', params: {} })
    expect(bad.status).toBe(400)
    expect(bad.body.error).toMatch(/Unknown action "claim_tusk"/)
    const wrongKey = await raw(other.url, `${k2 as string}x`, { action: 'list_columns' })
    expect(wrongKey.status).toBe(401)
  })

  test('a call already passed on is served where it arrives (never passed on again)', async () => {
    const owner = new Person(a.url)
    await owner.signUp()
    const key = await owner.createKey()
    await new Agent(a.url, key).ok('list_columns')
    const serving = [a, b].find((app) => app.live.owners?.serves(owner.orgId)) as App
    const other = serving === a ? b : a
    const passedOn = await forwarded(other, 'forwarded')
    const res = await raw(
      other.url,
      key,
      { action: 'get_board', params: {} },
      {
        [FORWARDED_HEADER]: '1',
      },
    )
    expect(res.status).toBe(200)
    expect(await forwarded(other, 'forwarded')).toBe(passedOn)
    expect(holdsBoard(other, owner.orgId)).toBe(true)
  })

  test('once the serving process shuts down, the other takes its organisations at their next call, and every acknowledged write is there', async () => {
    const c = await createApp(config)
    await c.listen()
    open.add(c)
    const owner = new Person(a.url)
    await owner.signUp()
    const key = await owner.createKey()
    const { columns } = await new Agent(c.url, key).ok('list_columns')
    expect(c.live.owners?.serves(owner.orgId)).toBe(true)
    const onA = new Agent(a.url, key)
    const before = await onA.ok('create_task', { columnId: columns[0].id, title: 'before' })
    await c.close()
    open.delete(c)
    expect(await redis.get(`${prefix}:serves:${owner.orgId}`)).toBeNull()
    const after = await onA.ok('create_task', { columnId: columns[0].id, title: 'after' })
    expect(a.live.owners?.serves(owner.orgId)).toBe(true)
    const { tasks } = await onA.ok('get_board')
    expect(tasks.map((t: { id: string }) => t.id).sort()).toEqual(
      [before.task.id, after.task.id].sort(),
    )
  })

  test('a process that starts serving an organisation has caught up with storage: a write stored by a process that died before publishing it is in its copy at its first call, and reaches its people', async () => {
    const owner = new Person(b.url)
    await owner.signUp()
    const key = await owner.createKey()
    await new Agent(b.url, key).ok('list_columns')
    expect(b.live.owners?.serves(owner.orgId)).toBe(true)
    const name = boardDocName(owner.orgId)
    const onA = await connectProvider(a.url, name, await owner.syncToken())
    try {
      // What a process that committed and died before its publish leaves: a stored update
      // no live copy has seen.
      const elsewhere = new Y.Doc()
      Y.applyUpdate(elsewhere, Y.encodeStateAsUpdate(onA.doc))
      const before = Y.encodeStateVector(elsewhere)
      elsewhere.getMap('stray').set('note', 'stored, never published')
      await appendUpdate(storage.db, name, Y.encodeStateAsUpdate(elsewhere, before))
      // Nothing publishes it: only a catch-up with storage brings it to A's copy (the
      // takeover's, or the peer watch's once a process it heard from is seen gone).

      // B hands the organisation over; the next call through A makes A its server.
      await b.close()
      open.delete(b)
      await new Agent(a.url, key).ok('list_columns')
      expect(a.live.owners?.serves(owner.orgId)).toBe(true)
      const held = a.live.hocuspocus.documents.get(name)
      expect(held?.getMap('stray').get('note')).toBe('stored, never published')
      expect(
        await eventually(() => onA.doc.getMap('stray').get('note') as string | undefined, 10_000),
      ).toBe('stored, never published')
    } finally {
      onA.destroy()
    }
  })
})
