import { createServer as createHttpServer, request as httpRequest } from 'node:http'
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { App } from '../../server/app.ts'
import {
  IDEMPOTENCY_LEASE_MS,
  sweepIdempotencyKeys,
} from '../../server/faces/agent/idempotency-store.ts'
import { createAgentClient } from '../../shared/agent-client.ts'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { type ClockServer, startClockServer } from '../claims/harness.ts'
import { Agent, eventually, eventuallyAsync, type Reply } from '../support/client.ts'
import { seededOrg } from '../support/fixtures.ts'
import { STORAGES } from '../support/storage.ts'

const DAY_MS = 24 * 60 * 60 * 1000

let keys = 0
/** A key no other test of this file sends. */
const freshKey = () => `test-key-${process.pid}-${++keys}`

/** POST /api/agent with an Idempotency-Key (or none), the body as given or as JSON. */
async function send(
  url: string,
  agent: Agent,
  body: unknown,
  key: string | undefined,
): Promise<Reply> {
  const res = await fetch(`${url}/api/agent`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${agent.key}`,
      'content-type': 'application/json',
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers }
}

/**
 * The same over node:http, which sends header values fetch would refuse or merge (each
 * entry of `keyLines` is one header line).
 */
function sendRaw(url: string, agent: Agent, body: unknown, keyLines: string[]) {
  return new Promise<{ status: number; body: any }>((resolve, reject) => {
    const req = httpRequest(`${url}/api/agent`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${agent.key}`,
        'content-type': 'application/json',
        'idempotency-key': keyLines,
      },
    })
    req.on('response', (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => {
        text += c
      })
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}

/** Holds a read of the organisation's board: its writes wait until `release` is called. */
async function holdBoard(app: App, orgId: string): Promise<{ release(): Promise<void> }> {
  let release!: () => void
  const held = new Promise<void>((resolve) => {
    release = resolve
  })
  let started!: () => void
  const holding = new Promise<void>((resolve) => {
    started = resolve
  })
  const reading = app.live.read(boardDocName(orgId), () => {
    started()
    return held
  })
  await holding
  return {
    async release() {
      release()
      await reading
    },
  }
}

describe.each(STORAGES)('Idempotency-Key on POST /api/agent (%s)', (kind) => {
  let server: ClockServer
  let url: string

  beforeAll(async () => {
    server = await startClockServer(kind)
    url = server.url
  })
  afterAll(() => server.close())

  const rowOf = async (key: string) =>
    (
      await server.storage.db.query<{
        state: string
        attempt: string
        status: number | null
        response: string | null
      }>(
        'select state, attempt, status, response from agent_idempotency where idempotency_key = $1',
        [key],
      )
    )[0]

  const titled = async (agent: Agent, title: string) =>
    (await agent.ok('get_board')).tasks.filter((t: { title: string }) => t.title === title)

  test('a retry with the same key and body gets the first answer again, with Idempotent-Replayed: true, and writes nothing', async () => {
    const { agent, backlog } = await seededOrg(url)
    const body = { action: 'create_task', params: { columnId: backlog, title: 'Once' } }
    const key = freshKey()
    const first = await send(url, agent, body, key)
    expect(first.status).toBe(200)
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    const again = await send(url, agent, body, key)
    expect(again.status).toBe(200)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(again.body).toEqual(first.body)
    expect(await titled(agent, 'Once')).toHaveLength(1)
    const logged = await server.storage.db.query('select 1 from changes where entity_id = $1', [
      first.body.task.id,
    ])
    expect(logged).toHaveLength(1)
  })

  test('the same body with its fields in another order and other spacing is the same request', async () => {
    const { agent, backlog } = await seededOrg(url)
    const key = freshKey()
    const first = await send(
      url,
      agent,
      { action: 'create_task', params: { columnId: backlog, title: 'Ordered', priority: 'high' } },
      key,
    )
    const reordered = await send(
      url,
      agent,
      `{ "params" : { "priority":"high", "title" : "Ordered",\n "columnId": "${backlog}" }, "action": "create_task" }`,
      key,
    )
    expect(reordered.status).toBe(200)
    expect(reordered.headers.get('idempotent-replayed')).toBe('true')
    expect(reordered.body).toEqual(first.body)
    expect(await titled(agent, 'Ordered')).toHaveLength(1)
  })

  test('the same key with another body is a 422 naming Idempotency-Key, and writes nothing', async () => {
    const { agent, backlog } = await seededOrg(url)
    const key = freshKey()
    const body = { action: 'create_task', params: { columnId: backlog, title: 'First body' } }
    expect((await send(url, agent, body, key)).status).toBe(200)
    const otherTitle = await send(
      url,
      agent,
      { ...body, params: { ...body.params, title: 'Second body' } },
      key,
    )
    expect(otherTitle.status).toBe(422)
    expect(otherTitle.body.error).toMatch(/Idempotency-Key/)
    const otherAction = await send(
      url,
      agent,
      { action: 'create_column', params: { title: 'C' } },
      key,
    )
    expect(otherAction.status).toBe(422)
    expect(otherAction.body.error).toMatch(/Idempotency-Key/)
    expect(await titled(agent, 'Second body')).toHaveLength(0)
    expect(await titled(agent, 'First body')).toHaveLength(1)
  })

  test('a retry while the first request is still running is a 409 naming Idempotency-Key, with Retry-After; the first then answers, and is replayed', async () => {
    const { agent, orgId, backlog } = await seededOrg(url)
    const key = freshKey()
    const body = { action: 'create_task', params: { columnId: backlog, title: 'Slow' } }
    const board = await holdBoard(server.app, orgId)
    const first = send(url, agent, body, key)
    await eventuallyAsync(async () => ((await rowOf(key))?.state === 'running' ? true : undefined))
    const meanwhile = await send(url, agent, body, key)
    expect(meanwhile.status).toBe(409)
    expect(meanwhile.body.error).toMatch(/Idempotency-Key/)
    expect(meanwhile.body.error).toMatch(/still running/)
    expect(meanwhile.headers.get('retry-after')).toBe('1')
    await board.release()
    const answered = await first
    expect(answered.status).toBe(200)
    const after = await send(url, agent, body, key)
    expect(after.headers.get('idempotent-replayed')).toBe('true')
    expect(after.body).toEqual(answered.body)
    expect(await titled(agent, 'Slow')).toHaveLength(1)
  })

  test('requests racing with one key on every process run the write once: one answer runs it, the others replay it or are told it is running', async () => {
    const { agent, backlog } = await seededOrg(url)
    const peer = kind === 'postgres' ? await server.peer() : undefined
    const key = freshKey()
    const body = { action: 'create_task', params: { columnId: backlog, title: 'Raced' } }
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => send(i % 2 && peer ? peer.url : url, agent, body, key)),
    )
    const ran = answers.filter((a) => a.status === 200 && !a.headers.get('idempotent-replayed'))
    expect(ran).toHaveLength(1)
    for (const a of answers) {
      if (a.status === 200) expect(a.body).toEqual(ran[0]?.body)
      else expect(a.status, JSON.stringify(a.body)).toBe(409)
    }
    expect(await titled(agent, 'Raced')).toHaveLength(1)
  })

  test('keys are the API key’s own: the same Idempotency-Key under two API keys runs twice', async () => {
    const { owner, agent, backlog } = await seededOrg(url)
    const second = new Agent(url, await owner.createKey('second'))
    const stranger = await seededOrg(url)
    const key = freshKey()
    const body = { action: 'create_task', params: { columnId: backlog, title: 'Per key' } }
    const a = await send(url, agent, body, key)
    const b = await send(url, second, body, key)
    const c = await send(
      url,
      stranger.agent,
      { ...body, params: { ...body.params, columnId: stranger.backlog } },
      key,
    )
    for (const r of [a, b, c]) {
      expect(r.status).toBe(200)
      expect(r.headers.get('idempotent-replayed')).toBeNull()
    }
    expect(a.body.task.id).not.toBe(b.body.task.id)
    expect(await titled(agent, 'Per key')).toHaveLength(2)
    expect(await titled(stranger.agent, 'Per key')).toHaveLength(1)
  })

  test('a 4xx answer is the key’s answer: it is replayed even once the same call would succeed', async () => {
    const { owner, agent, backlog } = await seededOrg(url)
    const holder = new Agent(url, await owner.createKey('holder'))
    const { task } = await agent.ok('create_task', { columnId: backlog, title: 'Held' })
    await holder.ok('claim_task', { taskId: task.id, agentName: 'Holder' })
    const key = freshKey()
    const body = { action: 'update_task', params: { taskId: task.id, title: 'Renamed' } }
    const refused = await send(url, agent, body, key)
    expect(refused.status).toBe(409)
    expect(refused.body.holder).toBeDefined()
    await holder.ok('release_task', { taskId: task.id, agentName: 'Holder' })
    const replayed = await send(url, agent, body, key)
    expect(replayed.status).toBe(409)
    expect(replayed.headers.get('idempotent-replayed')).toBe('true')
    expect(replayed.body).toEqual(refused.body)
    expect((await send(url, agent, body, freshKey())).status).toBe(200)
  })

  test('a request refused by validation (400) stores nothing: the same key with a corrected body runs', async () => {
    const { agent, backlog } = await seededOrg(url)
    const key = freshKey()
    const bad = await send(
      url,
      agent,
      { action: 'create_task', params: { columnId: backlog } },
      key,
    )
    expect(bad.status).toBe(400)
    expect(bad.body.error).toMatch(/title/)
    expect(await rowOf(key)).toBeUndefined()
    const good = await send(
      url,
      agent,
      { action: 'create_task', params: { columnId: backlog, title: 'Fixed' } },
      key,
    )
    expect(good.status).toBe(200)
    expect(good.headers.get('idempotent-replayed')).toBeNull()
  })

  test('a malformed Idempotency-Key (empty, over 255 characters, not visible ASCII, sent twice) is a 400 naming the header; 255 visible characters, bare or quoted, are taken', async () => {
    const { agent, backlog } = await seededOrg(url)
    const body = { action: 'create_task', params: { columnId: backlog, title: 'Keyed' } }
    const refusals: [string[], RegExp][] = [
      [[''], /empty/],
      [['x'.repeat(256)], /256 characters/],
      [[`"${'x'.repeat(256)}"`], /256 characters/],
      [['two words'], /visible ASCII/],
      [['tab\there'], /visible ASCII/],
      [['caf\u00e9'], /visible ASCII/],
      [['"unterminated\\"'], /quoted string/],
      [['one', 'two'], /more than once/],
    ]
    for (const [lines, why] of refusals) {
      const res = await sendRaw(url, agent, body, lines)
      expect(res.status, JSON.stringify(lines)).toBe(400)
      expect(res.body.error).toMatch(/^Idempotency-Key /)
      expect(res.body.error).toMatch(why)
    }
    expect(await titled(agent, 'Keyed')).toHaveLength(0)
    const longest = `${'k'.repeat(254)}~`
    expect((await send(url, agent, body, longest)).status).toBe(200)
    // The draft's quoted form names the same key as the bare one.
    const quoted = await send(url, agent, body, `"${longest}"`)
    expect(quoted.headers.get('idempotent-replayed')).toBe('true')
    expect(await titled(agent, 'Keyed')).toHaveLength(1)
  })

  test('reads ignore the header: no replay, no 422, and the key stays free for a write', async () => {
    const { agent, backlog } = await seededOrg(url)
    const key = freshKey()
    const one = await send(url, agent, { action: 'get_board', params: { summary: true } }, key)
    const two = await send(url, agent, { action: 'list_columns' }, key)
    for (const r of [one, two]) {
      expect(r.status).toBe(200)
      expect(r.headers.get('idempotent-replayed')).toBeNull()
    }
    expect(await rowOf(key)).toBeUndefined()
    const write = await send(
      url,
      agent,
      { action: 'create_task', params: { columnId: backlog, title: 'After reads' } },
      key,
    )
    expect(write.status).toBe(200)
    // A malformed key is refused on a read too: the header is checked before the action runs.
    expect((await sendRaw(url, agent, { action: 'whoami' }, [''])).status).toBe(400)
  })

  test('a first request that fails with a 5xx lets the key go: a retry with it runs again', async () => {
    const { agent, backlog } = await seededOrg(url)
    const { db } = server.storage
    // Storage refusing every change row: the write's transaction fails, its answer with it.
    await db.query(`create function refuse_changes() returns trigger language plpgsql as $$
      begin raise exception 'refused by the test'; end $$`)
    await db.query(
      'create trigger refuse_changes before insert on changes for each row execute function refuse_changes()',
    )
    const key = freshKey()
    const body = { action: 'create_task', params: { columnId: backlog, title: 'Faulted' } }
    let failed: Reply
    try {
      failed = await send(url, agent, body, key)
    } finally {
      await db.query('drop trigger refuse_changes on changes')
      await db.query('drop function refuse_changes')
    }
    expect(failed.status).toBe(500)
    expect(await rowOf(key)).toBeUndefined()
    const retried = await send(url, agent, body, key)
    expect(retried.status).toBe(200)
    expect(retried.headers.get('idempotent-replayed')).toBeNull()
    expect(await titled(agent, 'Faulted')).toHaveLength(1)
  })

  /**
   * Storage taking nothing of a key but what a write's own transaction stores with it: what
   * is left when the service stops right after a write's commit.
   */
  async function onlyWritesStore<T>(fn: () => Promise<T>): Promise<T> {
    const { db } = server.storage
    await db.query(`create function only_writes() returns trigger language plpgsql as $$
      begin
        if current_query() like '%record_writes(%' then return new; end if;
        raise exception 'refused by the test';
      end $$`)
    await db.query(`create trigger only_writes before update on agent_idempotency
      for each row execute function only_writes()`)
    try {
      return await fn()
    } finally {
      await db.query('drop trigger only_writes on agent_idempotency')
      await db.query('drop function only_writes')
    }
  }

  test('the answer commits with the write: with nothing after the commit reaching storage (the service stopping there), a retry is answered from storage and nothing is written again', async () => {
    const { agent, backlog } = await seededOrg(url)
    const key = freshKey()
    const body = { action: 'create_task', params: { columnId: backlog, title: 'Committed' } }
    const first = await onlyWritesStore(() => send(url, agent, body, key))
    expect(first.status).toBe(200)
    const row = await rowOf(key)
    expect(row).toMatchObject({ state: 'done', status: 200 })
    expect(JSON.parse(row?.response ?? 'null')).toEqual(first.body)
    const retried = await send(url, agent, body, key)
    expect(retried.status).toBe(200)
    expect(retried.headers.get('idempotent-replayed')).toBe('true')
    expect(retried.body).toEqual(first.body)
    expect(await titled(agent, 'Committed')).toHaveLength(1)
  })

  test('a write whose result is not its answer (delete_map) and whose service stopped before answering holds its key until its lease lapses, then is a 409 saying the answer was lost, never run again', async () => {
    const { agent } = await seededOrg(url)
    const { map } = await agent.ok('create_map', { title: 'Doomed' })
    const key = freshKey()
    const body = { action: 'delete_map', params: { mapId: map.id } }
    expect((await onlyWritesStore(() => send(url, agent, body, key))).status).toBe(200)
    expect(await rowOf(key)).toMatchObject({ state: 'running', status: 200, response: null })
    expect((await send(url, agent, body, key)).body.error).toMatch(/still running/)
    server.clock.advance(IDEMPOTENCY_LEASE_MS + 1000)
    const retried = await send(url, agent, body, key)
    expect(retried.status).toBe(409)
    expect(retried.body.error).toMatch(/Idempotency-Key/)
    expect(retried.body.error).toMatch(/before its answer was stored/)
    expect((await rowOf(key))?.state).toBe('done')
  })

  test('a request that outlives its lease loses the key to a retry and its own write is not stored: one card however the answers land', async () => {
    const { agent, orgId, backlog } = await seededOrg(url)
    const key = freshKey()
    const body = { action: 'create_task', params: { columnId: backlog, title: 'Overtaken' } }
    const board = await holdBoard(server.app, orgId)
    const first = send(url, agent, body, key)
    const claimed = await eventuallyAsync(async () => (await rowOf(key))?.attempt)
    server.clock.advance(IDEMPOTENCY_LEASE_MS + 1000)
    const retry = send(url, agent, body, key)
    await eventuallyAsync(async () => ((await rowOf(key))?.attempt !== claimed ? true : undefined))
    await board.release()
    const [lost, retried] = await Promise.all([first, retry])
    expect(lost.status).toBe(409)
    expect(lost.body.error).toMatch(/Idempotency-Key/)
    expect(lost.body.error).toMatch(/taken over/)
    // The retry ran after the first's write failed, or was built on it and failed with it (a
    // 5xx, which lets the key go): either way a third call settles it.
    expect([200, 500]).toContain(retried.status)
    const settled = await send(url, agent, body, key)
    expect(settled.status).toBe(200)
    if (retried.status === 200) expect(settled.body).toEqual(retried.body)
    expect(await titled(agent, 'Overtaken')).toHaveLength(1)
  })

  test.skipIf(kind !== 'postgres')(
    'keyed writes join group commit: those computed while an earlier one commits store themselves and their answers in one transaction, and each key replays its own answer',
    async () => {
      const { agent, orgId, backlog } = await seededOrg(url)
      const { db } = server.storage
      const bodies = Array.from({ length: 10 }, (_, i) => ({
        action: 'create_task',
        params: { columnId: backlog, title: `Grouped ${i}` },
      }))
      const keys = bodies.map(() => freshKey())
      // The organisation's API keys held against FOR SHARE, which each write's record
      // statement takes, but not against the claims' foreign-key checks (FOR KEY SHARE): the
      // first write's commit waits, and the writes computed meanwhile gather behind it.
      let release!: () => void
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      let locked!: () => void
      const isLocked = new Promise<void>((resolve) => {
        locked = resolve
      })
      const holding = db.transaction(async (tx) => {
        await tx.query('select 1 from api_keys where org_id = $1 for no key update', [orgId])
        locked()
        await released
      })
      await isLocked
      const sent = bodies.map((body, i) => send(url, agent, body, keys[i]))
      try {
        // Every write computed: each sits in the live board, not committed, shown to nobody.
        await eventually(() => {
          const doc = server.app.live.hocuspocus.documents.get(boardDocName(orgId))
          if (!doc) return undefined
          const titles = [...boardMaps(doc).tasks.values()].map((t) => t.get('title'))
          return bodies.every((b) => titles.includes(b.params.title)) || undefined
        })
      } finally {
        release()
        await holding
      }
      const answers = await Promise.all(sent)
      for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(200)

      // Rows of one transaction share its xmin: the first write committed on its own (with
      // any computed before its statement left), all the others in one more.
      const rows = await db.query<{ tx: string; state: string }>(
        'select xmin::text as tx, state from agent_idempotency where idempotency_key = any($1)',
        [keys],
      )
      expect(rows.map((r) => r.state)).toEqual(keys.map(() => 'done'))
      const transactions = new Set(rows.map((r) => r.tx))
      expect(transactions.size).toBeLessThan(keys.length)
      expect(transactions.size).toBeLessThanOrEqual(2)

      for (const [i, body] of bodies.entries()) {
        const again = await send(url, agent, body, keys[i])
        expect(again.status).toBe(200)
        expect(again.headers.get('idempotent-replayed')).toBe('true')
        expect(again.body).toEqual(answers[i]?.body)
        expect(again.body.task.title).toBe(body.params.title)
      }
      const board = await agent.ok('get_board')
      for (const body of bodies)
        expect(
          board.tasks.filter((t: { title: string }) => t.title === body.params.title),
        ).toHaveLength(1)
    },
  )

  test('the typed client sends a write again after its connection dropped with the request delivered: the same key, stored once, the first answer returned', async () => {
    const { agent, backlog } = await seededOrg(url)
    const proxy = await droppingProxy(url)
    try {
      const client = createAgentClient({
        url: proxy.url,
        apiKey: agent.key,
        retry: { attempts: 3, baseDelayMs: 1 },
      })
      const { task } = await client.create_task({ columnId: backlog, title: 'Dropped' })
      expect(proxy.requests).toHaveLength(2)
      const keysSent = proxy.requests.map((r) => /^idempotency-key: *(.*?)\r$/im.exec(r)?.[1])
      expect(keysSent[0]).toMatch(/^"[0-9a-f]{32}"$/)
      expect(keysSent[1]).toBe(keysSent[0])
      expect(proxy.answers[1]).toMatch(/^idempotent-replayed: true\r$/im)
      const stored = await titled(agent, 'Dropped')
      expect(stored.map((t: { id: string }) => t.id)).toEqual([task.id])
    } finally {
      await proxy.close()
    }
  })

  test('keys expire 24 hours after their first request: a retry a day later runs again, and the sweep deletes expired keys', async () => {
    const { agent, backlog } = await seededOrg(url)
    const { db } = server.storage
    const key = freshKey()
    const body = { action: 'create_task', params: { columnId: backlog, title: 'Yesterday' } }
    const first = await send(url, agent, body, key)
    const others = freshKey()
    await send(url, agent, { action: 'create_column', params: { title: 'Swept' } }, others)
    server.clock.advance(DAY_MS - 1000)
    expect((await send(url, agent, body, key)).headers.get('idempotent-replayed')).toBe('true')
    await sweepIdempotencyKeys(db, server.clock.now())
    expect(await rowOf(others)).toBeDefined()
    server.clock.advance(2000)
    const later = await send(url, agent, body, key)
    expect(later.status).toBe(200)
    expect(later.headers.get('idempotent-replayed')).toBeNull()
    expect(later.body.task.id).not.toBe(first.body.task.id)
    // Every expired key goes (the one claimed again just now is not expired); sweeps running
    // at once share the work.
    const [expired] = await db.query<{ n: number }>(
      'select count(*)::int as n from agent_idempotency where expires_at <= $1',
      [new Date(server.clock.now()).toISOString()],
    )
    expect(expired?.n).toBeGreaterThanOrEqual(1)
    const swept = await Promise.all(
      [1, 2, 3].map(() => sweepIdempotencyKeys(db, server.clock.now())),
    )
    expect(swept.reduce((a, b) => a + b, 0)).toBe(expired?.n)
    expect(await rowOf(others)).toBeUndefined()
    expect(await rowOf(key)).toMatchObject({ state: 'done' })
  })
})

/**
 * A TCP proxy on loopback in front of `target`: its first connection forwards the request,
 * then drops both sides as soon as the answer starts (the service has run it, the client
 * never hears); later connections pass through. Keeps what went each way per connection.
 */
async function droppingProxy(target: string) {
  const { hostname, port } = new URL(target)
  const requests: string[] = []
  const answers: string[] = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((client) => {
    const n = requests.length
    requests.push('')
    answers.push('')
    const upstream = tcpConnect(Number(port), hostname)
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('close', () => sockets.delete(s))
      s.on('error', () => {})
    }
    client.on('data', (chunk: Buffer) => {
      requests[n] += chunk.toString('latin1')
      upstream.write(chunk)
    })
    upstream.on('data', (chunk: Buffer) => {
      if (n === 0) {
        client.resetAndDestroy()
        upstream.destroy()
        return
      }
      answers[n] += chunk.toString('latin1')
      client.write(chunk)
    })
    client.on('end', () => upstream.end())
    upstream.on('end', () => client.end())
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (!address || typeof address === 'string') throw new Error('the proxy has no port')
  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    answers,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

/** An HTTP stand-in answering each request with the next scripted answer, keeping what came. */
async function scripted(
  answers: { status: number; headers?: Record<string, string>; body: unknown }[],
) {
  const seen: { action: string; key: string | undefined }[] = []
  const server = createHttpServer((req, res) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (c: string) => {
      text += c
    })
    req.on('end', () => {
      seen.push({
        action: JSON.parse(text).action,
        key: req.headers['idempotency-key'] as string | undefined,
      })
      const answer = answers.shift() ?? { status: 500, body: { error: 'script ran out' } }
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
      res.end(JSON.stringify(answer.body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (!address || typeof address === 'string') throw new Error('the stand-in has no port')
  return {
    url: `http://127.0.0.1:${address.port}`,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

describe('the typed client’s retries', () => {
  const fast = { attempts: 4, baseDelayMs: 1, maxDelayMs: 5 }
  const task = { task: { id: 't' } }
  const columnId = '00000000-0000-4000-8000-000000000000'

  test('each write call sends a fresh Idempotency-Key, the same on each of its attempts; a read sends none', async () => {
    const stand = await scripted([
      { status: 503, headers: { 'retry-after': '0' }, body: { error: 'database away' } },
      { status: 200, body: task },
      { status: 200, body: task },
      { status: 200, body: { columns: [] } },
    ])
    try {
      const client = createAgentClient({ url: stand.url, apiKey: 'cb_x', retry: fast })
      await client.create_task({ columnId, title: 'One' })
      await client.create_task({ columnId, title: 'Two' })
      await client.list_columns()
      const [a, b, c, read] = stand.seen
      expect(a?.key).toMatch(/^"[0-9a-f]{32}"$/)
      expect(b?.key).toBe(a?.key)
      expect(c?.key).toMatch(/^"[0-9a-f]{32}"$/)
      expect(c?.key).not.toBe(a?.key)
      expect(read).toEqual({ action: 'list_columns', key: undefined })
    } finally {
      await stand.close()
    }
  })

  test('a write told its first attempt is still running (409 with Retry-After) is sent again; a claim 409, another 4xx and a 500 never are', async () => {
    const running = {
      status: 409,
      headers: { 'retry-after': '1' },
      body: { error: 'still running' },
    }
    const stand = await scripted([
      running,
      running,
      { status: 200, body: task },
      { status: 409, body: { error: 'held by someone else' } },
      { status: 422, body: { error: 'Idempotency-Key reused' } },
      { status: 400, body: { error: 'title is required' } },
      { status: 429, headers: { 'retry-after': '1' }, body: { error: 'budget used up' } },
      { status: 500, body: { error: 'Internal server error' } },
      // A read is not retried on a 409 (it has no key to be running under).
      running,
    ])
    try {
      const client = createAgentClient({ url: stand.url, apiKey: 'cb_x', retry: fast })
      expect(await client.create_task({ columnId, title: 'Waited' })).toEqual(task)
      expect(stand.seen).toHaveLength(3)
      for (const status of [409, 422, 400, 429, 500]) {
        const before = stand.seen.length
        await expect(client.create_task({ columnId, title: 'Refused' })).rejects.toMatchObject({
          status,
        })
        expect(stand.seen.length, String(status)).toBe(before + 1)
      }
      await expect(client.list_columns()).rejects.toMatchObject({ status: 409 })
      expect(stand.seen).toHaveLength(9)
    } finally {
      await stand.close()
    }
  })

  test('attempts are bounded: a service that hangs up on every connection is a NetworkError after the last', async () => {
    let connections = 0
    const hangUp = createServer((socket) => {
      connections += 1
      socket.destroy()
    })
    await new Promise<void>((resolve) => hangUp.listen(0, '127.0.0.1', resolve))
    const address = hangUp.address()
    if (!address || typeof address === 'string') throw new Error('no port')
    try {
      const client = createAgentClient({
        url: `http://127.0.0.1:${address.port}`,
        apiKey: 'cb_x',
        retry: { ...fast, attempts: 3 },
      })
      await expect(client.create_task({ columnId, title: 'Never' })).rejects.toMatchObject({
        status: 0,
        kind: 'network',
      })
      expect(connections).toBe(3)
    } finally {
      await new Promise<void>((resolve) => hangUp.close(() => resolve()))
    }
  })
})
