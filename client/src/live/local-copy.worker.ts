import {
  COMPACT_AFTER,
  CUSTOM_STORE,
  type LocalCopyAnswer,
  type LocalCopyRequest,
  UPDATES_STORE,
} from './local-copy-protocol.ts'

/**
 * Keeps the copy of each live document on this device, in IndexedDB, away from the page's
 * main thread: reading a large board's copy, merging its updates, writing megabytes the
 * server sent and compacting them all happen here, so the page stays responsive while a
 * board loads. The page hands over updates (local-copy.ts); this worker stores them in
 * order, one IndexedDB transaction each, and replays them into one once they pile up.
 */
interface Scope {
  postMessage(message: LocalCopyAnswer, transfer?: Transferable[]): void
  onmessage: ((event: MessageEvent<LocalCopyRequest>) => void) | null
}
const scope = self as unknown as Scope

/** Yjs only when updates are to be merged or replayed: reading an empty copy needs none. */
const yjs = () => import('yjs')

interface Copy {
  db: Promise<IDBDatabase>
  /** Updates stored, counted since the copy was read. */
  updates: number
  compacting: boolean
  /** Updates handed over and not yet written: written together, in one transaction. */
  pending: Uint8Array[]
}

const copies = new Map<string, Copy>()

const done = <T>(request: IDBRequest<T>) =>
  new Promise<T>((resolve, reject) => {
    request.onsuccess = () => resolve(request.result)
    request.onerror = () => reject(request.error)
  })

const committed = (tx: IDBTransaction) =>
  new Promise<void>((resolve, reject) => {
    tx.oncomplete = () => resolve()
    tx.onerror = () => reject(tx.error)
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'))
  })

function openCopy(name: string): Copy {
  let copy = copies.get(name)
  if (copy) return copy
  const request = indexedDB.open(name)
  request.onupgradeneeded = () => {
    const db = request.result
    if (!db.objectStoreNames.contains(UPDATES_STORE)) {
      db.createObjectStore(UPDATES_STORE, { autoIncrement: true })
    }
    if (!db.objectStoreNames.contains(CUSTOM_STORE)) db.createObjectStore(CUSTOM_STORE)
  }
  const opened = done(request).then((db) => {
    // Sign-out deletes the copies from the page: let go, or the deletion waits for us.
    db.onversionchange = () => {
      db.close()
      if (copies.get(name) === copy) copies.delete(name)
    }
    return db
  })
  copy = { db: opened, updates: 0, compacting: false, pending: [] }
  copies.set(name, copy)
  opened.catch(() => {
    if (copies.get(name) === copy) copies.delete(name)
  })
  return copy
}

/** Everything the copy holds as one update, merged here (no replay: that waits for compaction). */
async function load(name: string): Promise<Uint8Array | null> {
  const copy = openCopy(name)
  const db = await copy.db
  const tx = db.transaction(UPDATES_STORE, 'readonly')
  const updates = (await done(tx.objectStore(UPDATES_STORE).getAll())) as Uint8Array[]
  copy.updates = updates.length
  if (copy.updates >= COMPACT_AFTER) void compact(name, copy)
  if (updates.length === 0) return null
  return updates.length === 1 ? (updates[0] as Uint8Array) : (await yjs()).mergeUpdates(updates)
}

/** Writes the updates handed over since the last write, in the order they came. */
async function flush(name: string, copy: Copy): Promise<void> {
  const updates = copy.pending.splice(0)
  if (updates.length === 0) return
  const db = await copy.db
  const tx = db.transaction(UPDATES_STORE, 'readwrite')
  const store = tx.objectStore(UPDATES_STORE)
  for (const update of updates) store.add(update)
  await committed(tx)
  copy.updates += updates.length
  if (copy.updates >= COMPACT_AFTER) void compact(name, copy)
}

/**
 * Replaces the stored updates by one snapshot replayed from them (which also drops what
 * deleted content left behind), in one transaction: appends queued meanwhile run after it,
 * in order, as IndexedDB runs transactions on one store in the order they were made.
 */
async function compact(name: string, copy: Copy): Promise<void> {
  if (copy.compacting) return
  copy.compacting = true
  try {
    const Y = await yjs()
    const db = await copy.db
    const tx = db.transaction(UPDATES_STORE, 'readwrite')
    const store = tx.objectStore(UPDATES_STORE)
    const keys = store.getAllKeys()
    const values = store.getAll()
    values.onsuccess = () => {
      const all = values.result as Uint8Array[]
      const first = keys.result[0]
      const last = keys.result[keys.result.length - 1]
      if (all.length < 2 || first === undefined || last === undefined) return
      const doc = new Y.Doc()
      Y.transact(doc, () => {
        for (const u of all) Y.applyUpdate(doc, u)
      })
      const snapshot = Y.encodeStateAsUpdate(doc)
      doc.destroy()
      store.delete(IDBKeyRange.bound(first, last))
      store.add(snapshot)
    }
    await committed(tx)
    copy.updates = 1
  } catch (error) {
    console.error(`compacting the copy ${name} failed`, error)
  } finally {
    copy.compacting = false
  }
}

async function clear(name: string): Promise<void> {
  const copy = copies.get(name)
  copies.delete(name)
  if (copy) (await copy.db.catch(() => undefined))?.close()
  await done(indexedDB.deleteDatabase(name))
}

async function close(name: string): Promise<void> {
  const copy = copies.get(name)
  if (!copy) return
  copies.delete(name)
  ;(await copy.db.catch(() => undefined))?.close()
}

const failed = (id: number, error: unknown): LocalCopyAnswer => ({
  type: 'failed',
  id,
  message: error instanceof Error ? error.message : String(error),
})

/** Requests for one copy run one after another, in the order the page sent them. */
const queues = new Map<string, Promise<void>>()

function enqueue(name: string, work: () => Promise<void>): void {
  const next = (queues.get(name) ?? Promise.resolve()).then(work, work)
  queues.set(name, next)
  void next.finally(() => {
    if (queues.get(name) === next) queues.delete(name)
  })
}

scope.onmessage = ({ data: request }) => {
  switch (request.type) {
    case 'load':
      enqueue(request.db, () =>
        load(request.db).then(
          (update) =>
            scope.postMessage(
              { type: 'loaded', id: request.id, update },
              update ? [update.buffer as ArrayBuffer] : [],
            ),
          (error: unknown) => scope.postMessage(failed(request.id, error)),
        ),
      )
      break
    case 'append': {
      const copy = openCopy(request.db)
      copy.pending.push(request.update)
      if (copy.pending.length === 1) {
        enqueue(request.db, () =>
          flush(request.db, copy).catch((error: unknown) => {
            console.error(`keeping updates of ${request.db} on this device failed`, error)
          }),
        )
      }
      break
    }
    case 'clear':
      enqueue(request.db, () =>
        clear(request.db).then(
          () => scope.postMessage({ type: 'cleared', id: request.id }),
          (error: unknown) => scope.postMessage(failed(request.id, error)),
        ),
      )
      break
    case 'close':
      enqueue(request.db, () => close(request.db))
      break
    default:
      request satisfies never
  }
}
