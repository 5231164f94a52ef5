import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll } from 'vitest'
import { Agent, type Person } from './client.ts'
import { type ServiceProcess, startProcess } from './service-process.ts'
import { freshDb, type TestDb } from './storage.ts'

export interface ScaledOut {
  a: ServiceProcess
  b: ServiceProcess
  storage: TestDb
}

/**
 * The service scaled out, for the suite it is called in: two processes sharing one fresh
 * Postgres database and one Redis (a prefix of their own), started before its tests and
 * stopped after. Read it inside a test.
 */
export function scaledOut(): () => ScaledOut {
  let running: ScaledOut | undefined
  let processes: ServiceProcess[] = []
  let storage: TestDb | undefined
  beforeAll(async () => {
    storage = await freshDb('postgres')
    const env = {
      DATABASE_URL: storage.url as string,
      REDIS_URL: process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379',
      REDIS_PREFIX: `cb-test-${randomBytes(6).toString('hex')}`,
      RATE_LIMIT_PER_KEY: '1000000',
      LOG_LEVEL: 'error',
    }
    processes = await Promise.all([startProcess(env), startProcess(env)])
    running = { a: processes[0] as ServiceProcess, b: processes[1] as ServiceProcess, storage }
  }, 60_000)
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()))
    await storage?.drop()
  })
  return () => {
    if (!running) throw new Error('the processes are not started yet')
    return running
  }
}

/**
 * A fleet spread by a balancer: `size / 2` API keys of the owner's organisation, each used
 * on both processes, its two agents told apart by name (A0 and B0, ...).
 */
export async function fleet(
  { a, b }: ScaledOut,
  owner: Person,
  size: number,
  label: string,
): Promise<{ agent: Agent; name: string }[]> {
  const keys = await Promise.all(
    Array.from({ length: size / 2 }, (_, i) => owner.createKey(`${label} ${i}`)),
  )
  return keys.flatMap((key, i) => [
    { agent: new Agent(a.url, key), name: `A${i}` },
    { agent: new Agent(b.url, key), name: `B${i}` },
  ])
}
