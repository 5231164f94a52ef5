import { randomUUID } from 'node:crypto'
import { Webhook } from 'standardwebhooks'
import { afterEach, describe, expect, test } from 'vitest'
import { SECRET_ROTATION_OVERLAP_MS } from '../../shared/schemas/webhooks.ts'
import { ownerWithAgent, Person } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'
import {
  deliveryRows,
  eventually,
  FakeClock,
  firstColumn,
  invited,
  listed,
  type Received,
  Receiver,
  type Respond,
  register,
  startWebhookServer,
  verifiesWith,
} from './support.ts'

describe.each(STORAGES)('webhook secret rotation (%s)', (kind) => {
  const cleanup: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f()
  })

  /** A server whose delivery worker reads `clock`, a receiver, and an endpoint for card.created. */
  async function setup(clock = new FakeClock(), respond?: Respond) {
    const server = await startWebhookServer(kind, { clock })
    cleanup.push(() => server.close())
    const receiver = await Receiver.start(respond)
    cleanup.push(() => receiver.close())
    const { owner, agent } = await ownerWithAgent(server.url)
    const hook = await register(owner, receiver.url, ['card.created'])
    const columnId = await firstColumn(agent)
    const rotate = () =>
      owner.request('POST', `/api/app/orgs/${owner.orgId}/webhooks/${hook.id}/rotate-secret`)
    /** Writes a card and resolves with the request that announced it. */
    const delivered = async (title: string): Promise<Received> => {
      await agent.ok('create_task', { columnId, title })
      await receiver.waitFor((all) => all.some((r) => r.json?.data?.task?.title === title))
      return receiver.received.find((r) => r.json?.data?.task?.title === title) as Received
    }
    return { server, receiver, owner, agent, hook, clock, rotate, delivered }
  }

  const entries = (r: Received) => ({
    standard: (r.headers['webhook-signature'] ?? '').split(' '),
    service: (r.headers['x-service-signature'] ?? '').split(' '),
  })

  test('only an owner or admin may rotate a secret: a member gets 403, a person outside the organisation 404, an unknown webhook 404', async () => {
    const { owner, hook } = await setup()
    const path = `/api/app/orgs/${owner.orgId}/webhooks/${hook.id}/rotate-secret`
    const member = await invited(owner, 'member')
    expect((await member.request('POST', path)).status).toBe(403)
    const outsider = new Person(owner.url)
    await outsider.signUp()
    expect((await outsider.request('POST', path)).status).toBe(404)
    const unknown = await owner.request(
      'POST',
      `/api/app/orgs/${owner.orgId}/webhooks/${randomUUID()}/rotate-secret`,
    )
    expect(unknown).toMatchObject({ status: 404, body: { error: 'No such webhook' } })
    const admin = await invited(owner, 'admin')
    expect((await admin.request('POST', path)).status).toBe(200)
  })

  test('rotation answers a new whsec_ secret of 32 random bytes and previousSecretExpiresAt 24 hours on; the list shows when the old one stops', async () => {
    const { owner, hook, rotate, clock } = await setup()
    // The route reads the delivery worker's clock (a test's fake one here).
    const before = clock.now()
    const res = await rotate()
    expect(res.status).toBe(200)
    expect(Object.keys(res.body).sort()).toEqual(['previousSecretExpiresAt', 'secret'])
    expect(res.body.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(res.body.secret).not.toBe(hook.secret)
    const expires = Date.parse(res.body.previousSecretExpiresAt)
    expect(expires).toBeGreaterThanOrEqual(before + SECRET_ROTATION_OVERLAP_MS)
    expect(expires).toBeLessThanOrEqual(clock.now() + SECRET_ROTATION_OVERLAP_MS)
    expect(SECRET_ROTATION_OVERLAP_MS).toBe(24 * 60 * 60 * 1000)
    const shown = await listed(owner, hook.id)
    expect(shown.previousSecretExpiresAt).toBe(res.body.previousSecretExpiresAt)
    expect(JSON.stringify(shown)).not.toContain(res.body.secret.slice(6))
  })

  test('for 24 hours every delivery is signed with both secrets, new first: two v1, entries in webhook-signature and two v1= entries in X-Service-Signature, and a receiver holding either secret verifies it', async () => {
    const { hook, rotate, delivered } = await setup()
    const { secret } = (await rotate()).body
    const r = await delivered('Signed twice')
    const { standard, service } = entries(r)
    expect(standard).toHaveLength(2)
    expect(service).toHaveLength(2)
    for (const s of standard) expect(s).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/)
    for (const s of service) expect(s).toMatch(/^v1=[0-9a-f]{64}$/)
    // New first: the first entries verify with the new secret alone.
    const first = { ...r, headers: { ...r.headers } }
    first.headers['webhook-signature'] = standard[0] as string
    first.headers['x-service-signature'] = service[0] as string
    expect(verifiesWith(secret, first)).toEqual({ standard: true, service: true })
    expect(verifiesWith(hook.secret, first)).toEqual({ standard: false, service: false })

    expect(verifiesWith(secret, r)).toEqual({ standard: true, service: true })
    expect(verifiesWith(hook.secret, r)).toEqual({ standard: true, service: true })
    // The reference library accepts it with either secret (the timestamp is current).
    expect(new Webhook(secret).verify(r.body, r.headers)).toEqual(r.json)
    expect(new Webhook(hook.secret).verify(r.body, r.headers)).toEqual(r.json)
    const stranger = `whsec_${Buffer.alloc(32, 9).toString('base64')}`
    expect(verifiesWith(stranger, r)).toEqual({ standard: false, service: false })
    expect(() => new Webhook(stranger).verify(r.body, r.headers)).toThrow()
  })

  test('once the 24 hours have passed only the new secret signs', async () => {
    const { hook, clock, rotate, delivered } = await setup()
    const { secret, previousSecretExpiresAt } = (await rotate()).body
    const expires = Date.parse(previousSecretExpiresAt)
    clock.set(expires - 1_000)
    expect(entries(await delivered('Still both')).service).toHaveLength(2)
    clock.set(expires + 1_000)
    const r = await delivered('New only')
    expect(entries(r).standard).toHaveLength(1)
    expect(entries(r).service).toHaveLength(1)
    expect(verifiesWith(secret, r)).toEqual({ standard: true, service: true })
    expect(verifiesWith(hook.secret, r)).toEqual({ standard: false, service: false })
  })

  test('a second rotation within the window replaces the previous secret with the one being rotated out: the first secret stops at once', async () => {
    const { hook, rotate, delivered } = await setup()
    const second = (await rotate()).body.secret
    const third = await rotate()
    expect(third.status).toBe(200)
    const r = await delivered('Third secret')
    expect(entries(r).service).toHaveLength(2)
    expect(verifiesWith(third.body.secret, r)).toEqual({ standard: true, service: true })
    expect(verifiesWith(second, r)).toEqual({ standard: true, service: true })
    expect(verifiesWith(hook.secret, r)).toEqual({ standard: false, service: false })
  })

  test('a delivery queued before a rotation is signed with the secrets valid when it is sent: its retry carries both', async () => {
    const clock = new FakeClock()
    const { server, receiver, hook, rotate, agent } = await setup(clock, (_r, index) =>
      index === 0 ? 500 : 200,
    )
    await agent.ok('create_task', { columnId: await firstColumn(agent), title: 'Retried' })
    await receiver.waitFor((all) => all.length >= 1)
    expect(entries(receiver.received[0] as Received).service).toHaveLength(1)
    const row = await eventually(async () => {
      const [d] = await deliveryRows(server, hook.id)
      return d && d.attempts === 1 && d.locked_by === null ? d : undefined
    })
    const { secret } = (await rotate()).body
    clock.set(row.next_attempt_at.getTime())
    await receiver.waitFor((all) => all.length >= 2)
    const retry = receiver.received[1] as Received
    expect(retry.headers['webhook-id']).toBe(row.id)
    expect(entries(retry).service).toHaveLength(2)
    expect(verifiesWith(secret, retry)).toEqual({ standard: true, service: true })
    expect(verifiesWith(hook.secret, retry)).toEqual({ standard: true, service: true })
  })
})
