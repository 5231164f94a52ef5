import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { Person } from '../support/client.ts'
import { startProcess } from '../support/service-process.ts'
import { type CpuSpent, cpuLine, cpuMeter } from './cpu.ts'
import { benchStorage } from './harness.ts'
import { lightAgent } from './light-client.ts'
import { type Stats, stats } from './stats.ts'

/**
 * `npm run bench -- fleet`: claims as a fleet makes them. 32 agents (16 keys, two names
 * each) of one organisation on one server process over real Postgres, then the same split
 * over two processes sharing Postgres and Redis (each also as a ratio to one process's rate in
 * the same run). Baseline, in the same run and database:
 * bare Postgres handing out the next free row of a queue table with FOR UPDATE SKIP LOCKED
 * from 32 connections. Every figure is a rate (per second over the whole race), p50 and
 * p99, and the rate's ratio to the baseline's; under each, the CPU a call took in the
 * service, Postgres and the load generator (cpu.ts), which share this machine's cores.
 */

const AGENTS = 32
const KEYS = 16
const CARDS = 2_000

interface Race {
  latency: Stats
  count: number
  ms: number
  ids: string[]
  /** Where the race's CPU went (Linux). */
  cpu: CpuSpent | undefined
}

/**
 * Every racer takes until `take` says nothing is left; each call timed, and the CPU of the
 * service processes (`servicePids`), Postgres and this process counted.
 */
async function race(
  racers: number,
  take: (racer: number) => Promise<string | null>,
  servicePids: readonly number[],
): Promise<Race> {
  const samples: number[] = []
  const ids: string[] = []
  const meter = await cpuMeter(servicePids)
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: racers }, async (_, i) => {
      for (;;) {
        const start = performance.now()
        const id = await take(i)
        if (id === null) return
        samples.push(performance.now() - start)
        ids.push(id)
      }
    }),
  )
  const ms = performance.now() - t0
  return { latency: stats(samples), count: ids.length, ms, ids, cpu: await meter?.stop() }
}

/** 503s answered (nothing written, Retry-After): the call is sent again, as agents do. */
let unavailable = 0

/**
 * An agent of the fleet: one kept-alive connection, through the light client (fetch costs
 * the generator several times as much CPU a call, taken from the server on two cores).
 */
type FleetAgent = ReturnType<typeof lightAgent>

/** Calls and insists on 200, sending the call again after a 503. */
async function ok(agent: FleetAgent, action: string, params: unknown): Promise<any> {
  for (;;) {
    const reply = await agent.call(action, params)
    if (reply.status === 200) return reply.body
    if (reply.status !== 503) {
      throw new Error(`${action} → ${reply.status} ${JSON.stringify(reply.body)}`)
    }
    unavailable += 1
    await new Promise((r) => setTimeout(r, 50))
  }
}

const perSecond = (r: Race) => (r.count / r.ms) * 1000
const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2))

function report(label: string, r: Race, baseline?: Race, oneProcess?: number): string {
  const ratio = baseline ? `  ×${(perSecond(r) / perSecond(baseline)).toFixed(3)} of bare` : ''
  const scaled =
    oneProcess === undefined ? '' : `, ×${(perSecond(r) / oneProcess).toFixed(2)} of one process`
  return `${label.padEnd(58)} ${Math.round(perSecond(r)).toString().padStart(6)} /s   p50 ${f(r.latency.median).padStart(6)} ms   p99 ${f(r.latency.p99).padStart(6)} ms   (n=${r.count})${ratio}${scaled}\n${cpuLine(r.cpu, r.count)}`
}

/** The baseline: 32 connections taking the next free row of a queue table, autocommit. */
async function bareSkipLocked(url: string, servicePids: readonly number[]): Promise<Race> {
  const sql = postgres(url, { max: AGENTS, onnotice: () => {} })
  try {
    await sql`create table bench_queue (id bigserial primary key, priority int not null,
                                        taken_by int, taken_at timestamptz)`
    await sql`insert into bench_queue (priority) select g % 5 from generate_series(1, ${CARDS}) g`
    await sql`create index bench_queue_free on bench_queue (priority, id) where taken_by is null`
    const result = await race(
      AGENTS,
      async (i) => {
        const [row] = await sql<{ id: string }[]>`
        update bench_queue set taken_by = ${i}, taken_at = now()
         where id = (select id from bench_queue where taken_by is null
                      order by priority, id for update skip locked limit 1)
        returning id`
        return row ? String(row.id) : null
      },
      servicePids,
    )
    if (new Set(result.ids).size !== CARDS) throw new Error('bare SKIP LOCKED lost a row')
    await sql`drop table bench_queue`
    return result
  } finally {
    await sql.end()
  }
}

/** Each operation's rate over one process, for the two-process run's ratios. */
type Rates = Record<'create' | 'next' | 'claim', number>

async function fleetRun(
  processes: 1 | 2,
  log: (l: string) => void,
  oneProcess?: Rates,
): Promise<Rates> {
  const storage = await benchStorage('postgres')
  const env = {
    ...storage.env,
    ...(processes === 2 ? { REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' } : {}),
    REDIS_PREFIX: `cb-fleet-${randomBytes(6).toString('hex')}`,
    RATE_LIMIT_PER_KEY: '100000000',
    LOG_LEVEL: process.env.BENCH_SERVER_LOG ?? 'error',
    // e.g. --cpu-prof --cpu-prof-dir=/tmp/prof: where the servers spend their time.
    ...(process.env.BENCH_SERVER_NODE_OPTIONS
      ? { NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS }
      : {}),
  }
  const servers = [await startProcess(env)]
  if (processes === 2) servers.push(await startProcess(env))
  const servicePids = servers.map((s) => s.child.pid as number)
  const agents: { agent: FleetAgent; name: string }[] = []
  try {
    log(
      `\n### ${AGENTS} agents on ${KEYS} keys, one organisation, ${processes} process${processes === 2 ? 'es (Postgres + Redis)' : ''}, real Postgres`,
    )
    const url = servers[0]?.url as string
    const owner = new Person(url)
    await owner.signUp()
    for (let k = 0; k < KEYS; k++) {
      const key = await owner.createKey(`fleet ${k}`)
      for (let n = 0; n < AGENTS / KEYS; n++) {
        const server = servers[(k * 2 + n) % servers.length]?.url as string
        agents.push({ agent: lightAgent(server, key, 1), name: `K${k}N${n}` })
      }
    }
    const first = agents[0]?.agent as FleetAgent
    const { columns } = (await first.ok('list_columns')) as { columns: { id: string }[] }
    const [backlog, ready] = [columns[0]?.id as string, columns[1]?.id as string]

    const bare = await bareSkipLocked(storage.env.DATABASE_URL as string, servicePids)
    log(report('baseline: bare FOR UPDATE SKIP LOCKED (32 connections)', bare))

    // create_task: 2 × 2,000 cards, the backlog's for claim_task, Ready's for claim_next.
    const levels = ['urgent', 'high', 'normal', 'low', undefined]
    let made = 0
    const create = await race(
      AGENTS,
      async (i) => {
        const n = made++
        if (n >= 2 * CARDS) return null
        const r = agents[i] as { agent: FleetAgent; name: string }
        const priority = levels[n % levels.length]
        const { task } = await ok(r.agent, 'create_task', {
          columnId: n % 2 === 0 ? backlog : ready,
          title: `fleet ${n}`,
          ...(priority ? { priority } : {}),
        })
        return `${n % 2}:${task.id as string}`
      },
      servicePids,
    )
    log(report('create_task', create, bare, oneProcess?.create))
    const known = create.ids.filter((x) => x.startsWith('0:')).map((x) => x.slice(2))

    const next = await race(
      AGENTS,
      async (i) => {
        const r = agents[i] as { agent: FleetAgent; name: string }
        const got = await ok(r.agent, 'claim_next', { agentName: r.name, role: 'ready' })
        return got.task ? (got.task.id as string) : null
      },
      servicePids,
    )
    if (next.count !== CARDS || new Set(next.ids).size !== CARDS) {
      throw new Error(`claim_next handed out ${next.count} claims of ${new Set(next.ids).size}`)
    }
    log(report(`claim_next racing over ${CARDS} cards (each once)`, next, bare, oneProcess?.next))

    const shares = agents.map((_, i) => known.filter((_, j) => j % AGENTS === i))
    const claim = await race(
      AGENTS,
      async (i) => {
        const taskId = shares[i]?.shift()
        if (taskId === undefined) return null
        const r = agents[i] as { agent: FleetAgent; name: string }
        await ok(r.agent, 'claim_task', { taskId, agentName: r.name })
        return taskId
      },
      servicePids,
    )
    log(report('claim_task of known, distinct cards', claim, bare, oneProcess?.claim))
    const count = (re: RegExp) => servers.map((s) => s.output().match(re)?.length ?? 0).join(' + ')
    log(
      `503s answered and sent again: ${unavailable}; with BENCH_SERVER_LOG=info, claims overtaken by another process: ${count(/decide claims in Postgres for/g)}, lock timeouts: ${count(/lock timeout/g)}`,
    )
    unavailable = 0
    return { create: perSecond(create), next: perSecond(next), claim: perSecond(claim) }
  } catch (error) {
    for (const [i, s] of servers.entries()) {
      log(`process ${i} (exit ${s.child.exitCode}): ${s.stderr().slice(-3000)}`)
      log(`process ${i} output: ${s.output().slice(-2000)}`)
    }
    throw error
  } finally {
    for (const a of agents) a.agent.close()
    for (const s of servers) await s.stop()
    await storage.drop()
  }
}

/** `npm run bench -- fleet`: one process, then two (BENCH_FLEET_PROCESSES=1 or 2 for one run). */
export async function run(log: (line: string) => void): Promise<void> {
  const only = process.env.BENCH_FLEET_PROCESSES
  const one = only !== '2' ? await fleetRun(1, log) : undefined
  if (only !== '1') await fleetRun(2, log, one)
}
