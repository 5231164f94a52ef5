import { randomUUID } from 'node:crypto'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import {
  deliveryRows,
  invited,
  listed,
  type Received,
  Receiver,
  register,
  startWebhookServer,
  verifiesWith,
} from './support.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe.each(STORAGES)('webhook test ping (%s)', (kind) => {
  let server: TestServer
  let receiver: Receiver
  let owner: Person

  beforeAll(async () => {
    server = await startWebhookServer(kind)
    receiver = await Receiver.start((r) => (r.path === '/broken' ? 500 : 200))
    owner = new Person(server.url)
    await owner.signUp()
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  const ping = (person: Person, webhookId: string) =>
    person.request('POST', `/api/app/orgs/${person.orgId}/webhooks/${webhookId}/test`)
  const at = (path: string) => receiver.received.filter((r) => r.path === path)

  test('a ping to a receiver answering 200 reports delivered, status 200, its duration and no error; the receiver got a ping signed like every delivery', async () => {
    const hook = await register(owner, `${receiver.url}/ok`)
    const res = await ping(owner, hook.id)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      delivered: true,
      status: 200,
      durationMs: expect.any(Number),
      error: null,
    })
    expect(res.body.durationMs).toBeGreaterThanOrEqual(0)
    // Sent at once: it had arrived before the answer.
    const [r] = at('/ok') as [Received]
    expect(r.json).toEqual({
      id: expect.stringMatching(UUID),
      type: 'ping',
      createdAt: expect.any(String),
      organizationId: owner.orgId,
      actor: { type: 'person', email: owner.user?.email, userId: owner.user?.id },
      data: { webhookId: hook.id },
    })
    expect(r.headers['user-agent']).toBe('Corkboard-Webhooks/1')
    expect(r.headers['webhook-id']).toBe(r.headers['x-service-delivery'])
    expect(verifiesWith(hook.secret, r)).toEqual({ standard: true, service: true })
    expect(new Webhook(hook.secret).verify(r.body, r.headers)).toEqual(r.json)
  })

  test('a ping to a receiver answering 500 reports delivered false, status 500 and the error in words', async () => {
    const hook = await register(owner, `${receiver.url}/broken`)
    const res = await ping(owner, hook.id)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      delivered: false,
      status: 500,
      durationMs: expect.any(Number),
      error: 'HTTP 500',
    })
    expect(at('/broken')).toHaveLength(1)
  })

  test('a ping to an unreachable receiver reports no status and why: connection refused', async () => {
    const gone = await Receiver.start()
    const url = `${gone.url}/nobody`
    await gone.close()
    const hook = await register(owner, url)
    const res = await ping(owner, hook.id)
    expect(res.status).toBe(200)
    expect(res.body).toEqual({
      delivered: false,
      status: null,
      durationMs: expect.any(Number),
      error: 'connection refused',
    })
  })

  test('a failing ping never counts toward switching the endpoint off, even one event short of it', async () => {
    const hook = await register(owner, `${receiver.url}/broken`)
    await server.storage.db.query('update webhooks set consecutive_failures = 4 where id = $1', [
      hook.id,
    ])
    for (let i = 0; i < 6; i++) expect((await ping(owner, hook.id)).body.delivered).toBe(false)
    expect(await listed(owner, hook.id)).toMatchObject({
      enabled: true,
      disabledReason: null,
      consecutiveFailures: 4,
    })
  })

  test('a ping shows in the delivery log as a finished ping with its one attempt, and is never sent again', async () => {
    const hook = await register(owner, `${receiver.url}/broken`)
    await ping(owner, hook.id)
    const shown = await listed(owner, hook.id)
    expect(shown.recentDeliveries).toEqual([
      expect.objectContaining({
        eventType: 'ping',
        status: 'failed',
        attempts: 1,
        lastStatusCode: 500,
        lastError: 'HTTP 500',
        nextAttemptAt: null,
      }),
    ])
    const deliveryId = shown.recentDeliveries[0].id
    const detail = await owner.request(
      'GET',
      `/api/app/orgs/${owner.orgId}/webhooks/${hook.id}/deliveries/${deliveryId}`,
    )
    expect(detail.body.attempts).toEqual([
      expect.objectContaining({ attempt: 1, ok: false, statusCode: 500, error: 'HTTP 500' }),
    ])
    // Nothing is left for the worker: no row of this endpoint is pending.
    expect((await deliveryRows(server, hook.id)).map((d) => d.status)).toEqual(['failed'])
    const delivered = await register(owner, `${receiver.url}/ok`)
    await ping(owner, delivered.id)
    expect((await listed(owner, delivered.id)).recentDeliveries).toEqual([
      expect.objectContaining({ eventType: 'ping', status: 'delivered', lastStatusCode: 200 }),
    ])
  })

  test('only an owner or admin may ping: a member gets 403, a person outside the organisation 404, an unknown webhook 404', async () => {
    const hook = await register(owner, `${receiver.url}/ok`)
    const before = at('/ok').length
    const member = await invited(owner, 'member')
    expect((await ping(member, hook.id)).status).toBe(403)
    const outsider = new Person(server.url)
    await outsider.signUp()
    outsider.orgId = owner.orgId
    expect((await ping(outsider, hook.id)).status).toBe(404)
    expect(await ping(owner, randomUUID())).toMatchObject({
      status: 404,
      body: { error: 'No such webhook' },
    })
    expect(at('/ok')).toHaveLength(before)
    const admin = await invited(owner, 'admin')
    expect((await ping(admin, hook.id)).body.delivered).toBe(true)
  })
})

describe.each(STORAGES)('a test ping is address-checked like deliveries (%s)', (kind) => {
  let server: TestServer
  let receiver: Receiver
  beforeAll(async () => {
    // Private addresses not allowed (the default).
    server = await startServer(kind)
    receiver = await Receiver.start()
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  test('a ping to an endpoint whose address points to loopback is refused without WEBHOOK_ALLOW_PRIVATE, not sent', async () => {
    const owner = new Person(server.url)
    await owner.signUp()
    const hook = await register(owner, 'https://hooks.example.com/corkboard')
    // As if the name had been re-pointed after registration.
    await server.storage.db.query('update webhooks set url = $1 where id = $2', [
      `${receiver.url}/hook`,
      hook.id,
    ])
    const res = await owner.request('POST', `/api/app/orgs/${owner.orgId}/webhooks/${hook.id}/test`)
    expect(res.status).toBe(200)
    expect(res.body).toMatchObject({ delivered: false, status: null })
    expect(res.body.error).toMatch(/refused to connect to 127.0.0.1: a loopback address/)
    expect(res.body.error).toMatch(/WEBHOOK_ALLOW_PRIVATE=1/)
    expect(receiver.received).toHaveLength(0)
  })
})
