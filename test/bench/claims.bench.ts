import { randomBytes } from 'node:crypto'
import type { Config } from '../../server/config.ts'
import { Agent, ownerWithAgent, Person } from '../support/client.ts'
import { startServer } from '../support/server.ts'
import { startProcess } from '../support/service-process.ts'
import { STORAGES, type StorageKind } from '../support/storage.ts'
import { benchStorage } from './harness.ts'
import { line, rate, type Stats, stats, time } from './stats.ts'

const N = 200
const CHANGES = 500

/** A cursor past everything written so far (the feed trails the present by about a second). */
async function settledCursor(agent: Agent): Promise<string> {
  const t = Date.now()
  for (;;) {
    const { cursor } = await agent.ok('get_changes')
    if (Date.parse(cursor) > t) return cursor
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function storageRun(kind: StorageKind, log: (l: string) => void) {
  // The benchmark measures claims and the feed, not the 240-a-minute budget.
  const overrides: Partial<Config> = { rateLimitPerKey: 1_000_000 }
  const server = await startServer(kind, overrides)
  try {
    log(`\n### ${kind === 'postgres' ? 'real Postgres' : 'PGlite'}`)
    const { agent } = await ownerWithAgent(server.url)
    const { columns } = await agent.ok('list_columns')
    const columnId = columns[0].id as string

    const whoami = await time(N, () => agent.ok('whoami'))
    log(line('baseline: whoami (authenticated, rate-limited round trip)', whoami))

    const { task } = await agent.ok('create_task', { columnId, title: 'claimed over and over' })
    const update = await time(N, (i) =>
      agent.ok('update_task', { taskId: task.id, title: `t${i}` }),
    )
    log(line('baseline: update_task (a claim-locked write)', update, whoami))

    const pair = await time(N, async () => {
      await agent.ok('claim_task', { taskId: task.id, agentName: 'Bench', note: 'timing' })
      await agent.ok('release_task', { taskId: task.id, agentName: 'Bench' })
    })
    log(line('claim_task + release_task round trip', pair, whoami))

    await agent.ok('claim_task', { taskId: task.id, agentName: 'Bench' })
    const heartbeat = await time(N, () =>
      agent.ok('heartbeat_task', { taskId: task.id, agentName: 'Bench' }),
    )
    log(line('heartbeat_task', heartbeat, whoami))
    await agent.ok('release_task', { taskId: task.id, agentName: 'Bench' })

    const since = await settledCursor(agent)
    for (let i = 0; i < CHANGES; i++) {
      await agent.ok('create_task', { columnId, title: `change ${i}` })
    }
    await settledCursor(agent)
    const first = await agent.ok('get_changes', { since, limit: CHANGES })
    if (first.tasks.length !== CHANGES) {
      throw new Error(`expected ${CHANGES} changed cards, got ${first.tasks.length}`)
    }
    const feed = await time(50, () => agent.ok('get_changes', { since, limit: CHANGES }), 5)
    log(line(`get_changes over ${CHANGES} changes (one page)`, feed, whoami))
    const board = await time(50, () => agent.ok('get_board'), 5)
    log(line(`baseline: get_board of the same ${CHANGES}-card board`, board, whoami))
  } finally {
    await server.close()
  }
}

const RACERS = 16
const QUEUE = 2_000

/**
 * Every racer takes claims at once until `take` says nothing is left; each call timed.
 * Returns the latencies and the wall time of the whole race.
 */
async function race(
  racers: readonly { agent: Agent; name: string }[],
  take: (r: { agent: Agent; name: string }, i: number) => Promise<string | null>,
): Promise<{ latency: Stats; count: number; ms: number; ids: string[] }> {
  const samples: number[] = []
  const ids: string[] = []
  const t0 = performance.now()
  await Promise.all(
    racers.map(async (r, i) => {
      for (;;) {
        const start = performance.now()
        const id = await take(r, i)
        if (id === null) return
        samples.push(performance.now() - start)
        ids.push(id)
      }
    }),
  )
  return { latency: stats(samples), count: ids.length, ms: performance.now() - t0, ids }
}

/**
 * claim_next as a fleet uses it: 16 agents (8 keys, two names each) on two server processes
 * sharing one Postgres and one Redis, racing over a queue of 2,000 cards until it is empty.
 * Baseline, in the same run: the same 16 agents each claim_task-ing their own share of
 * 2,000 known cards (no contention, no choosing).
 */
export async function queueRun(log: (l: string) => void) {
  // The processes share Redis, as a scaled-out service does: each claim written to the board
  // on one process reaches the other's live copy through it (this load once stalled both
  // processes for seconds: see GatedRedis in server/live/redis.ts). BENCH_REDIS=0 shares
  // Postgres only: claims and claim_next's pick are decided there either way.
  const withRedis = process.env.BENCH_REDIS !== '0'
  const storage = await benchStorage('postgres')
  const env = {
    ...storage.env,
    ...(withRedis ? { REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' } : {}),
    REDIS_PREFIX: `cb-bench-${randomBytes(6).toString('hex')}`,
    RATE_LIMIT_PER_KEY: '1000000',
    LOG_LEVEL: process.env.BENCH_SERVER_LOG ?? 'error',
  }
  const a = await startProcess(env)
  const b = await startProcess(env)
  try {
    log(
      `\n### claim_next: ${RACERS} agents on 2 processes (real Postgres${withRedis ? ' + Redis' : ''}), ${QUEUE} cards`,
    )
    const owner = new Person(a.url)
    await owner.signUp()
    const keys: string[] = []
    for (let i = 0; i < RACERS / 2; i++) keys.push(await owner.createKey(`racer ${i}`))
    const racers = keys.flatMap((key, i) => [
      { agent: new Agent(a.url, key), name: `A${i}` },
      { agent: new Agent(b.url, key), name: `B${i}` },
    ])
    const first = racers[0]?.agent as Agent
    const { columns } = await first.ok('list_columns')
    const levels = ['urgent', 'high', 'normal', 'low', undefined]
    const fill = async (columnId: string, n: number) => {
      const made: string[] = []
      for (let i = 0; i < n; i++) {
        const priority = levels[i % levels.length]
        const { task } = await first.ok('create_task', {
          columnId,
          title: `queued ${i}`,
          ...(priority ? { priority } : {}),
        })
        made.push(task.id)
      }
      return made
    }
    // The baseline's cards sit in the backlog, the queue's in Ready: claim_next asks for role ready.
    const known = await fill(columns[0].id, QUEUE)
    const shares = racers.map((_, i) => known.filter((_, j) => j % RACERS === i))
    const baseline = await race(racers, async (r, i) => {
      const taskId = shares[i]?.shift()
      if (taskId === undefined) return null
      await r.agent.ok('claim_task', { taskId, agentName: r.name })
      return taskId
    })
    log(line('baseline: claim_task of a known card (16 at once)', baseline.latency))
    log(rate('baseline: claim_task throughput', baseline.count, baseline.ms))
    await fill(columns[1].id, QUEUE)
    const queue = await race(racers, async (r) => {
      const next = await r.agent.ok('claim_next', { agentName: r.name, role: 'ready' })
      return next.task ? (next.task.id as string) : null
    })
    if (queue.count !== QUEUE || new Set(queue.ids).size !== QUEUE) {
      throw new Error(
        `claim_next handed out ${queue.count} claims of ${new Set(queue.ids).size} cards`,
      )
    }
    log(line('claim_next racing over the queue (16 at once)', queue.latency, baseline.latency))
    log(rate('claim_next throughput (every card exactly once)', queue.count, queue.ms))
  } catch (error) {
    // A failed call says little on its own: what the servers printed says why.
    log(`process A: ${a.output().slice(-2000)}\nprocess B: ${b.output().slice(-2000)}`)
    throw error
  } finally {
    await a.stop()
    await b.stop()
    await storage.drop()
  }
}

/** `npm run bench claims`: claim round trips, the change feed, and claim_next racing. */
export async function run(log: (line: string) => void): Promise<void> {
  for (const kind of STORAGES) await storageRun(kind, log)
  await queueRun(log)
}
