import { randomBytes, randomUUID } from 'node:crypto'
import { Hocuspocus } from '@hocuspocus/server'
import { Redis as IORedis } from 'ioredis'
import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { afterEach, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { DocRegistry } from '../../server/live/doc-registry.ts'
import { hold } from '../../server/live/hold.ts'
import { LaneGate } from '../../server/live/lane-gate.ts'
import { GatedRedis } from '../../server/live/redis.ts'

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
const quiet = { error: () => {}, warn: () => {}, info: () => {} }
/** How long a loading copy waits for the other process's answer (the extension's option). */
const INITIAL_SYNC_MS = 300

type Gate = (name: string) => Promise<() => void>

/** One process's live documents shared through Redis: Hocuspocus, GatedRedis, a registry. */
function liveProcess(
  prefix: string,
  gate: Gate,
  { identifier = `host-${randomUUID()}`, initialSyncMs = INITIAL_SYNC_MS } = {},
) {
  const shared = new GatedRedis(
    {
      createClient: () => new IORedis(REDIS_URL),
      prefix,
      identifier,
      awaitInitialSyncTimeout: initialSyncMs,
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

/** A write on the process's copy whose update is held from everyone (hold.ts), never stored. */
async function heldWrite(p: ReturnType<typeof liveProcess>, name: string): Promise<void> {
  const entry = await p.registry.acquire(name)
  const write = {}
  hold(write)
  entry.doc.transact(() => entry.doc.getMap('cards').set('failed', 'never stored'), write)
}

/** y-protocols' sync steps, inside Hocuspocus's Sync message (type 0). */
const SYNC_STEP_1 = 0
const SYNC_STEP_2 = 1

/** A message as another process publishes it: its identifier, then the Hocuspocus message. */
function fromPeer(peer: string, name: string, step: number, payload: Uint8Array): Buffer {
  const body = encoding.createEncoder()
  encoding.writeVarString(body, name)
  encoding.writeVarUint(body, 0)
  encoding.writeVarUint(body, step)
  encoding.writeVarUint8Array(body, payload)
  const id = Buffer.from(peer)
  return Buffer.concat([Buffer.from([id.length]), id, encoding.toUint8Array(body)])
}

/** The document update a published answer carries (SyncStep2 or update), if it carries one. */
function carried(data: Buffer): Uint8Array | undefined {
  const decoder = decoding.createDecoder(data.subarray(1 + (data[0] ?? 0)))
  decoding.readVarString(decoder)
  const type = decoding.readVarUint(decoder)
  if (type !== 0 && type !== 4) return undefined
  const step = decoding.readVarUint(decoder)
  return step === SYNC_STEP_1 ? undefined : decoding.readVarUint8Array(decoder)
}

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

    await heldWrite(a, name)

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
    await heldWrite(a, name)
    a.registry.evict([name])
    // Listed by the extension yet gone from Hocuspocus, the copy looked like one still
    // loading, which is answered without the gate.
    const onB = await b.registry.acquire(name)
    await new Promise((r) => setTimeout(r, 100))
    expect(onB.doc.getMap('cards').toJSON()).toEqual({})
    b.registry.release(onB)
  })

  test('answers of a copy whose load ends in the middle of a batch wait for the gate from then on', async () => {
    const prefix = `cb-test-${randomBytes(6).toString('hex')}`
    const name = `${randomUUID()}/board`
    const channel = `${prefix}:${name}@g0`
    const gate = new LaneGate()
    const identifier = `host-${randomUUID()}`
    const a = liveProcess(prefix, () => gate.read(), { identifier, initialSyncMs: 5_000 })
    // Other processes, as Redis shows them: subscribed to the document (so A's load waits for
    // their answers) and each to its reply channel, where A's answers are collected.
    const peers = Array.from({ length: 12 }, (_, i) => `peer-${i}-${randomUUID()}`)
    const listener = new IORedis(REDIS_URL)
    stop = async () => {
      listener.disconnect()
      await stopAll([a])
    }
    const answers: Uint8Array[] = []
    let asked = 0
    listener.on('messageBuffer', (from: Buffer, data: Buffer) => {
      if (from.toString() === channel) asked += 1
      else {
        const update = carried(data)
        if (update) answers.push(update)
      }
    })
    await listener.subscribe(channel, ...peers.map((p) => `${prefix}#reply:${p}`))

    // A write waits for the load, as the lane's do, and computes once it has the copy: its
    // update is held, uncommitted, and the gate is dirty until it settles.
    const write = {}
    const written = a.registry.acquire(name).then(async (entry) => {
      await gate.write()
      hold(write)
      entry.doc.transact(() => entry.doc.getMap('cards').set('uncommitted', 'held'), write)
      gate.computed(true)
      return entry
    })
    // A's copy has asked the others and waits for an answer.
    await expect.poll(() => asked, { timeout: 5_000 }).toBeGreaterThan(0)
    // One read from A's socket, as ioredis hands it over: the answer that ends A's wait, and
    // the other processes' requests, which A's copy answers while it is still loading.
    const sub = (a.shared as unknown as { sub: IORedis }).sub
    const empty = Y.encodeStateAsUpdate(new Y.Doc())
    const none = Y.encodeStateVector(new Y.Doc())
    sub.emit(
      'messageBuffer',
      Buffer.from(`${prefix}#reply:${identifier}`),
      fromPeer(peers[0] as string, name, SYNC_STEP_2, empty),
    )
    for (const peer of peers) {
      sub.emit('messageBuffer', Buffer.from(channel), fromPeer(peer, name, SYNC_STEP_1, none))
    }
    const entry = await written
    await new Promise((r) => setTimeout(r, 200))
    // Some were answered while the copy was loading; none carries the held update.
    expect(answers.length).toBeGreaterThan(0)
    for (const update of answers) {
      const seen = new Y.Doc()
      Y.applyUpdate(seen, update)
      expect(seen.getMap('cards').toJSON()).toEqual({})
    }
    // The write fails: its copy is evicted and the gate clean again.
    a.registry.evict([name])
    gate.settled()
    a.registry.release(entry)
  })
})
