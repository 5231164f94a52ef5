import { randomBytes, randomUUID } from 'node:crypto'
import { Hocuspocus } from '@hocuspocus/server'
import { Redis as IORedis } from 'ioredis'
import { afterEach, describe, expect, test } from 'vitest'
import { DocRegistry } from '../../server/live/doc-registry.ts'
import { hold } from '../../server/live/hold.ts'
import { GatedRedis } from '../../server/live/redis.ts'

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const quiet = { error: () => {}, warn: () => {}, info: () => {} }
/** How long a loading copy waits for the other process's answer (the extension's option). */
const INITIAL_SYNC_MS = 300

type Gate = (name: string) => Promise<() => void>

/** One process's live documents shared through Redis: Hocuspocus, GatedRedis, a registry. */
function liveProcess(prefix: string, gate: Gate) {
  const shared = new GatedRedis(
    {
      createClient: () => new IORedis(REDIS_URL),
      prefix,
      awaitInitialSyncTimeout: INITIAL_SYNC_MS,
    },
    gate,
  )
  const hocuspocus = new Hocuspocus({ quiet: true, extensions: [shared] })
  const registry = new DocRegistry({ hocuspocus, idleMs: 60_000, log: quiet })
  return { shared, hocuspocus, registry }
}

async function stopAll(processes: ReturnType<typeof liveProcess>[]): Promise<void> {
  for (const p of processes) {
    await p.hocuspocus.closeConnections()
    await p.shared.onDestroy()
  }
}

const open: Gate = async () => () => {}

/**
 * Another process's request for a document waits at this process's gate while a write holds
 * uncommitted updates in it (server/live/redis.ts). When that write fails, its copy is
 * evicted (destroyed, its updates never stored) while the request still waits; the Redis
 * extension keeps listing the destroyed copy, because an eviction runs no unload hooks.
 * Answered from that copy, the request handed the failed write's items to the other process,
 * which built its own writes on them: stored rows then referred to items no row held (the
 * 100,000-call mixed race over two processes, test/claims/mixed-race.test.ts).
 */
describe('scaled out, a write that failed reaches no other process', () => {
  let stop: (() => Promise<void>) | undefined
  afterEach(async () => {
    await stop?.()
    stop = undefined
  })

  test('a request that waited at the gate while the failed write’s copy was evicted is not answered from that copy', async () => {
    const prefix = `cb-test-${randomBytes(6).toString('hex')}`
    const name = `${randomUUID()}/board`
    // A's gate holds the first request until told, as a write computing would.
    let waiting: (() => void) | undefined
    const asked = new Promise<void>((told) => {
      waiting = told
    })
    let letThrough!: () => void
    const through = new Promise<void>((go) => {
      letThrough = go
    })
    let first = true
    const a = liveProcess(prefix, async () => {
      if (first) {
        first = false
        waiting?.()
        await through
      }
      return () => {}
    })
    const b = liveProcess(prefix, open)
    stop = () => stopAll([a, b])

    // A write on A: its update is held from everyone until its commit (hold.ts).
    const entry = await a.registry.acquire(name)
    const write = {}
    hold(write)
    entry.doc.transact(() => entry.doc.getMap('cards').set('failed', 'never stored'), write)

    // B loads the document: it asks A (SyncStep1), and A's answer waits at A's gate.
    const loading = b.registry.acquire(name)
    await asked
    // The write fails: its copy is evicted, as the lane recovers (lane.ts, recover).
    a.registry.evict([name])
    letThrough()
    const onB = await loading
    // Whatever A would answer had time to arrive: B waited for it up to INITIAL_SYNC_MS.
    await new Promise((r) => setTimeout(r, 100))
    expect(onB.doc.getMap('cards').toJSON()).toEqual({})

    // The way between the processes works: a write A stores now reaches B.
    const again = await a.registry.acquire(name)
    again.doc.transact(() => again.doc.getMap('cards').set('stored', 'committed'))
    await expect
      .poll(() => onB.doc.getMap('cards').toJSON(), { timeout: 5_000 })
      .toEqual({ stored: 'committed' })
    a.registry.release(again)
    b.registry.release(onB)
  })

  test('a request that arrives after the failed write’s copy was evicted is not answered from that copy', async () => {
    const prefix = `cb-test-${randomBytes(6).toString('hex')}`
    const name = `${randomUUID()}/board`
    const a = liveProcess(prefix, open)
    const b = liveProcess(prefix, open)
    stop = () => stopAll([a, b])
    const entry = await a.registry.acquire(name)
    const write = {}
    hold(write)
    entry.doc.transact(() => entry.doc.getMap('cards').set('failed', 'never stored'), write)
    a.registry.evict([name])
    // Listed by the extension yet gone from Hocuspocus, the copy looked like one still
    // loading, which is answered without the gate.
    const onB = await b.registry.acquire(name)
    await new Promise((r) => setTimeout(r, 100))
    expect(onB.doc.getMap('cards').toJSON()).toEqual({})
    b.registry.release(onB)
  })
})
