import { afterEach, describe, expect, test } from 'vitest'
import { DEFAULT_TIMING } from '../../server/webhooks/timing.ts'
import { ownerWithAgent } from '../support/client.ts'
import type { TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import {
  deliveryRows,
  eventually,
  FakeClock,
  firstColumn,
  listed,
  Receiver,
  type Respond,
  register,
  startWebhookServer,
} from './support.ts'

const MINUTE = 60_000

describe.each(STORAGES)('the delivery worker (%s)', (kind) => {
  const cleanup: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f()
  })

  async function setup(
    options: Parameters<typeof startWebhookServer>[1],
    respond?: Respond,
    overrides: Parameters<typeof startWebhookServer>[2] = {},
  ) {
    const server = await startWebhookServer(kind, options, overrides)
    cleanup.push(() => server.close())
    const receiver = await Receiver.start(respond)
    cleanup.push(() => receiver.close())
    const { owner, agent } = await ownerWithAgent(server.url)
    const hook = await register(owner, receiver.url, ['card.created'])
    const columnId = await firstColumn(agent)
    const write = async (title: string) =>
      (await agent.ok('create_task', { columnId, title })).task as { id: string }
    return { server, receiver, owner, agent, hook, write }
  }

  /** The endpoint's only delivery once its latest attempt has been recorded. */
  const recorded = (server: TestServer, webhookId: string, attempts: number) =>
    eventually(async () => {
      const [row] = await deliveryRows(server, webhookId)
      return row && row.attempts === attempts && row.locked_by === null ? row : undefined
    })

  test('a failed delivery is retried five times over about four hours (1 min, 5 min, 30 min, 1 h, 2.5 h, each ± 10 %), always with the same delivery id', async () => {
    const clock = new FakeClock()
    const { server, receiver, hook, write } = await setup({ clock }, () => 500)
    const start = clock.now()
    await write('Never acknowledged')
    const waits: number[] = []
    for (let attempt = 1; attempt <= 5; attempt++) {
      await receiver.waitFor((all) => all.length >= attempt)
      const row = await recorded(server, hook.id, attempt)
      expect(row.status).toBe('pending')
      expect(row.last_status_code).toBe(500)
      const wait = row.next_attempt_at.getTime() - clock.now()
      const base = DEFAULT_TIMING.retryDelaysMs[attempt - 1] as number
      expect(wait).toBeGreaterThanOrEqual(base * 0.9)
      expect(wait).toBeLessThanOrEqual(base * 1.1)
      waits.push(wait)
      clock.set(row.next_attempt_at.getTime())
      server.app.webhooks.worker.nudge()
    }
    await receiver.waitFor((all) => all.length >= 6)
    const last = await recorded(server, hook.id, 6)
    expect(last.status).toBe('failed')
    expect(receiver.received).toHaveLength(6)

    const total = clock.now() - start
    expect(total).toBeGreaterThan(3.6 * 60 * MINUTE)
    expect(total).toBeLessThan(4.6 * 60 * MINUTE)
    const ids = new Set(receiver.received.map((r) => r.headers['x-service-delivery']))
    expect(ids.size).toBe(1)
    const bodies = new Set(receiver.received.map((r) => r.body))
    expect(bodies.size).toBe(1)
    // Each attempt is signed at its own time (the injected clock).
    const stamps = receiver.received.map((r) => Number(r.headers['x-service-timestamp']))
    for (let i = 1; i < stamps.length; i++) {
      expect((stamps[i] as number) - (stamps[i - 1] as number)).toBeCloseTo(
        (waits[i - 1] as number) / 1000,
        -1,
      )
    }
  })

  test('an endpoint whose deliveries fail for five events in a row switches itself off and records why; a success in between resets the count', async () => {
    let up = false
    const { server, receiver, owner, hook, write } = await setup(
      { timing: { retryDelaysMs: [5, 5, 5, 5, 5], pollMs: 10 } },
      () => (up ? 200 : 503),
    )
    const finished = async (n: number) =>
      eventually(async () => {
        const rows = await deliveryRows(server, hook.id)
        const done = rows.filter((r) => r.status !== 'pending')
        return done.length >= n ? rows : undefined
      })

    for (let i = 0; i < 4; i++) await write(`fails ${i}`)
    await finished(4)
    expect(await listed(owner, hook.id)).toMatchObject({ enabled: true, consecutiveFailures: 4 })

    up = true
    await write('gets through')
    await finished(5)
    expect(await listed(owner, hook.id)).toMatchObject({ enabled: true, consecutiveFailures: 0 })

    up = false
    for (let i = 0; i < 4; i++) await write(`fails again ${i}`)
    await finished(9)
    expect(await listed(owner, hook.id)).toMatchObject({ enabled: true, consecutiveFailures: 4 })
    await write('the fifth in a row')
    const off = await eventually(async () => {
      const w = await listed(owner, hook.id)
      return w.enabled ? undefined : w
    })
    expect(off.disabledReason).toMatch(/5 events in a row could not be delivered/)
    expect(off.disabledReason).toMatch(/HTTP 503/)
    expect(Date.parse(off.disabledAt)).not.toBeNaN()
    const rows = await deliveryRows(server, hook.id)
    expect(rows.map((r) => r.status).sort()).toEqual(['delivered', ...Array(9).fill('failed')])
    expect(rows.filter((r) => r.status === 'failed').every((r) => r.attempts === 6)).toBe(true)

    // Switched off: new events are not queued for it at all.
    const before = receiver.received.length
    await write('while off')
    expect(await deliveryRows(server, hook.id)).toHaveLength(10)

    const on = await owner.request(
      'POST',
      `/api/app/orgs/${owner.orgId}/webhooks/${hook.id}/enable`,
    )
    expect(on.status).toBe(200)
    expect(on.body.webhook).toMatchObject({
      enabled: true,
      disabledReason: null,
      disabledAt: null,
      consecutiveFailures: 0,
    })
    up = true
    const { id } = await write('after re-enabling')
    const [arrived] = (await receiver.waitFor((all) => all.length > before)).slice(before)
    expect(arrived?.json.data.task.id).toBe(id)
  })

  test('a reply must come within the timeout (8 s by default): a receiver that does not answer is a failed attempt', async () => {
    expect(DEFAULT_TIMING.timeoutMs).toBe(8000)
    const { server, receiver, hook, write } = await setup(
      { timing: { timeoutMs: 200, leaseMs: 10_000 } },
      () => 'hang',
    )
    await write('Slow receiver')
    await receiver.waitFor((all) => all.length >= 1)
    const row = await recorded(server, hook.id, 1)
    expect(row).toMatchObject({ status: 'pending', last_status_code: null })
    expect(row.last_error).toMatch(/no reply within 0.2 s/)
  })

  test('a worker that dies between sending and recording leads to a redelivery with the same delivery id once its lease passes', async () => {
    const clock = new FakeClock()
    let died: () => void = () => {}
    const death = new Promise<void>((resolve) => {
      died = resolve
    })
    const { server, receiver, hook, write } = await setup(
      {
        clock,
        hooks: {
          afterSend: async (_id, attempt) => {
            if (attempt > 1) return
            died()
            throw new Error('killed between sending and recording')
          },
        },
      },
      undefined,
      // The worker logs the lost record as an error; expected here.
      { logLevel: 'silent' },
    )
    await write('Delivered twice')
    await receiver.waitFor((all) => all.length >= 1)
    await death
    const [held] = await deliveryRows(server, hook.id)
    expect(held).toMatchObject({ status: 'pending', attempts: 1 })
    expect(held?.locked_by).not.toBeNull()
    // The claim is a lease, not a retry: it lasts DEFAULT_TIMING.leaseMs from the claim.
    expect((held?.next_attempt_at.getTime() ?? 0) - clock.now()).toBe(DEFAULT_TIMING.leaseMs)

    clock.advance(DEFAULT_TIMING.leaseMs)
    server.app.webhooks.worker.nudge()
    await receiver.waitFor((all) => all.length >= 2)
    const row = await recorded(server, hook.id, 2)
    expect(row.status).toBe('delivered')
    const [first, second] = receiver.received
    expect(second?.headers['x-service-delivery']).toBe(first?.headers['x-service-delivery'])
    expect(second?.headers['webhook-id']).toBe(first?.headers['webhook-id'])
    expect(second?.body).toBe(first?.body)
    const attempts = await server.storage.db.query<{ attempt: number; ok: boolean }>(
      'select attempt, ok from webhook_attempts where delivery_id = $1 order by attempt',
      [row.id],
    )
    expect(attempts).toEqual([{ attempt: 2, ok: true }])
  })

  test('closing the server waits for an in-flight delivery and records its outcome', async () => {
    let answer: (status: number) => void = () => {}
    const storageKind = kind
    const server = await startWebhookServer(storageKind)
    const receiver = await Receiver.start(
      () =>
        new Promise<number>((resolve) => {
          answer = resolve
        }),
    )
    cleanup.push(async () => {
      await receiver.close()
      await server.storage.drop()
    })
    const { owner, agent } = await ownerWithAgent(server.url)
    const hook = await register(owner, receiver.url, ['card.created'])
    await agent.ok('create_task', { columnId: await firstColumn(agent), title: 'In flight' })
    await receiver.waitFor((all) => all.length >= 1)
    const closing = server.app.close()
    answer(204)
    await closing
    const [row] = await deliveryRows(server, hook.id)
    expect(row).toMatchObject({ status: 'delivered', attempts: 1, last_status_code: 204 })
  })
})
