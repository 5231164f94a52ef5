import { Redis } from '@hocuspocus/extension-redis'
import type { Document } from '@hocuspocus/server'
import type { Redis as IORedis } from 'ioredis'
import * as decoding from 'lib0/decoding'
import { generationOf } from '../../shared/rebase.ts'
import { within } from '../clock.ts'

/** Hocuspocus message types (types.ts in @hocuspocus/server) that carry document content. */
const SYNC = 0
const SYNC_REPLY = 4
/** y-protocols' sync step that asks for what the sender lacks, giving its state vector. */
const SYNC_STEP_1 = 0

type Gate = (documentName: string) => Promise<() => void>

/** How often the processes seen on Redis are checked for still being there. */
export const PEER_CHECK_MS = 2000
/** A check that Redis does not answer within this is skipped (tried again next time). */
const PEER_CHECK_TIMEOUT_MS = 1000

/** What the extension keeps private and we use (checked at construction). */
interface ExtensionInternals {
  replyKey(identifier: string): string
  subKey(documentName: string): string
  pubKey(documentName: string): string
  publishFirstSyncStep(documentName: string, document: unknown): Promise<unknown>
  flushPublish(documentName: string): Promise<void>
  pendingPublishes: Map<string, unknown>
  documents: Map<string, Document>
  instance: { documents: Map<string, Document> } | undefined
}

/** What else the extension is told, beside the gate. */
export interface SharedOptions {
  /** How long each publish took Redis to acknowledge (metrics). */
  published?: (seconds: number) => void
  missed?: Missed
  /**
   * Whether a document's content message, answering this process's request, comes from a
   * copy of a generation this one's copy ended (live-docs.ts, the ended clients it names).
   */
  stale?: (documentName: string, message: Uint8Array) => boolean
}

/** A document channel's generation suffix: `<prefix>:<document>@g<generation>`. */
const GENERATION = /@g(\d+)$/

/**
 * Told when another process's stored writes may not have reached the copies here: a process
 * this one shared documents with went away (it may have died between a commit and its
 * publish), or this process's own subscription was lost a while (what was published
 * meanwhile never arrived). Either way storage holds every acknowledged write.
 */
export type Missed = () => void
/** The longest a shutdown waits for the extension to let go of Redis (ms). */
const DESTROY_WAIT_MS = 1_000

/** A message from Redis, waiting its turn on its document. */
interface Queued {
  channel: Buffer
  data: Buffer
  message: Peeked
}

/**
 * The Redis extension, with another process's messages gated like people's (answered only
 * while the document is clean) and handled in batches, each process's latest SyncStep1 only:
 * one pass per message fell behind under load (docs/design.md, "One copy of each document,
 * and no dirty reads"; test/live/shared-board-load.test.ts).
 */
export class GatedRedis extends Redis {
  constructor(
    configuration: ConstructorParameters<typeof Redis>[0],
    gate: Gate,
    { published, missed, stale }: SharedOptions = {},
  ) {
    super(configuration)
    const internals = this.internals
    if (
      typeof internals.replyKey !== 'function' ||
      typeof internals.subKey !== 'function' ||
      typeof internals.pubKey !== 'function' ||
      typeof internals.publishFirstSyncStep !== 'function' ||
      typeof internals.flushPublish !== 'function' ||
      !(internals.pendingPublishes instanceof Map) ||
      !(internals.documents instanceof Map)
    ) {
      throw new Error('@hocuspocus/extension-redis changed: no channels or first sync step')
    }
    const loaded = (name: string) =>
      internals.documents.get(name) ?? internals.instance?.documents.get(name)
    // A document's channel names its generation, so copies of two generations never sync
    // with each other: one process's copy is dropped when another re-bases the document,
    // but until it is, an answer to the other's request would carry the ended generation's
    // items (the removed cards among them) into the new one, or the new one's into the old.
    const prefix = this.configuration.prefix
    const channels = new Map<string, string>()
    const channelOf = (name: string) => {
      const doc = loaded(name)
      const known = channels.get(name)
      if (!doc) return known ?? `${prefix}:${name}@g0`
      const channel = `${prefix}:${name}@g${generationOf(doc)}`
      if (channel !== known) {
        // A copy of another generation loaded under this name: the old channel is left.
        if (known !== undefined) this.sub.unsubscribe(known).catch(() => {})
        channels.set(name, channel)
      }
      return channel
    }
    internals.subKey = channelOf
    internals.pubKey = channelOf
    // Once it let go of Redis (shutting down), the changes of writes still finishing are
    // stored and never published: the connection is closed, and the other processes read
    // them from storage (their peer watch sees this one gone).
    const flush = internals.flushPublish.bind(this)
    internals.flushPublish = async (name) => {
      if (!this.gone) return flush(name)
      internals.pendingPublishes.delete(name)
    }
    this.forget = (name) => {
      if (!loaded(name)) channels.delete(name)
    }
    const replies = internals.replyKey(this.configuration.identifier)
    /** A message for a copy of another generation than the one loaded here: dropped. */
    const crossesGenerations = (q: Queued): boolean => {
      if (!q.message.content) return false
      const doc = loaded(q.message.documentName)
      if (!doc) return false
      const channel = q.channel.toString('utf8')
      if (channel === replies) return stale?.(q.message.documentName, q.message.body) === true
      const generation = GENERATION.exec(channel)?.[1]
      return generation !== undefined && Number(generation) !== generationOf(doc)
    }
    if (published) {
      const publish = this.pub.publish.bind(this.pub) as (...args: unknown[]) => Promise<number>
      this.pub.publish = ((...args: unknown[]) => {
        const sent = performance.now()
        const acked = publish(...args)
        void acked.then(
          () => published((performance.now() - sent) / 1000),
          () => {},
        )
        return acked
      }) as typeof this.pub.publish
    }
    const [handle] = this.sub.listeners('messageBuffer') as ((
      channel: Buffer,
      data: Buffer,
    ) => Promise<void>)[]
    if (!handle) throw new Error('@hocuspocus/extension-redis changed: no message handler')
    this.sub.removeAllListeners('messageBuffer')
    const own = this.configuration.identifier
    const queues = new Map<string, Queued[]>()
    // A copy evicted or unloaded stays listed in the extension's map until its unload's
    // hooks have run (an eviction runs none): it may hold the updates of a write that failed
    // and was never stored, and an answer from it handed them to the other processes, which
    // built on them (stored rows then referred to items no row held). It answers nothing: a
    // copy loaded since gets the messages, in the gate, or nobody does. Checked right
    // before each message is handled, which answers at once from the copy it finds.
    const dropDestroyed = (documentName: string) => {
      if (internals.documents.get(documentName)?.isDestroyed) {
        internals.documents.delete(documentName)
      }
    }
    // A copy still loading (between its rows and the end of afterLoadDocument, which waits
    // up to a second for the other processes' answers) holds nothing of a write and has no
    // connection yet: the answers need not wait for the gate, which a write waiting for
    // this very load may be holding. Once Hocuspocus lists it, a write may compute on it.
    const isLoading = (documentName: string) =>
      internals.documents.has(documentName) && !internals.instance?.documents.has(documentName)
    const drain = async (documentName: string, queue: Queued[]) => {
      try {
        while (queue.length > 0) {
          if (!queue.some((q) => q.message.content)) {
            for (const q of queue.splice(0)) await handle(q.channel, q.data).catch(() => {})
            continue
          }
          dropDestroyed(documentName)
          const loading = isLoading(documentName)
          const done = loading ? undefined : await gate(documentName)
          try {
            // Everything that arrived while the gate was awaited goes in this pass too.
            const batch = latestAsks(queue.splice(0))
            for (const [i, q] of batch.entries()) {
              // Again here: the gate waited for writes, and a write that failed meanwhile
              // had its copy evicted (the copy the extension would answer from).
              dropDestroyed(documentName)
              // A copy loading when the pass began may have finished since (an answer just
              // handled can end its wait for the other processes), and a write waiting for
              // it computes at once: from then on, its answers wait for the gate.
              if (!done && !isLoading(documentName)) {
                queue.unshift(...batch.slice(i))
                break
              }
              if (crossesGenerations(q)) continue
              await handle(q.channel, q.data).catch(() => {})
            }
          } finally {
            done?.()
          }
        }
      } finally {
        queues.delete(documentName)
      }
    }
    this.sub.on('messageBuffer', (channel: Buffer, data: Buffer) => {
      const message = peek(data)
      if (!message) {
        void handle(channel, data)
        return
      }
      // This process's own publishes come back on the document's channel; the extension
      // ignores them, so they need not wait for the gate.
      if (message.from === own) return
      this.peers.add(message.from)
      const queued = queues.get(message.documentName)
      if (queued) {
        queued.push({ channel, data, message })
        return
      }
      const queue = [{ channel, data, message }]
      queues.set(message.documentName, queue)
      void drain(message.documentName, queue)
    })
    if (missed) this.watchPeers(missed)
  }

  /** The extension's private parts that we use (checked at construction). */
  private get internals(): ExtensionInternals {
    return this as unknown as ExtensionInternals
  }

  /** Forgets a document's channel once no copy of it is loaded (afterUnloadDocument). */
  private readonly forget: (documentName: string) => void

  /**
   * A copy unloaded. When a new copy of the same name is already loading (it can start once
   * the old one left the instance's documents, while the hooks after the unload still run),
   * the extension's own cleanup would take the new copy's entry and unsubscribe the channel
   * it has just subscribed to, leaving it deaf to the other processes: only the old copy's
   * entry goes.
   */
  override async afterUnloadDocument(
    data: Parameters<Redis['afterUnloadDocument']>[0],
  ): Promise<void> {
    const name = data.documentName
    const { documents } = this.internals
    const instance = data.instance as unknown as { loadingDocuments?: Map<string, unknown> }
    if (instance.loadingDocuments?.has(name)) {
      if (documents.get(name)?.isDestroyed) documents.delete(name)
      return
    }
    // After letGo (shutdown) there is no subscription left to end: the extension's
    // unsubscribe would only print "Connection is closed." for each document.
    if (this.gone) documents.delete(name)
    else await super.afterUnloadDocument(data)
    this.forget(name)
  }

  /**
   * The extension's store lock (a Redlock taken around each of Hocuspocus's debounced
   * stores, then held a second more) keeps two processes from storing a document through
   * Hocuspocus's store hooks at once. Nothing here stores through them: every change is
   * stored by the lanes and people's edits (live-docs.ts) in Postgres, which orders them.
   * So no lock is taken: it cost Redis round trips per store, held each document's save
   * mutex (and so its unloading) a second after every store, and printed "Another
   * instance is already storing this document" whenever two processes' stores met, and
   * for every document a shutting-down process stored after letting go of Redis.
   */
  override async onStoreDocument(): Promise<void> {}

  override async afterStoreDocument(): Promise<void> {}

  /** Its connections to Redis were dropped (letGo): shutting down. */
  private gone = false

  /** Identifiers of the other processes heard from on Redis, until they are seen gone. */
  private readonly peers = new Set<string>()
  private peerTimer: NodeJS.Timeout | undefined
  private checking = false

  /**
   * Watches for stored writes that may not have reached this process: every `PEER_CHECK_MS`
   * each process heard from is looked for among the subscribers of its reply channel (the
   * extension subscribes to it for as long as the process runs; Redis drops a dead process's
   * subscriptions with its connection); and when this process's subscription comes back after
   * a loss, its documents' state is published so the others answer with what it lacks and ask
   * for what they lack. `missed` then catches the loaded copies up with storage.
   */
  private watchPeers(missed: Missed): void {
    let lost = false
    this.sub.on('close', () => {
      lost = true
    })
    this.sub.on('ready', () => {
      if (!lost) return
      lost = false
      for (const [name, document] of this.internals.documents) {
        void this.internals.publishFirstSyncStep(name, document).catch(() => {})
      }
      missed()
    })
    this.peerTimer = setInterval(() => void this.checkPeers(missed), PEER_CHECK_MS)
    this.peerTimer.unref()
  }

  private async checkPeers(missed: Missed): Promise<void> {
    if (this.checking || this.peers.size === 0 || this.pub.status !== 'ready') return
    this.checking = true
    const peers = [...this.peers]
    const { internals } = this
    try {
      const counts = (await within(
        this.pub.pubsub('NUMSUB', ...peers.map((p) => internals.replyKey(p))),
        PEER_CHECK_TIMEOUT_MS,
        () => {
          throw new Error('Redis did not answer in time')
        },
      )) as unknown[]
      const gone = peers.filter((_, i) => Number(counts[2 * i + 1]) === 0)
      if (gone.length === 0) return
      for (const peer of gone) this.peers.delete(peer)
      missed()
    } catch {
      // Redis is away or slow: the next check asks again.
    } finally {
      this.checking = false
    }
  }

  /**
   * Shutting down while Redis is away: the extension's QUIT would wait for Redis through
   * ioredis's retries (about 40 s); there is nothing left to tell an unreachable Redis.
   */
  override async onDestroy(): Promise<void> {
    this.letGo()
    // Its own shutdown quits its lock client, which can wait for ever on a Redis that went
    // away mid-command (seen under load in test/faults/redis.test.ts): bounded.
    await within(
      super.onDestroy().catch(() => {}),
      DESTROY_WAIT_MS,
      () => undefined,
    )
  }

  /**
   * Drops the connections to Redis, first thing on shutdown: every change was published
   * when it was made, so nothing is left to tell the other processes, and every command
   * to a Redis that went away (or hangs) would wait on ioredis's retries (about 40 s).
   */
  letGo(): void {
    this.gone = true
    clearInterval(this.peerTimer)
    this.pub.disconnect(false)
    this.sub.disconnect(false)
  }
}

/** What a published message is: who sent it, for which document, of which kind. */
interface Peeked {
  /** The sending process's identifier. */
  from: string
  documentName: string
  /** It carries document content (a sync message), not awareness or a stateless payload. */
  content: boolean
  /** For a SyncStep1, its kind (asking for our SyncStep1 too or not); undefined otherwise. */
  asks: number | undefined
  /** The message as Hocuspocus reads it (document name first), without the sender. */
  body: Uint8Array
}

function peek(data: Buffer): Peeked | undefined {
  try {
    const idLength = data[0] ?? 0
    const from = data.toString('utf8', 1, 1 + idLength)
    const body = data.subarray(1 + idLength)
    const decoder = decoding.createDecoder(body)
    const documentName = decoding.readVarString(decoder)
    const type = decoding.readVarUint(decoder)
    const content = type === SYNC || type === SYNC_REPLY
    const asks = content && decoding.readVarUint(decoder) === SYNC_STEP_1 ? type : undefined
    return { from, documentName, content, asks, body }
  } catch {
    return undefined
  }
}

/**
 * A batch without the SyncStep1s that a later one of the same process and kind supersedes,
 * the rest in order. A SyncStep1 carries its sender's whole state vector at the time: the
 * answer to its latest says everything the earlier ones' answers would have.
 */
function latestAsks(batch: readonly Queued[]): Queued[] {
  const seen = new Set<string>()
  const kept: Queued[] = []
  for (let i = batch.length - 1; i >= 0; i--) {
    const q = batch[i] as Queued
    const { asks, from } = q.message
    if (asks !== undefined) {
      const key = `${asks} ${from}`
      if (seen.has(key)) continue
      seen.add(key)
    }
    kept.push(q)
  }
  return kept.reverse()
}

/**
 * Says once that a Redis connection is lost, and once that it is back: ioredis retries
 * every few hundred milliseconds and reports each failed try, and a client without an
 * 'error' listener prints each one. While it is away, live documents stay live on each
 * process, and the processes catch up when it returns (test/faults/redis.test.ts).
 */
export function watchRedis<C extends IORedis>(
  client: C,
  what: string,
  log: { error(...args: unknown[]): void; info(...args: unknown[]): void },
): C {
  let down = false
  client.on('error', (error: unknown) => {
    if (down) return
    down = true
    log.error(`${what}: Redis unreachable, retrying`, error)
  })
  client.on('ready', () => {
    if (!down) return
    down = false
    log.info(`${what}: Redis is back`)
  })
  return client
}
