import { Metrics } from '../../server/metrics/metrics.ts'
import { Agent, Person } from '../support/client.ts'
import { METRICS_TOKEN } from '../support/metrics.ts'
import { type BenchServer, spawnServer } from './harness.ts'
import { line, type Stats, stats } from './stats.ts'

/** create_task calls per round; rounds alternate without and with a scraper. */
const N = 300
const ROUNDS = 3
/** How often the scraper asks: far more often than Prometheus's default 15 s. */
const SCRAPE_EVERY_MS = 1_000

/** Requests rotate over keys so the per-key rate budget (240 a minute) is never the limit. */
async function rotating(owner: Person, keys: number) {
  const agents = await Promise.all(
    Array.from({ length: keys }, async () => new Agent(owner.url, await owner.createKey())),
  )
  let i = 0
  return (action: string, params?: unknown) =>
    (agents[i++ % agents.length] as Agent).ok(action, params)
}

/** Times `n` sequential create_task calls, in milliseconds each. */
async function creates(
  call: (action: string, params?: unknown) => Promise<unknown>,
  column: string,
  n: number,
): Promise<number[]> {
  const samples: number[] = []
  for (let i = 0; i < n; i++) {
    const t0 = performance.now()
    await call('create_task', { columnId: column, title: `metrics bench ${i}` })
    samples.push(performance.now() - t0)
  }
  return samples
}

/** A scraper as Prometheus runs it, timing each scrape, until stopped. */
function scraper(server: BenchServer) {
  const times: number[] = []
  let bytes = 0
  let running = true
  const done = (async () => {
    while (running) {
      const t0 = performance.now()
      const res = await fetch(`${server.url}/metrics`, {
        headers: { authorization: `Bearer ${METRICS_TOKEN}` },
      })
      bytes = (await res.text()).length
      times.push(performance.now() - t0)
      await new Promise((r) => setTimeout(r, SCRAPE_EVERY_MS))
    }
  })()
  return {
    async stop() {
      running = false
      await done
      return { times, bytes }
    },
  }
}

/**
 * In-process: what recording one request's series costs (a counter and a histogram for the
 * route, and the same for its action), the work the hot path does whether or not anyone
 * scrapes.
 */
function recordingCost(): Stats {
  const metrics = new Metrics()
  const perCall: number[] = []
  for (let round = 0; round < 20; round++) {
    const n = 10_000
    const t0 = performance.now()
    for (let i = 0; i < n; i++) {
      metrics.httpRequests.inc({ route: '/api/agent', method: 'POST', status: 200 })
      metrics.httpDuration.observe({ route: '/api/agent', method: 'POST' }, 0.003)
      metrics.actions.inc({ action: 'create_task', face: 'agent', status: 200 })
      metrics.actionDuration.observe({ action: 'create_task', face: 'agent' }, 0.003)
    }
    perCall.push(((performance.now() - t0) / n) * 1000)
  }
  return stats(perCall)
}

export async function run(log: (l: string) => void): Promise<void> {
  const server = await spawnServer('postgres', { METRICS_TOKEN })
  try {
    log('\n### real Postgres: create_task with metrics recorded, scraped every 1 s or not at all')
    const owner = new Person(server.url)
    await owner.signUp()
    const call = await rotating(owner, 16)
    const { columns } = (await call('list_columns')) as { columns: { id: string }[] }
    const column = columns[0]?.id as string
    await creates(call, column, 100)
    const quiet: number[] = []
    const scraped: number[] = []
    const scrapes: number[] = []
    let bytes = 0
    for (let round = 0; round < ROUNDS; round++) {
      quiet.push(...(await creates(call, column, N)))
      const s = scraper(server)
      scraped.push(...(await creates(call, column, N)))
      const got = await s.stop()
      scrapes.push(...got.times)
      bytes = got.bytes
    }
    const without = stats(quiet)
    const withScrapes = stats(scraped)
    log(line('create_task, nobody scraping (baseline)', without))
    log(line(`create_task, scraped every ${SCRAPE_EVERY_MS} ms`, withScrapes, without))
    log(
      `ratio scraped / not: p50 ×${(withScrapes.median / without.median).toFixed(2)}, p99 ×${(withScrapes.p99 / without.p99).toFixed(2)}`,
    )
    log(line(`one scrape of /metrics (${Math.round(bytes / 1024)} KB)`, stats(scrapes)))
    const cost = recordingCost()
    log(line("recording one agent request's series (in process)", cost, undefined, 'µs'))
    log(
      `recording share of create_task p50: ${((cost.median / 1000 / without.median) * 100).toFixed(2)} %`,
    )
  } finally {
    await server.close()
  }
}
