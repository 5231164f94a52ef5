import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createServer, Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type App, createApp } from '../../server/app.ts'
import { loadConfig } from '../../server/config.ts'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { Agent, connectProvider, eventually, eventuallyAsync, Person } from '../support/client.ts'
import { freshDb, type TestDb } from '../support/storage.ts'

/**
 * Redis is how server processes share live documents. Here it is a Redis of the test's own
 * (the machine's is shared by other tests), killed while two processes serve one board and
 * started again: what people and agents see meanwhile, and that everything acknowledged is
 * there afterwards, in Postgres and in every live copy.
 */

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

/** Whether something answers PING on the port. */
function pong(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket()
    socket.setTimeout(500, () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(false))
    socket.connect(port, '127.0.0.1', () => socket.write('PING\r\n'))
    socket.once('data', (data) => {
      socket.destroy()
      resolve(data.toString().startsWith('+PONG'))
    })
  })
}

function startRedis(port: number): ChildProcess {
  return spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  )
}

const titlesOn = (doc: import('yjs').Doc) =>
  [...boardMaps(doc).tasks.values()].map((m) => m.get('title') as string).sort()

describe('Redis goes away while two processes share a board (postgres + redis)', () => {
  let storage: TestDb
  let port: number
  let redis: ChildProcess | undefined
  let a: App
  let b: App

  beforeAll(async () => {
    port = await freePort()
    redis = startRedis(port)
    await eventuallyAsync(async () => ((await pong(port)) ? true : undefined), 10_000)
    storage = await freshDb('postgres', { migrate: false })
    const config = {
      ...loadConfig({}),
      port: 0,
      logLevel: 'error' as const,
      scryptN: 1024,
      databaseUrl: storage.url,
      redisUrl: `redis://127.0.0.1:${port}`,
      redisPrefix: `cb-fault-${randomBytes(4).toString('hex')}`,
    }
    ;[a, b] = await Promise.all([createApp(config), createApp(config)])
    await Promise.all([a.listen(), b.listen()])
  })
  let closed = false
  afterAll(async () => {
    redis?.kill('SIGKILL')
    if (!closed) await Promise.all([a?.close(), b?.close()])
    await storage?.drop()
  })

  test('writes keep being acknowledged without Redis, readiness says it is gone, once it is back every live copy holds every write, and a process stops promptly while it is away', async () => {
    const owner = new Person(a.url)
    await owner.signUp()
    const key = await owner.createKey()
    const agentOnA = new Agent(a.url, key)
    const agentOnB = new Agent(b.url, key)
    const onB = await connectProvider(b.url, boardDocName(owner.orgId), await owner.syncToken())
    const onA = await connectProvider(a.url, boardDocName(owner.orgId), await owner.syncToken())
    try {
      const { columns } = await agentOnA.ok('list_columns')
      const columnId = columns[0].id
      await agentOnA.ok('create_task', { columnId, title: 'before' })
      await eventually(() => (titlesOn(onB.doc).includes('before') ? true : undefined), 10_000)

      redis?.kill('SIGKILL')
      await eventuallyAsync(async () => ((await pong(port)) ? undefined : true), 10_000)
      // Both processes still take writes: Redis carries no write, only the live fan-out.
      await agentOnA.ok('create_task', { columnId, title: 'during, on A' })
      await agentOnB.ok('create_task', { columnId, title: 'during, on B' })
      // Each process's own people see its writes at once.
      await eventually(
        () => (titlesOn(onA.doc).includes('during, on A') ? true : undefined),
        10_000,
      )
      await eventually(
        () => (titlesOn(onB.doc).includes('during, on B') ? true : undefined),
        10_000,
      )
      // Readiness says what is missing, so a balancer or an operator can tell.
      const ready = await fetch(`${a.url}/readyz`)
      expect(ready.status).toBe(503)
      expect(await ready.json()).toMatchObject({ ready: false, postgres: true, redis: false })
      expect((await fetch(`${b.url}/healthz`)).status).toBe(200)

      redis = startRedis(port)
      await eventuallyAsync(async () => ((await pong(port)) ? true : undefined), 10_000)
      await eventuallyAsync(async () => {
        const res = await fetch(`${a.url}/readyz`)
        return res.status === 200 ? true : undefined
      }, 20_000)
      await agentOnA.ok('create_task', { columnId, title: 'after' })

      const all = ['after', 'before', 'during, on A', 'during, on B']
      for (const live of [onA, onB]) {
        await eventually(
          () => (JSON.stringify(titlesOn(live.doc)) === JSON.stringify(all) ? true : undefined),
          20_000,
        )
      }
      for (const agent of [agentOnA, agentOnB]) {
        const { tasks } = await agent.ok('get_board')
        expect(tasks.map((t: { title: string }) => t.title).sort()).toEqual(all)
      }
    } finally {
      onA.destroy()
      onB.destroy()
    }

    // And a process stops cleanly while Redis is away (a deploy during an outage).
    redis?.kill('SIGKILL')
    await eventuallyAsync(async () => ((await pong(port)) ? undefined : true), 10_000)
    const t0 = performance.now()
    await Promise.all([a.close(), b.close()])
    closed = true
    console.log(`closed without Redis in ${(performance.now() - t0).toFixed(0)} ms`)
  }, 90_000)
})
