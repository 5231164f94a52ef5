import type { HocuspocusProvider } from '@hocuspocus/provider'
import * as decoding from 'lib0/decoding'
import * as Y from 'yjs'
import { generationOf } from '../../../shared/rebase.ts'
import type { LocalCopyAnswer, LocalCopyRequest } from './local-copy-protocol.ts'

/**
 * The copy of one live document kept on this device, so it opens and edits with no
 * connection. IndexedDB work runs in a worker (local-copy.worker.ts); the page only applies
 * what the worker read, once, and hands over what changes.
 *
 * What the server sends is kept as the very bytes that came over the socket. Yjs would
 * otherwise encode every remote change once more for its 'update' listeners (the
 * provider's, which ignores its own changes, and the copy's): a first load of a
 * 10,000-card board is an 8 MB change, whose encoding took about as long as applying it,
 * on the main thread. So while a change from the server or from this copy is applied, the
 * document's 'update' listeners are set aside: nobody needs to hear of it again.
 */
export class LocalCopy {
  /** The copy has been read and applied (or found missing). */
  readonly whenLoaded: Promise<void>
  /**
   * When the provider may join: once the copy is read, so that the server sends only what
   * it lacks; at once when this device never kept a copy of the document (a first visit
   * does not wait for IndexedDB to create a database, about a tenth of a second).
   */
  readonly whenReady: Promise<void>
  private readonly db: string
  private readonly doc: Y.Doc
  private readonly quiet = new Set<unknown>([this])
  private destroyed = false
  private kept: boolean
  private offMessages: (() => void) | undefined

  /**
   * `late`: how a copy read after the provider joined is taken in. Once the server's state
   * is in, a copy of a generation the server ended since (a re-base) would mix two
   * generations: it is handed over instead (its edits are carried across by key). Before
   * that it is applied as it is (offline, it is all there is), and the server refuses the
   * mixed copy as holding an ended generation, which carries the edits across too.
   */
  constructor(
    db: string,
    doc: Y.Doc,
    late: { synced: () => boolean; stale: (copy: Y.Doc) => void } = {
      synced: () => false,
      stale: () => {},
    },
  ) {
    this.db = db
    this.doc = doc
    this.kept = copyKept(db)
    doc.on('beforeTransaction', this.beforeTransaction)
    doc.on('beforeObserverCalls', this.beforeObserverCalls)
    doc.on('afterAllTransactions', this.afterAllTransactions)
    doc.on('update', this.keep)
    const readFirst = this.kept
    this.whenLoaded = request({ type: 'load', id: 0, db }).then(
      (answer) => {
        if (answer.type !== 'loaded' || !answer.update || this.destroyed) return
        if (readFirst) {
          Y.applyUpdate(doc, answer.update, this)
          return
        }
        // Read after the provider joined (a copy this device did not know it kept): what
        // it holds that the server lacks goes out like an edit made here.
        if (late.synced()) {
          const copy = new Y.Doc()
          Y.applyUpdate(copy, answer.update)
          if (generationOf(copy) !== generationOf(doc)) return late.stale(copy)
          copy.destroy()
        }
        Y.applyUpdate(doc, answer.update, LATE_COPY)
      },
      (error: unknown) => {
        // No copy on this device (private browsing, storage refused): the server's will do.
        console.error(`reading the copy of ${db} kept on this device failed`, error)
      },
    )
    this.whenReady = readFirst ? this.whenLoaded : Promise.resolve()
  }

  /** Keeps what this provider receives from the server, as received. */
  follow(provider: HocuspocusProvider): void {
    this.quiet.add(provider)
    const onMessage = ({ event }: { event: MessageEvent }) => {
      const update = syncedUpdateOf(new Uint8Array(event.data as ArrayBuffer))
      // A copy of its own: handed to the worker, not shared with the provider.
      if (update) this.append(update, true)
    }
    provider.on('message', onMessage)
    this.offMessages = () => provider.off('message', onMessage)
  }

  /** Forgets the copy (a document the server no longer has); nothing more is kept. */
  async clear(): Promise<void> {
    this.stop()
    forgetCopyKept(this.db)
    await request({ type: 'clear', id: 0, db: this.db })
  }

  destroy(): void {
    if (this.destroyed) return
    this.stop()
    post({ type: 'close', db: this.db })
  }

  private stop(): void {
    this.destroyed = true
    this.offMessages?.()
    this.doc.off('update', this.keep)
    this.doc.off('beforeTransaction', this.beforeTransaction)
    this.doc.off('beforeObserverCalls', this.beforeObserverCalls)
    this.doc.off('afterAllTransactions', this.afterAllTransactions)
    this.restore()
  }

  /** An edit made on this page: kept. (Changes from the server or this copy are kept already.) */
  private keep = (update: Uint8Array, origin: unknown) => {
    if (this.destroyed || this.quiet.has(origin)) return
    this.append(update, false)
  }

  private append(update: Uint8Array, own: boolean): void {
    if (!this.kept) {
      this.kept = true
      markCopyKept(this.db)
    }
    post({ type: 'append', db: this.db, update }, own)
  }

  /** The 'update' listeners set aside while a quiet transaction runs, and for which one. */
  private held: { tr: Y.Transaction; listeners: [string, unknown][] } | undefined

  private beforeTransaction = (tr: Y.Transaction) => {
    if (this.held || !this.quiet.has(tr.origin)) return
    // lib0's Observable keeps its listeners per event name in `_observers`.
    const observers = observersOf(this.doc)
    const listeners: [string, unknown][] = []
    for (const name of ['update', 'updateV2']) {
      const set = observers.get(name)
      if (set === undefined) continue
      listeners.push([name, set])
      observers.delete(name)
    }
    this.held = { tr, listeners }
  }

  /**
   * Another transaction's cleanup begins (one an observer of the quiet one started, such as
   * an edit made in answer to the server's change): its listeners must hear it.
   */
  private beforeObserverCalls = (tr: Y.Transaction) => {
    if (this.held && this.held.tr !== tr) this.restore()
  }

  private afterAllTransactions = () => this.restore()

  private restore(): void {
    if (!this.held) return
    const observers = observersOf(this.doc)
    for (const [name, set] of this.held.listeners) {
      const added = observers.get(name)
      // Listeners added meanwhile join the ones set aside.
      if (added instanceof Set && set instanceof Set) for (const l of added) set.add(l)
      observers.set(name, set)
    }
    this.held = undefined
  }
}

/** The origin of a copy read after the provider joined: not quiet, so it is sent. */
const LATE_COPY = Symbol('late copy')

/**
 * Which documents this device keeps a copy of, remembered where the page can read it at
 * once (IndexedDB answers only once a database is open). Where localStorage is refused,
 * every copy counts as kept: the provider then waits for the read, as it always may.
 */
const KEPT_PREFIX = 'corkboard.copy:'

function copyKept(db: string): boolean {
  try {
    return localStorage.getItem(KEPT_PREFIX + db) !== null
  } catch {
    return true
  }
}

function markCopyKept(db: string): void {
  try {
    localStorage.setItem(KEPT_PREFIX + db, '1')
  } catch {
    // Not remembered: the next visit reads the copy after the server's answer instead.
  }
}

function forgetCopyKept(db: string): void {
  try {
    localStorage.removeItem(KEPT_PREFIX + db)
  } catch {
    // Nothing was remembered.
  }
}

/** Forgets which copies are kept under this prefix (sign-out deletes them). */
export function forgetCopiesKept(prefix: string): void {
  try {
    for (const key of Object.keys(localStorage)) {
      if (key.startsWith(KEPT_PREFIX + prefix)) localStorage.removeItem(key)
    }
  } catch {
    // Nothing was remembered.
  }
}

const observersOf = (doc: Y.Doc) =>
  (doc as unknown as { _observers: Map<string, unknown> })._observers

/** Hocuspocus and y-protocols message numbers (@hocuspocus/provider, y-protocols/sync). */
const MESSAGE_SYNC = 0
const SYNC_STEP_2 = 1
const SYNC_UPDATE = 2

/**
 * The document update a message from the server carries (its answer to our state, or a
 * change made elsewhere), copied out of the message; undefined for any other message.
 */
export function syncedUpdateOf(message: Uint8Array): Uint8Array | undefined {
  try {
    const decoder = decoding.createDecoder(message)
    decoding.readVarString(decoder)
    if (decoding.readVarUint(decoder) !== MESSAGE_SYNC) return undefined
    const step = decoding.readVarUint(decoder)
    if (step !== SYNC_STEP_2 && step !== SYNC_UPDATE) return undefined
    return decoding.readVarUint8Array(decoder).slice()
  } catch {
    return undefined
  }
}

let worker: Worker | undefined
let nextId = 1
const waiting = new Map<number, (answer: LocalCopyAnswer) => void>()

/** Starts the worker ahead of the first document, so its start overlaps the page's own. */
export function warmLocalCopies(): void {
  theWorker()
}

function theWorker(): Worker {
  if (!worker) {
    worker = new Worker(new URL('./local-copy.worker.ts', import.meta.url), { type: 'module' })
    worker.onmessage = ({ data }: MessageEvent<LocalCopyAnswer>) => {
      const resolve = waiting.get(data.id)
      waiting.delete(data.id)
      resolve?.(data)
    }
  }
  return worker
}

/**
 * Sends a request to the worker. An update is copied unless `own` says the page keeps no
 * other use of its bytes (an edit's update is also what the provider sends the server).
 */
function post(message: LocalCopyRequest, own = false): void {
  if (message.type === 'append' && own) {
    theWorker().postMessage(message, [message.update.buffer as ArrayBuffer])
  } else theWorker().postMessage(message)
}

async function request(
  message: Extract<LocalCopyRequest, { id: number }>,
): Promise<LocalCopyAnswer> {
  const id = nextId++
  const answer = await new Promise<LocalCopyAnswer>((resolve) => {
    waiting.set(id, resolve)
    post({ ...message, id })
  })
  if (answer.type === 'failed') throw new Error(answer.message)
  return answer
}
