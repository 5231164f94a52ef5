import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Sender } from '../../server/webhooks/sender.ts'
import { Agent, ownerWithAgent, type Person } from '../support/client.ts'
import { STORAGES, type StorageKind } from '../support/storage.ts'
import { spawnServer } from './harness.ts'
import { line, rate, type Stats, stats, time } from './stats.ts'

const N = 200
const FAN_OUT = 10
const FAN_WRITES = 300

/** A loopback receiver that answers 200 at once and tells the bench what arrived when. */
class BenchReceiver {
  url = ''
  count = new Map<string, number>()
  private readonly waiting = new Map<string, (at: number) => void>()
  private countWaiter: { path: string; n: number; resolve: () => void } | undefined
  private readonly server: Server

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const at = performance.now()
        res.writeHead(200)
        res.end()
        const path = req.url ?? '/'
        const n = (this.count.get(path) ?? 0) + 1
        this.count.set(path, n)
        if (this.countWaiter && this.countWaiter.path === path && n >= this.countWaiter.n) {
          this.countWaiter.resolve()
          this.countWaiter = undefined
        }
        if (this.waiting.size === 0) return
        const title = JSON.parse(Buffer.concat(chunks).toString('utf8'))?.data?.task?.title
        const waiter = this.waiting.get(title)
        if (waiter) {
          this.waiting.delete(title)
          waiter(at)
        }
      })
    })
  }

  async start(): Promise<this> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()))
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`
    return this
  }

  /** Resolves with the arrival time of the card.created carrying this title. */
  arrival(title: string): Promise<number> {
    return new Promise((resolve) => this.waiting.set(title, resolve))
  }

  /** Resolves once `n` requests reached `path`. */
  reached(path: string, n: number): Promise<void> {
    if ((this.count.get(path) ?? 0) >= n) return Promise.resolve()
    return new Promise((resolve) => {
      this.countWaiter = { path, n, resolve }
    })
  }

  close(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((r) => this.server.close(() => r()))
  }
}

async function register(person: Person, url: string): Promise<void> {
  const res = await person.request('POST', `/api/app/orgs/${person.orgId}/webhooks`, {
    url,
    events: ['card.created'],
  })
  if (res.status !== 201) throw new Error(`register → ${res.status} ${JSON.stringify(res.body)}`)
}

/** A payload of the size a card.created carries. */
function samplePayload(): string {
  return JSON.stringify({
    id: crypto.randomUUID(),
    type: 'card.created',
    createdAt: new Date().toISOString(),
    organizationId: crypto.randomUUID(),
    actor: { type: 'agent', email: 'key@agents.example', agentName: null },
    data: { task: { id: crypto.randomUUID(), title: 'bench', description: '', tags: [] } },
  }).padEnd(1200, ' ')
}

async function storageRun(kind: StorageKind, log: (l: string) => void): Promise<void> {
  const receiver = await new BenchReceiver().start()
  const server = await spawnServer(kind, {
    WEBHOOK_ALLOW_PRIVATE: '1',
    RATE_LIMIT_PER_KEY: '1000000',
  })
  const sender = new Sender({ allowPrivate: true, timeoutMs: 8000 })
  try {
    log(`\n### ${kind === 'postgres' ? 'real Postgres' : 'PGlite'} (server in its own process)`)
    const body = samplePayload()
    const bare = await time(N, () => sender.send(`${receiver.url}/bare`, body, {}))
    log(line('baseline: bare local HTTP POST round trip', bare))

    const { owner, agent } = await ownerWithAgent(server.url)
    await register(owner, `${receiver.url}/latency`)
    const { columns } = await agent.ok('list_columns')
    const columnId = columns[0].id as string

    // Write → arrival: from sending create_task to the webhook's body reaching the receiver.
    const arrivals: number[] = []
    const responses: number[] = []
    for (let i = -20; i < N; i++) {
      const title = `latency ${i}`
      const arrived = receiver.arrival(title)
      const t0 = performance.now()
      await agent.ok('create_task', { columnId, title })
      const answered = performance.now()
      const at = await arrived
      if (i < 0) continue
      responses.push(answered - t0)
      arrivals.push(at - t0)
    }
    const arrival: Stats = stats(arrivals)
    log(line('create_task answered (agent endpoint, 1 webhook)', stats(responses), bare))
    log(line('write → webhook arrival at a local receiver', arrival, bare))

    // Throughput: every write fans out to FAN_OUT endpoints; 8 writers on their own keys.
    const fan = await ownerWithAgent(server.url)
    for (let i = 0; i < FAN_OUT; i++) await register(fan.owner, `${receiver.url}/fan`)
    const fanColumn = (await fan.agent.ok('list_columns')).columns[0].id as string
    const writers = await Promise.all(
      Array.from({ length: 8 }, async () => new Agent(server.url, await fan.owner.createKey())),
    )
    const total = FAN_WRITES * FAN_OUT
    const all = receiver.reached('/fan', total)
    let next = 0
    const t0 = performance.now()
    await Promise.all(
      writers.map(async (w) => {
        while (next < FAN_WRITES) {
          next++
          await w.ok('create_task', { columnId: fanColumn, title: 'fan-out' })
        }
      }),
    )
    await all
    log(
      rate(
        `webhook deliveries/s (${FAN_WRITES} writes × ${FAN_OUT} endpoints)`,
        total,
        performance.now() - t0,
      ),
    )
    // Baseline throughput: the same number of bare POSTs, 16 at a time (the worker's concurrency).
    let sent = 0
    const b0 = performance.now()
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (sent < total) {
          sent++
          await sender.send(`${receiver.url}/bare-rate`, body, {})
        }
      }),
    )
    log(rate('baseline: bare local HTTP POSTs/s, 16 concurrent', total, performance.now() - b0))
  } finally {
    sender.close()
    await server.close()
    await receiver.close()
  }
}

/** Webhooks: write-to-arrival latency and delivery throughput, on both storages. */
export async function run(log: (line: string) => void): Promise<void> {
  for (const kind of STORAGES) await storageRun(kind, log)
}
