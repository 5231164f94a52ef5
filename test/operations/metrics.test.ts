import { readFile } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type * as Y from 'yjs'
import { loadConfig } from '../../server/config.ts'
import { connectHttp } from '../mcp/harness.ts'
import {
  type Agent,
  connectProvider,
  eventuallyAsync as eventually,
  ownerWithAgent,
  Person,
} from '../support/client.ts'
import { METRICS_TOKEN, Scrape, scrape } from '../support/metrics.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { Receiver, register } from '../webhooks/support.ts'

const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

describe('METRICS_TOKEN', () => {
  test('is unset by default; a short or spaced token stops the service at start, naming it', () => {
    expect(loadConfig({}).metricsToken).toBeUndefined()
    expect(loadConfig({ METRICS_TOKEN }).metricsToken).toBe(METRICS_TOKEN)
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN must be/)
    expect(() => loadConfig({ METRICS_TOKEN: 'a long token with spaces' })).toThrow(
      /METRICS_TOKEN must be/,
    )
  })
})

describe('without METRICS_TOKEN, /metrics does not exist', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer('pglite')
  })
  afterAll(() => server.close())

  test('GET /metrics answers 404 like any unknown path, whatever token is sent', async () => {
    const sent: Record<string, string>[] = [{}, { authorization: `Bearer ${METRICS_TOKEN}` }]
    for (const headers of sent) {
      const res = await fetch(`${server.url}/metrics`, { headers })
      expect(res.status).toBe(404)
      expect(await res.json()).toEqual({ error: 'No route GET /metrics' })
    }
  })
})

describe.each(STORAGES)('GET /metrics with METRICS_TOKEN (%s)', (kind) => {
  let server: TestServer
  let owner: Person
  let agent: Agent
  let column: string

  beforeAll(async () => {
    server = await startServer(kind, { metricsToken: METRICS_TOKEN, webhookAllowPrivate: true })
    ;({ owner, agent } = await ownerWithAgent(server.url))
    column = (await agent.ok('list_columns')).columns[0].id
  })
  afterAll(() => server.close())

  test('asks for the token as a bearer token: none or a wrong one is 401, the right one the Prometheus text format', async () => {
    const none = await fetch(`${server.url}/metrics`)
    expect(none.status).toBe(401)
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/)
    const wrong = await fetch(`${server.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}x` },
    })
    expect(wrong.status).toBe(401)
    const right = await fetch(`${server.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    })
    expect(right.status).toBe(200)
    expect(right.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    const parsed = new Scrape(await right.text())
    expect(parsed.families.size).toBeGreaterThan(20)
  })

  test('scraped under load, the series exist and move: create_task counts per action, the lane commits in batches, the pool, documents, outbox and process series are there', async () => {
    const before = await scrape(server.url)
    const agents = 8
    const each = 25
    const load = Array.from({ length: agents }, async (_, a) => {
      for (let i = 0; i < each; i++)
        await agent.ok('create_task', { columnId: column, title: `${a}-${i}` })
    })
    // Scraped meanwhile, as Prometheus would: every scrape answers and parses.
    let loading = true
    const scrapes: Scrape[] = []
    const scraper = (async () => {
      while (loading) scrapes.push(await scrape(server.url))
    })()
    await Promise.all(load)
    loading = false
    await scraper
    expect(scrapes.length).toBeGreaterThan(0)
    const after = await scrape(server.url)

    const created = { action: 'create_task', face: 'agent', status: '200' }
    const n = agents * each
    expect(
      after.value('corkboard_actions_total', created) -
        before.value('corkboard_actions_total', created),
    ).toBe(n)
    const timed = { action: 'create_task', face: 'agent' }
    expect(
      after.count('corkboard_action_duration_seconds', timed) -
        before.count('corkboard_action_duration_seconds', timed),
    ).toBe(n)
    const posted = { route: '/api/agent', method: 'POST', status: '200' }
    expect(
      after.value('corkboard_http_requests_total', posted) -
        before.value('corkboard_http_requests_total', posted),
    ).toBeGreaterThanOrEqual(n)
    // Every write was stored by some commit: the batches' sizes add up to at least n.
    const batched = after.samples('corkboard_lane_batch_size')[0]
    const batchedBefore = before.samples('corkboard_lane_batch_size')[0]
    expect(Number(batched?.sum) - Number(batchedBefore?.sum ?? 0)).toBeGreaterThanOrEqual(n)
    const commits =
      after.count('corkboard_lane_commit_seconds', { outcome: 'committed' }) -
      before.count('corkboard_lane_commit_seconds', { outcome: 'committed' })
    expect(commits).toBeGreaterThan(0)
    expect(commits).toBeLessThanOrEqual(n)
    expect(after.count('corkboard_db_pool_wait_seconds')).toBeGreaterThan(
      before.count('corkboard_db_pool_wait_seconds'),
    )
    expect(after.value('corkboard_documents_loaded', { kind: 'board' })).toBeGreaterThanOrEqual(1)
    expect(after.value('corkboard_document_bytes', { kind: 'board' })).toBeGreaterThan(0)
    for (const gauge of [
      'corkboard_webhook_outbox_pending',
      'corkboard_webhook_outbox_due',
      'corkboard_webhook_oldest_due_seconds',
      'corkboard_lane_queue_depth',
      'corkboard_lane_uncommitted_writes',
      'corkboard_sync_sockets_open',
    ]) {
      expect(after.samples(gauge), gauge).toHaveLength(1)
    }
    expect(after.value('corkboard_db_available')).toBe(1)
    expect(after.value('process_resident_memory_bytes')).toBeGreaterThan(0)
    expect(after.samples('nodejs_eventloop_lag_p99_seconds')).toHaveLength(1)
  })

  test('MCP tool calls count per action with the tool’s own status: a refused call is its 4xx, though the HTTP answer is a 200', async () => {
    const client = await connectHttp(server.url, agent.key)
    try {
      const before = await scrape(server.url)
      await client.callTool({
        name: 'create_task',
        arguments: { columnId: column, title: 'via MCP' },
      })
      const refused = await client.callTool({
        name: 'get_task',
        arguments: { taskId: crypto.randomUUID() },
      })
      expect(refused.isError).toBe(true)
      const after = await scrape(server.url)
      const delta = (labels: Record<string, string>) =>
        after.value('corkboard_actions_total', labels) -
        before.value('corkboard_actions_total', labels)
      expect(delta({ action: 'create_task', face: 'mcp', status: '200' })).toBe(1)
      expect(delta({ action: 'get_task', face: 'mcp', status: '404' })).toBe(1)
      expect(
        after.count('corkboard_action_duration_seconds', { action: 'get_task', face: 'mcp' }),
      ).toBeGreaterThanOrEqual(1)
    } finally {
      await client.close()
    }
  })

  test('a webhook delivery counts as delivered with its lag from the event, and the outbox drains back to nothing due', async () => {
    const receiver = await Receiver.start()
    try {
      await register(owner, `${receiver.url}/hook`, ['card.created'])
      const before = await scrape(server.url)
      await agent.ok('create_task', { columnId: column, title: 'announced' })
      await receiver.waitFor((all) => all.length >= 1)
      const after = await eventually(async () => {
        const s = await scrape(server.url)
        return s.value('corkboard_webhook_deliveries_total', { outcome: 'delivered' }) >
          before.value('corkboard_webhook_deliveries_total', { outcome: 'delivered' })
          ? s
          : undefined
      })
      expect(after.count('corkboard_webhook_delivery_lag_seconds')).toBe(
        before.count('corkboard_webhook_delivery_lag_seconds') + 1,
      )
      expect(after.value('corkboard_webhook_outbox_due')).toBe(0)
      expect(after.value('corkboard_webhook_oldest_due_seconds')).toBe(0)
    } finally {
      await receiver.close()
    }
  })

  test("people's edits are counted as reviewed, and as reverted when the server undid something; the open socket shows", async () => {
    const token = await owner.syncToken()
    const before = await scrape(server.url)
    const live = await connectProvider(server.url, `${owner.orgId}/board`, token)
    try {
      const open = await scrape(server.url)
      expect(open.value('corkboard_sync_sockets_open')).toBeGreaterThanOrEqual(1)
      // A person may rename a column; nobody may remove one from the document (reverted).
      const columns = live.doc.getMap<Y.Map<unknown>>('columns')
      live.doc.transact(() => columns.get(column)?.set('title', 'Renamed live'))
      live.doc.transact(() => columns.delete(column))
      const after = await eventually(async () => {
        const s = await scrape(server.url)
        return s.value('corkboard_people_edits_reverted_total', { kind: 'board' }) >
          before.value('corkboard_people_edits_reverted_total', { kind: 'board' })
          ? s
          : undefined
      })
      expect(
        after.value('corkboard_people_edits_reviewed_total', { kind: 'board' }) -
          before.value('corkboard_people_edits_reviewed_total', { kind: 'board' }),
      ).toBeGreaterThanOrEqual(2)
      expect(live.doc.getMap('columns').has(column)).toBe(true)
    } finally {
      live.destroy()
    }
    await eventually(async () =>
      (await scrape(server.url)).value('corkboard_sync_sockets_open') ===
      before.value('corkboard_sync_sockets_open')
        ? true
        : undefined,
    )
  })

  test('a statement the database refuses counts by its SQLSTATE, and the failed commit by its outcome', async () => {
    const { owner: other, agent: refused } = await ownerWithAgent(server.url)
    const { db } = server.storage
    await db.query(`create function refuse_${kind}() returns trigger language plpgsql as $$
      begin
        if new.doc_name like '${other.orgId}/%' then raise exception 'refused by the test'; end if;
        return new;
      end $$`)
    await db.query(
      `create trigger refuse_${kind} before insert on doc_updates for each row execute function refuse_${kind}()`,
    )
    try {
      const target = (await refused.ok('list_columns')).columns[0].id
      const before = await scrape(server.url)
      const res = await refused.call('create_task', { columnId: target, title: 'never stored' })
      expect(res.status).toBe(500)
      const after = await scrape(server.url)
      const raised = { code: 'P0001' }
      expect(after.value('corkboard_db_statement_errors_total', raised)).toBeGreaterThan(
        before.value('corkboard_db_statement_errors_total', raised),
      )
      expect(after.count('corkboard_lane_commit_seconds', { outcome: 'failed' })).toBe(
        before.count('corkboard_lane_commit_seconds', { outcome: 'failed' }) + 1,
      )
      expect(after.value('corkboard_actions_total', { action: 'create_task', status: '500' })).toBe(
        before.value('corkboard_actions_total', { action: 'create_task', status: '500' }) + 1,
      )
    } finally {
      await db.query(`drop trigger refuse_${kind} on doc_updates`)
      await db.query(`drop function refuse_${kind}()`)
    }
  })
})

describe('label values are bounded: routes are patterns, never paths or ids', () => {
  let server: TestServer
  let owner: Person
  beforeAll(async () => {
    server = await startServer('pglite', { metricsToken: METRICS_TOKEN })
    owner = new Person(server.url)
    await owner.signUp()
  })
  afterAll(() => server.close())

  test('unknown paths and fresh ids in paths add no series; every route label is a registered pattern', async () => {
    const probe = async () => {
      for (let i = 0; i < 20; i++) {
        await fetch(`${server.url}/api/no/such/${crypto.randomUUID()}`)
        await owner.request('GET', `/api/app/orgs/${crypto.randomUUID()}/api-keys`)
        await owner.request('GET', `/api/app/orgs/${owner.orgId}/maps/${crypto.randomUUID()}`)
      }
    }
    // The scrape itself is a request: its series exists from the first one on.
    await scrape(server.url)
    await probe()
    const first = await scrape(server.url)
    await probe()
    const second = await scrape(server.url)
    for (const family of [
      'corkboard_http_requests_total',
      'corkboard_http_request_duration_seconds',
    ]) {
      expect(second.samples(family).length, family).toBe(first.samples(family).length)
    }
    const patterns = new Set(server.app.routes().map((r) => r.path))
    for (const route of second.labelValues('corkboard_http_requests_total', 'route')) {
      expect(
        patterns.has(route) || ['(none)', '(static)', '/api/agent', '/mcp'].includes(route),
        route,
      ).toBe(true)
    }
    expect(second.value('corkboard_http_requests_total', { route: '(none)', status: '404' })).toBe(
      40,
    )
  })
})

describe('the documentation of the series', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer('pglite', { metricsToken: METRICS_TOKEN })
  })
  afterAll(() => server.close())

  test('docs/operations.md lists every series the service exposes, and its alert rules and the Grafana dashboard use only series that exist', async () => {
    const res = await fetch(`${server.url}/metrics`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    })
    const exposed = new Set([...(await res.text()).matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]))
    const root = new URL('../../docs/', import.meta.url)
    const operations = await readFile(new URL('operations.md', root), 'utf8')
    const dashboard = await readFile(new URL('grafana-dashboard.json', root), 'utf8')
    const own = [...exposed].filter((name) => name?.startsWith('corkboard_'))
    expect(own.length).toBeGreaterThan(20)
    for (const name of own) expect(operations, name).toContain(`\`${name}\``)
    const family = (name: string) => name.replace(/_(bucket|sum|count)$/, '')
    const used = (text: string) =>
      new Set(
        [...text.matchAll(/\b((?:corkboard|nodejs|process)_[a-z0-9_]+)/g)]
          .map((m) => family(m[1] as string))
          .filter((name) => !name.endsWith('_')),
      )
    for (const name of used(operations))
      expect(exposed.has(name), `operations.md: ${name}`).toBe(true)
    const exprs = JSON.stringify(
      (JSON.parse(dashboard).panels as { targets?: { expr: string }[] }[]).flatMap((p) =>
        (p.targets ?? []).map((t) => t.expr),
      ),
    )
    expect(used(exprs).size).toBeGreaterThan(15)
    for (const name of used(exprs)) expect(exposed.has(name), `dashboard: ${name}`).toBe(true)
  })
})

describe('with Redis, a live document’s publishes are timed', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer('postgres', {
      metricsToken: METRICS_TOKEN,
      redisUrl: TEST_REDIS_URL,
    })
  })
  afterAll(() => server.close())

  test('corkboard_redis_publish_seconds has an observation per acknowledged publish', async () => {
    const { agent } = await ownerWithAgent(server.url)
    const before = await scrape(server.url)
    const column = (await agent.ok('list_columns')).columns[0].id
    await agent.ok('create_task', { columnId: column, title: 'shared' })
    await eventually(async () =>
      (await scrape(server.url)).count('corkboard_redis_publish_seconds') >
      before.count('corkboard_redis_publish_seconds')
        ? true
        : undefined,
    )
  })
})
