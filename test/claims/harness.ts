import { openDb } from '../../persistence/db.ts'
import { type App, createApp } from '../../server/app.ts'
import type { Clock } from '../../server/clock.ts'
import { type Config, loadConfig } from '../../server/config.ts'
import { Agent, Person } from '../support/client.ts'
import { freshDb, type StorageKind, type TestDb } from '../support/storage.ts'

/** A clock the test moves by hand: leases and rate budgets lapse without waiting. */
export class FakeClock implements Clock {
  t: number

  constructor(start = Date.now()) {
    this.t = start
  }

  now(): number {
    return this.t
  }

  advance(ms: number): void {
    this.t += ms
  }
}

export function testConfig(overrides: Partial<Config> = {}): Config {
  return {
    ...loadConfig({}),
    port: 0,
    host: '127.0.0.1',
    logLevel: 'error',
    scryptN: 1024,
    // Tests sign everyone up from 127.0.0.1; the limits' own tests set them low.
    signupsPerAddress: 1_000_000,
    oauthRegistrationsPerAddress: 1_000_000,
    ...overrides,
  }
}

export interface ClockServer {
  app: App
  url: string
  clock: FakeClock
  storage: TestDb
  /** Another server process on the same database (Postgres only), with its own pool and documents. */
  peer(): Promise<App>
  close(): Promise<void>
}

/** A real server on port 0 over a fresh database, whose clock the test controls. */
export async function startClockServer(
  kind: StorageKind,
  overrides: Partial<Config> = {},
): Promise<ClockServer> {
  const storage = await freshDb(kind)
  const clock = new FakeClock()
  const config = testConfig(overrides)
  const app = await createApp(config, { db: storage.db, clock })
  const url = await app.listen()
  const peers: App[] = []
  return {
    app,
    url,
    clock,
    storage,
    async peer() {
      if (!storage.url) throw new Error('peers need Postgres')
      const db = await openDb({ databaseUrl: storage.url, maxConnections: 4 })
      const peer = await createApp(config, { db, clock })
      await peer.listen()
      const close = peer.close.bind(peer)
      peer.close = async () => {
        await close()
        await db.close()
      }
      peers.push(peer)
      return peer
    },
    async close() {
      for (const p of peers) await p.close()
      await app.close()
      await storage.drop()
    },
  }
}

/** An owner with `n` keys (one agent each), plus the board's first column and a card. */
export async function boardWithAgents(url: string, n: number) {
  const owner = new Person(url)
  await owner.signUp()
  const agents: Agent[] = []
  for (let i = 0; i < n; i++) agents.push(new Agent(url, await owner.createKey(`agent ${i}`)))
  const first = agents[0] as Agent
  const { columns } = await first.ok('list_columns')
  return { owner, agents, first, columns: columns as { id: string; title: string }[] }
}
