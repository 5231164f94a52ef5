import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Agent, eventually, Person } from '../support/client.ts'
import { type ServiceProcess, startProcess } from '../support/service-process.ts'
import { freshDb, type TestDb } from '../support/storage.ts'

/**
 * Scaled out, one process serves each organisation's agent calls and the others pass them
 * on (server/live/owners.ts, server/faces/agent/forward.ts). Here that process is killed
 * (SIGKILL: no shutdown, its lease left in Redis) while agents keep calling the other.
 */

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

describe('the process serving an organisation dies (postgres + redis, real processes)', () => {
  let storage: TestDb
  let serving: ServiceProcess
  let other: ServiceProcess
  let prefix: string
  let redis: Redis

  beforeAll(async () => {
    storage = await freshDb('postgres')
    prefix = `cb-test-${randomBytes(4).toString('hex')}`
    const env = {
      DATABASE_URL: storage.url as string,
      REDIS_URL,
      REDIS_PREFIX: prefix,
      RATE_LIMIT_PER_KEY: '1000000',
      LOG_LEVEL: 'warn',
    }
    ;[serving, other] = await Promise.all([startProcess(env), startProcess(env)])
    redis = new Redis(REDIS_URL)
  }, 60_000)
  afterAll(async () => {
    await Promise.all([serving.stop(), other.stop()])
    redis.disconnect()
    await storage.drop()
  })

  test('calls through the other process go on being answered, only a write in flight without an Idempotency-Key is a 502, and every acknowledged write is there', async () => {
    const owner = new Person(other.url)
    await owner.signUp()
    const key = await owner.createKey()
    const direct = new Agent(serving.url, key)
    const { columns } = await direct.ok('list_columns')
    const lease = `${prefix}:serves:${owner.orgId}`
    expect(await redis.get(lease)).toMatch(new RegExp(` ${serving.url}$`))

    const acknowledged: { id: string; title: string }[] = []
    const sentWithKey = new Map<string, string>()
    const statuses: number[] = []
    let afterKill = 0
    let keyedRetries = 0
    let killed = false
    const loop = async (n: number) => {
      for (let i = 0; ; i++) {
        if (killed && afterKill >= 80) return
        if (!killed && acknowledged.length >= 60) {
          killed = true
          serving.child.kill('SIGKILL')
        }
        const title = `agent ${n} call ${i}`
        // Half the agents send an Idempotency-Key with every write.
        const idempotencyKey = n % 2 === 0 ? `k-${n}-${i}` : undefined
        if (idempotencyKey) sentWithKey.set(title, idempotencyKey)
        const agent = new Agent(
          other.url,
          key,
          idempotencyKey ? { 'idempotency-key': idempotencyKey } : {},
        )
        let reply = await agent.call('create_task', { columnId: columns[0].id, title })
        // A keyed call the dead process had begun is "still running" until its lease
        // lapses (10 s); sent again with the same key it is then made once.
        while (idempotencyKey && reply.status === 409) {
          expect(reply.body.error).toMatch(/still running/)
          keyedRetries += 1
          await new Promise((r) => setTimeout(r, 1_000))
          reply = await agent.call('create_task', { columnId: columns[0].id, title })
        }
        statuses.push(reply.status)
        if (reply.status === 200) {
          acknowledged.push({ id: reply.body.task.id, title })
          if (killed) afterKill += 1
        }
      }
    }
    await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(loop))
    await eventually(() => serving.child.signalCode ?? undefined, 10_000)
    expect(serving.child.signalCode).toBe('SIGKILL')

    // Only 200s, and 502s for writes in flight when it died (at most one per agent without a key).
    expect(statuses.filter((s) => s !== 200 && s !== 502)).toEqual([])
    expect(statuses.filter((s) => s === 502).length).toBeLessThanOrEqual(4)
    // The other process took the organisation.
    expect(await redis.get(lease)).toMatch(new RegExp(` ${other.url}$`))
    expect(other.child.exitCode).toBeNull()
    expect(keyedRetries).toBeLessThanOrEqual(4 * 15)
    // Every acknowledged write is stored, and a keyed call is never made twice.
    const { tasks } = await new Agent(other.url, key).ok('get_board')
    const stored = new Map<string, number>()
    for (const t of tasks as { id: string; title: string }[]) {
      stored.set(t.title, (stored.get(t.title) ?? 0) + 1)
    }
    const ids = new Set((tasks as { id: string }[]).map((t) => t.id))
    for (const a of acknowledged) expect(ids.has(a.id), a.title).toBe(true)
    for (const title of sentWithKey.keys()) expect(stored.get(title) ?? 0).toBeLessThanOrEqual(1)
  }, 120_000)
})
