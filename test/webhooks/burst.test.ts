import { createHmac } from 'node:crypto'
import { afterEach, describe, expect, test } from 'vitest'
import { DeliveryWorker } from '../../server/webhooks/worker.ts'
import { Agent, Person } from '../support/client.ts'
import type { TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import {
  deliveryRows,
  eventually,
  firstColumn,
  type Received,
  Receiver,
  register,
  startWebhookServer,
} from './support.ts'

const silent = { error: () => {}, warn: () => {}, info: () => {} }

/** Writes `count` cards through the agent endpoint, spread over keys (each under its rate budget). */
async function writeCards(server: TestServer, owner: Person, count: number): Promise<Set<string>> {
  const perKey = 200
  const agents: Agent[] = []
  for (let i = 0; i < Math.ceil(count / perKey); i++) {
    agents.push(new Agent(server.url, await owner.createKey(`burst ${i}`)))
  }
  const columnId = await firstColumn(agents[0] as Agent)
  const ids = new Set<string>()
  let next = 0
  const lane = async (agent: Agent) => {
    for (;;) {
      const i = next++
      if (i >= count) return
      const { task } = await agent.ok('create_task', { columnId, title: `Burst ${i}` })
      ids.add(task.id)
    }
  }
  // Four lanes per key: concurrent writes, each key below its per-minute budget in total.
  await Promise.all(agents.flatMap((a) => [lane(a), lane(a), lane(a), lane(a)]))
  return ids
}

describe.each(STORAGES)('at-least-once under load (%s)', (kind) => {
  const cleanup: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) await f()
  })

  test('a burst of 1,000 events with a receiver failing a third of the requests ends with every event acknowledged at least once and none unexpected', async () => {
    const server = await startWebhookServer(kind, {
      timing: { retryDelaysMs: [20, 20, 20, 20, 20], pollMs: 20 },
    })
    cleanup.push(() => server.close())
    // Every third request fails, but never the same delivery more than twice, so no
    // delivery runs out of its six attempts: every event must get through.
    const failedFor = new Map<string, number>()
    let n = 0
    const receiver = await Receiver.start((r) => {
      const id = r.headers['x-service-delivery'] as string
      const fails = failedFor.get(id) ?? 0
      if (n++ % 3 === 2 && fails < 2) {
        failedFor.set(id, fails + 1)
        return 500
      }
      return 200
    })
    cleanup.push(() => receiver.close())
    const owner = new Person(server.url)
    await owner.signUp()
    const hook = await register(owner, receiver.url, ['card.created'])

    const created = await writeCards(server, owner, 1000)
    expect(created.size).toBe(1000)

    // Acknowledged: answered 2xx. Each event must be, at least once.
    const acknowledged = (all: Received[]) =>
      new Set(
        all
          .filter((r) => r.status !== undefined && r.status < 300)
          .map((r) => r.json.data.task.id as string),
      )
    await receiver.waitFor((all) => acknowledged(all).size >= 1000, 120_000)

    const got = receiver.received
    // None unexpected: every request announces one of the cards written, as card.created.
    for (const r of got) {
      expect(r.json.type).toBe('card.created')
      expect(created.has(r.json.data.task.id)).toBe(true)
      const sig = createHmac('sha256', hook.secret)
        .update(`${r.headers['x-service-timestamp']}.${r.body}`)
        .digest('hex')
      expect(r.headers['x-service-signature']).toBe(`v1=${sig}`)
    }
    // One delivery per event, its id stable across the retries of that event.
    const eventOf = new Map<string, string>()
    for (const r of got) {
      const id = r.headers['x-service-delivery'] as string
      expect(eventOf.get(id) ?? r.json.id).toBe(r.json.id)
      eventOf.set(id, r.json.id)
    }
    expect(eventOf.size).toBe(1000)
    const failed = got.filter((r) => r.status === 500).length
    expect(failed / got.length).toBeGreaterThan(0.25)
    expect(failed / got.length).toBeLessThan(0.4)
    const rows = await eventually(async () => {
      const all = await deliveryRows(server, hook.id)
      return all.every((d) => d.status === 'delivered') ? all : undefined
    }, 30_000)
    expect(rows).toHaveLength(1000)
  }, 240_000)

  test('workers sharing one outbox never take the same delivery: with nothing failing, each is sent exactly once', async () => {
    const server = await startWebhookServer(kind)
    cleanup.push(() => server.close())
    const receiver = await Receiver.start()
    cleanup.push(() => receiver.close())
    // Two more workers, as other server processes would run, polling hard to compete.
    let sentByOthers = 0
    for (let i = 0; i < 2; i++) {
      const worker = new DeliveryWorker({
        db: server.storage.db,
        log: silent,
        allowPrivate: true,
        timing: { pollMs: 2, concurrency: 8 },
        hooks: {
          afterSend: async () => {
            sentByOthers += 1
          },
        },
      })
      worker.start()
      cleanup.push(() => worker.stop())
    }
    const owner = new Person(server.url)
    await owner.signUp()
    const hook = await register(owner, receiver.url, ['card.created'])
    const created = await writeCards(server, owner, 300)
    await receiver.waitFor((all) => all.length >= 300, 60_000)
    const rows = await eventually(async () => {
      const all = await deliveryRows(server, hook.id)
      return all.every((d) => d.status === 'delivered') ? all : undefined
    }, 30_000)
    expect(rows.every((d) => d.attempts === 1)).toBe(true)
    const ids = receiver.received.map((r) => r.headers['x-service-delivery'])
    expect(new Set(ids).size).toBe(ids.length)
    // On Postgres the workers really compete. PGlite runs one statement at a time and the
    // nudged worker's claim is queued behind each write, so it usually takes everything.
    if (kind === 'postgres') expect(sentByOthers).toBeGreaterThan(0)
    expect(new Set(receiver.received.map((r) => r.json.data.task.id))).toEqual(created)
  }, 120_000)
})
