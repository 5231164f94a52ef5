import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { LogDestination } from '../../server/http/log.ts'
import { type Agent, ownerWithAgent, type Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { eventually, Receiver, register } from '../webhooks/support.ts'

/** A log destination that keeps every line, parsed: each must be one JSON object. */
function captured(): LogDestination & { lines: Record<string, any>[] } {
  const lines: Record<string, any>[] = []
  return {
    lines,
    write(text: string) {
      for (const line of text.split('\n')) if (line) lines.push(JSON.parse(line))
    },
  }
}

const requestLines = (lines: Record<string, any>[]) => lines.filter((l) => l.msg === 'request')

describe.each(STORAGES)('request logs (%s)', (kind) => {
  let server: TestServer
  let log: ReturnType<typeof captured>
  let owner: Person
  let agent: Agent
  let column: string

  beforeAll(async () => {
    log = captured()
    server = await startServer(
      kind,
      { logLevel: 'info', webhookAllowPrivate: true },
      { logDestination: log },
    )
    ;({ owner, agent } = await ownerWithAgent(server.url))
    column = (await agent.ok('list_columns')).columns[0].id
  })
  afterAll(() => server.close())

  test("every request writes one JSON line when answered (method, route pattern, status, duration, request id); an agent's names its key, organisation and action", async () => {
    const res = await agent.call('create_task', { columnId: column, title: 'logged' })
    expect(res.status).toBe(200)
    const id = res.headers.get('x-request-id')
    const line = await eventually(async () =>
      log.lines.find((l) => l.requestId === id && l.msg === 'request'),
    )
    expect(line).toMatchObject({
      level: 'info',
      method: 'POST',
      route: '/api/agent',
      status: 200,
      action: 'create_task',
      orgId: owner.orgId,
    })
    expect(line.keyId).toMatch(/^[0-9a-f-]{36}$/)
    expect(line.durationMs).toBeGreaterThan(0)
    expect(new Date(line.time).toISOString()).toBe(line.time)
  })

  test("a person's request names the person and the organisation, and the route is its pattern: a path's ids and tokens never reach the log", async () => {
    const invite = await owner.request('POST', `/api/app/orgs/${owner.orgId}/invites`, {
      email: 'logged@example.test',
      role: 'member',
    })
    expect(invite.status).toBe(201)
    const token: string = invite.body.invite.token
    const id = invite.headers.get('x-request-id')
    const line = await eventually(async () =>
      requestLines(log.lines).find((l) => l.requestId === id),
    )
    expect(line).toMatchObject({
      method: 'POST',
      route: '/api/app/orgs/:orgId/invites',
      status: 201,
      userId: owner.user?.id,
      orgId: owner.orgId,
    })
    const accepted = await owner.request('POST', `/api/app/invites/${token}/accept`)
    const acceptedLine = await eventually(async () =>
      requestLines(log.lines).find((l) => l.requestId === accepted.headers.get('x-request-id')),
    )
    expect(acceptedLine.route).toBe('/api/app/invites/:token/accept')
    expect(JSON.stringify(log.lines)).not.toContain(token)
  })

  test('X-Request-Id is on every answer, the same id as its log line: 200, 401, 404 for an unknown path, 405, MCP, a file, the web app, /healthz', async () => {
    const answers = await Promise.all([
      fetch(`${server.url}/healthz`),
      fetch(`${server.url}/api/agent`, { method: 'POST' }),
      fetch(`${server.url}/api/no/such/path`),
      fetch(`${server.url}/api/agent`, { method: 'GET' }),
      fetch(`${server.url}/mcp`, { method: 'POST' }),
      fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${agent.key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'log test', version: '1' },
          },
        }),
      }),
      fetch(`${server.url}/files/public/${owner.orgId}/${crypto.randomUUID()}.png`),
      fetch(`${server.url}/o/${owner.orgId}/board`),
    ])
    expect(answers.map((a) => a.status)).toEqual([
      200,
      401,
      404,
      405,
      401,
      200,
      404,
      expect.any(Number),
    ])
    for (const answer of answers) {
      const id = answer.headers.get('x-request-id')
      expect(id, answer.url).toMatch(/^[0-9a-f-]{36}$/)
      const line = await eventually(async () =>
        requestLines(log.lines).find((l) => l.requestId === id),
      )
      expect(line.status).toBe(answer.status)
    }
    const routes = await Promise.all(
      answers.map(
        async (a) =>
          (
            await eventually(async () =>
              requestLines(log.lines).find((l) => l.requestId === a.headers.get('x-request-id')),
            )
          ).route,
      ),
    )
    expect(routes).toEqual([
      '/healthz',
      '/api/agent',
      '(none)',
      '/api/agent',
      '/mcp',
      '/mcp',
      '/files/public/:orgId/:name',
      '(static)',
    ])
  })

  test("a client's own X-Request-Id is kept when it is a plain token, and replaced when it is not (spaces, quotes, a forged log line, too long)", async () => {
    const sent = async (value: string) =>
      (await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': value } })).headers.get(
        'x-request-id',
      )
    expect(await sent('trace-4bf92f3577b34da6.a3ce929d:0e0e')).toBe(
      'trace-4bf92f3577b34da6.a3ce929d:0e0e',
    )
    for (const bad of ['two words', 'quote"d', `x${'y'.repeat(128)}`, 'a\\"level":"error']) {
      const got = await sent(bad)
      expect(got).not.toBe(bad)
      expect(got).toMatch(/^[0-9a-f-]{36}$/)
    }
  })

  test("one id finds everything a request did: an agent write's X-Request-Id is in the write lane's failure line, and in its webhook's delivery record and delivery line", async () => {
    const { db } = server.storage
    const { orgId } = owner
    // A real refusal by the database, for this organisation's documents only.
    await db.query(`create function refuse_${kind}() returns trigger language plpgsql as $$
      begin
        if new.doc_name like '${orgId}/%' then raise exception 'refused by the test'; end if;
        return new;
      end $$`)
    await db.query(
      `create trigger refuse_${kind} before insert on doc_updates for each row execute function refuse_${kind}()`,
    )
    let failed: Response
    try {
      failed = await fetch(`${server.url}/api/agent`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${agent.key}`,
          'content-type': 'application/json',
          'x-request-id': 'failing-write-1',
        },
        body: JSON.stringify({ action: 'create_task', params: { columnId: column, title: 'x' } }),
      })
    } finally {
      await db.query(`drop trigger refuse_${kind} on doc_updates`)
      await db.query(`drop function refuse_${kind}()`)
    }
    expect(failed.status).toBe(500)
    expect(failed.headers.get('x-request-id')).toBe('failing-write-1')
    const laneLine = log.lines.find(
      (l) => l.level === 'error' && l.msg === `a write of ${orgId} failed`,
    )
    expect(laneLine).toMatchObject({ requestId: 'failing-write-1' })
    expect(laneLine?.err.message).toMatch(/refused by the test/)

    const receiver = await Receiver.start()
    try {
      const hook = await register(owner, `${receiver.url}/hook`, ['card.created'])
      const created = await fetch(`${server.url}/api/agent`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${agent.key}`,
          'content-type': 'application/json',
          'x-request-id': 'announced-write-1',
        },
        body: JSON.stringify({ action: 'create_task', params: { columnId: column, title: 'y' } }),
      })
      expect(created.status).toBe(200)
      await receiver.waitFor((all) => all.length >= 1)
      const deliveryLine = await eventually(async () =>
        log.lines.find((l) => l.msg === 'webhook delivery delivered' && l.webhookId === hook.id),
      )
      expect(deliveryLine.requestId).toBe('announced-write-1')
      const listed = await owner.request('GET', `/api/app/orgs/${orgId}/webhooks`)
      const delivery = listed.body.webhooks.find((w: { id: string }) => w.id === hook.id)
        .recentDeliveries[0]
      expect(delivery.requestId).toBe('announced-write-1')
      const detail = await owner.request(
        'GET',
        `/api/app/orgs/${orgId}/webhooks/${hook.id}/deliveries/${delivery.id}`,
      )
      expect(detail.body.delivery).toMatchObject({
        requestId: 'announced-write-1',
        status: 'delivered',
      })
      expect(deliveryLine.deliveryId).toBe(delivery.id)
    } finally {
      await receiver.close()
    }
  })
})

describe('LOG_LEVEL', () => {
  test('error: no request lines, but a fault is still written, naming its request', async () => {
    const log = captured()
    const server = await startServer('pglite', { logLevel: 'error' }, { logDestination: log })
    try {
      const { agent } = await ownerWithAgent(server.url)
      expect((await agent.call('whoami')).status).toBe(200)
      expect(requestLines(log.lines)).toEqual([])
      const { db } = server.storage
      await db.query('alter table api_keys rename to api_keys_gone')
      const res = await agent.call('whoami')
      await db.query('alter table api_keys_gone rename to api_keys')
      expect(res.status).toBe(500)
      const fault = log.lines.find((l) => l.level === 'error')
      expect(fault?.requestId).toBe(res.headers.get('x-request-id'))
      expect(fault?.err.stack).toMatch(/api_keys/)
    } finally {
      await server.close()
    }
  })

  test('takes silent, error, warn, info and debug; anything else stops the service, naming it', async () => {
    const { loadConfig } = await import('../../server/config.ts')
    for (const level of ['silent', 'error', 'warn', 'info', 'debug'] as const) {
      expect(loadConfig({ LOG_LEVEL: level }).logLevel).toBe(level)
    }
    expect(loadConfig({}).logLevel).toBe('info')
    expect(() => loadConfig({ LOG_LEVEL: 'verbose' })).toThrow(/LOG_LEVEL must be one of/)
  })
})
