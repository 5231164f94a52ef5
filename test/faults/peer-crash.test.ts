import { randomBytes } from 'node:crypto'
import { createServer, type Server, Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { Agent, connectProvider, eventually, Person } from '../support/client.ts'
import { type ServiceProcess, startProcess } from '../support/service-process.ts'
import { freshDb, type TestDb } from '../support/storage.ts'

/**
 * A process dies between a commit and its publish to Redis (killed, out of memory, its
 * machine gone). The write is stored and was acknowledged; only the dead process could have
 * told the others. Each process watches the processes it shares documents with and, when one
 * goes, catches its loaded copies up with storage (server/live/redis.ts, live-docs.ts).
 */

const REDIS = { host: '127.0.0.1', port: 6379 }

/**
 * A TCP proxy in front of Redis whose traffic from the process to Redis can be held (read
 * and never passed on): the process's publishes leave it and never arrive, as when it dies
 * with them in its buffers. A connection the process closes is closed towards Redis too, so
 * Redis sees the process go as it would without the proxy.
 */
class HoldingProxy {
  private readonly server: Server
  private held = false
  private refusing = false
  private readonly open = new Set<Socket>()
  port = 0

  constructor() {
    this.server = createServer((client) => {
      if (this.refusing) {
        client.destroy()
        return
      }
      this.open.add(client)
      client.on('close', () => this.open.delete(client))
      const upstream = new Socket()
      upstream.connect(REDIS.port, REDIS.host)
      client.on('data', (chunk) => {
        if (!this.held) upstream.write(chunk)
      })
      upstream.on('data', (chunk) => client.write(chunk))
      const end = () => {
        client.destroy()
        upstream.destroy()
      }
      client.on('close', end)
      upstream.on('close', end)
      client.on('error', end)
      upstream.on('error', end)
    })
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.port = (this.server.address() as { port: number }).port
  }

  hold(): void {
    this.held = true
  }

  /** Drops every connection and refuses new ones until `restore`: a network blip. */
  cut(): void {
    this.refusing = true
    for (const socket of this.open) socket.destroy()
  }

  restore(): void {
    this.refusing = false
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
}

const titlesOn = (doc: import('yjs').Doc) =>
  [...boardMaps(doc).tasks.values()].map((m) => m.get('title') as string).sort()

/**
 * The processes under test: `a` reaches Redis through the proxy, `b` directly (or the other
 * way round), both on one fresh database and Redis prefix.
 */
function twoProcesses(proxied: 'a' | 'b') {
  const running: {
    storage?: TestDb
    proxy?: HoldingProxy
    a?: ServiceProcess
    b?: ServiceProcess
  } = {}
  beforeAll(async () => {
    running.storage = await freshDb('postgres')
    running.proxy = new HoldingProxy()
    await running.proxy.listen()
    const env = {
      DATABASE_URL: running.storage.url as string,
      REDIS_PREFIX: `cb-peers-${randomBytes(6).toString('hex')}`,
      RATE_LIMIT_PER_KEY: '1000000',
      LOG_LEVEL: 'error',
    }
    const through = `redis://127.0.0.1:${running.proxy.port}`
    const direct = `redis://${REDIS.host}:${REDIS.port}`
    ;[running.a, running.b] = await Promise.all([
      startProcess({ ...env, REDIS_URL: proxied === 'a' ? through : direct }),
      startProcess({ ...env, REDIS_URL: proxied === 'b' ? through : direct }),
    ])
  }, 60_000)
  afterAll(async () => {
    await Promise.all([running.a?.stop(), running.b?.stop()])
    await running.proxy?.close()
    await running.storage?.drop()
  })
  return () => running as Required<typeof running>
}

describe('a process dies between a commit and its publish (postgres + redis)', () => {
  const processes = twoProcesses('a')

  test('every live copy on the other processes shows the acknowledged write within seconds, and reads there find the card', async () => {
    const { a, b, proxy } = processes()
    const owner = new Person(b.url)
    await owner.signUp()
    const key = await owner.createKey()
    const onA = new Agent(a.url, key)
    const onB = new Agent(b.url, key)
    const provider = await connectProvider(
      b.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    try {
      const { columns } = await onA.ok('list_columns')
      const columnId = columns[0].id
      await onA.ok('create_task', { columnId, title: 'before' })
      await eventually(() => (titlesOn(provider.doc).includes('before') ? true : undefined), 10_000)

      proxy.hold()
      const { task } = await onA.ok('create_task', { columnId, title: 'acknowledged, then died' })
      a.child.kill('SIGKILL')
      await new Promise((resolve) => a.child.once('exit', resolve))

      // A person looking at the board on the surviving process sees it...
      await eventually(
        () => (titlesOn(provider.doc).includes('acknowledged, then died') ? true : undefined),
        15_000,
      )
      // ...and an agent there reads it: the card exists, so never a 404.
      const read = await onB.ok('get_task', { taskId: task.id })
      expect(read.task.title).toBe('acknowledged, then died')
      const { tasks } = await onB.ok('get_board')
      expect(tasks.map((t: { title: string }) => t.title).sort()).toEqual([
        'acknowledged, then died',
        'before',
      ])
      // The survivor keeps working on its copy.
      await onB.ok('update_task', { taskId: task.id, title: 'picked up after the crash' })
      await eventually(
        () => (titlesOn(provider.doc).includes('picked up after the crash') ? true : undefined),
        10_000,
      )
    } finally {
      provider.destroy()
    }
  }, 90_000)
})

describe('a process loses its Redis connection a while, and nobody writes after (postgres + redis)', () => {
  const processes = twoProcesses('b')

  test('once it is back, its copies hold what the others wrote meanwhile', async () => {
    const { a, b, proxy } = processes()
    const owner = new Person(a.url)
    await owner.signUp()
    const key = await owner.createKey()
    const onA = new Agent(a.url, key)
    const onB = new Agent(b.url, key)
    const token = await owner.syncToken()
    const onBoardA = await connectProvider(a.url, boardDocName(owner.orgId), token)
    const onBoardB = await connectProvider(b.url, boardDocName(owner.orgId), token)
    try {
      const { columns } = await onA.ok('list_columns')
      const columnId = columns[0].id
      await onA.ok('create_task', { columnId, title: 'before' })
      await eventually(() => (titlesOn(onBoardB.doc).includes('before') ? true : undefined), 10_000)

      // What A publishes meanwhile never reaches B, and B has nothing of its own to publish
      // (its own writes would be queued and sent on reconnecting, and the answers to them
      // would bring it up to date).
      proxy.cut()
      await onA.ok('create_task', { columnId, title: 'while B was cut off' })
      await eventually(
        () => (titlesOn(onBoardA.doc).includes('while B was cut off') ? true : undefined),
        10_000,
      )
      await new Promise((resolve) => setTimeout(resolve, 500))
      proxy.restore()

      const all = ['before', 'while B was cut off']
      for (const live of [onBoardA, onBoardB]) {
        await eventually(
          () => (JSON.stringify(titlesOn(live.doc)) === JSON.stringify(all) ? true : undefined),
          20_000,
        )
      }
      for (const agent of [onA, onB]) {
        const { tasks } = await agent.ok('get_board')
        expect(tasks.map((t: { title: string }) => t.title).sort()).toEqual(all)
      }
    } finally {
      onBoardA.destroy()
      onBoardB.destroy()
    }
  }, 90_000)

  test('a process shut down while it holds live documents exits cleanly and at once, with writes still arriving, and writes nothing to stderr on the way out (no Redis command after it let go)', async () => {
    const { a, b } = processes()
    const owner = new Person(a.url)
    await owner.signUp()
    const agent = new Agent(a.url, await owner.createKey())
    const { columns } = await agent.ok('list_columns')
    await agent.ok('create_task', { columnId: columns[0].id, title: 'held at shutdown' })
    const live = await connectProvider(a.url, boardDocName(owner.orgId), await owner.syncToken())
    try {
      // Writes still arriving as it stops: those it finishes change the board after it let
      // go of Redis, and are stored, never published.
      const writes = Array.from({ length: 40 }, (_, i) =>
        agent
          .call('create_task', { columnId: columns[0].id, title: `late ${i}` })
          .catch(() => undefined),
      )
      await new Promise((r) => setTimeout(r, 5))
      await a.stop()
      // Every write it acknowledged is stored: the other process reads each one.
      const acknowledged = (await Promise.all(writes)).filter((r) => r?.status === 200)
      expect(acknowledged.length).toBeGreaterThan(0)
      const onB = new Agent(b.url, agent.key)
      for (const r of acknowledged) {
        const { task } = await onB.ok('get_task', { taskId: r?.body.task.id })
        expect(task.title).toBe(r?.body.task.title)
      }
    } finally {
      live.destroy()
    }
    expect(a.child.exitCode).toBe(0)
    expect(a.stderr()).toBe('')
  }, 60_000)
})
