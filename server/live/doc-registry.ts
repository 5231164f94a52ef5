import type { DirectConnection, Document, Hocuspocus } from '@hocuspocus/server'
import { orgIdOf } from '../../shared/doc-names.ts'
import { CLOSE } from '../../shared/live-protocol.ts'
import { within } from '../clock.ts'
import type { Logger } from '../http/json.ts'

/** The longest a shutdown waits for documents still loading, and for each unload (ms). */
const SHUTDOWN_WAIT_MS = 2_000

/** What a live connection carries once authenticated. */
export interface ConnectionContext {
  orgId: string
  userId?: string
  keyId?: string
  email: string
}

/** A document the server itself holds open (for writes and reads), with how many use it. */
export interface DocEntry {
  readonly name: string
  readonly doc: Document
  readonly connection: DirectConnection
  refs: number
  idleTimer: NodeJS.Timeout | undefined
  /**
   * Dropped after a failed commit, or its document was destroyed under it: whoever holds
   * it must acquire the document again (see `gone`).
   */
  evicted: boolean
}

/**
 * The documents of this process. People's connections keep a document loaded through
 * Hocuspocus; the server holds its own reference (a direct connection) while a write or a
 * read uses it, and lets it go `idleMs` after the last one, so memory follows what is in
 * use. Each document is held once: writes are computed on it directly (hold.ts).
 */
export class DocRegistry {
  private readonly hocuspocus: Hocuspocus<ConnectionContext>
  private readonly entries = new Map<string, Promise<DocEntry>>()
  /** The entries whose document has loaded (what an eviction must reach synchronously). */
  private readonly ready = new Map<string, DocEntry>()
  private readonly idleMs: number
  private readonly log: Logger

  constructor(options: { hocuspocus: Hocuspocus<ConnectionContext>; idleMs: number; log: Logger }) {
    this.hocuspocus = options.hocuspocus
    this.idleMs = options.idleMs
    this.log = options.log
    // Hocuspocus unloads by name: a document evicted here (destroyed, replaced by a fresh
    // load under the same name) whose last connection closes later would take its
    // successor out of the map, leaving two live copies of one document. Only the document
    // the map holds may unload.
    const hocuspocus = options.hocuspocus
    const unloadDocument = hocuspocus.unloadDocument.bind(hocuspocus)
    hocuspocus.unloadDocument = async (document) => {
      if (hocuspocus.documents.get(document.name) !== document) return
      return unloadDocument(document)
    }
  }

  /** The document, loading it on demand; pair every acquire with a release. */
  async acquire(name: string): Promise<DocEntry> {
    for (;;) {
      let promise = this.entries.get(name)
      if (!promise) {
        promise = this.open(name)
        this.entries.set(name, promise)
        promise.catch(() => {
          if (this.entries.get(name) === promise) this.entries.delete(name)
        })
      }
      const entry = await promise
      if (entry.evicted) continue
      if (entry.doc.isDestroyed) {
        // Unloaded under the entry (see open): it is gone; load the document again.
        this.forget(entry)
        continue
      }
      entry.refs += 1
      if (entry.idleTimer) {
        clearTimeout(entry.idleTimer)
        entry.idleTimer = undefined
      }
      return entry
    }
  }

  /**
   * Opens the server's connection to a document. Hocuspocus hands over a loaded document a
   * few ticks before the connection counts on it, and the document may be unloaded or
   * evicted in between: a destroyed Y.Doc drops its listeners, so writes computed on it
   * would be acknowledged yet never stored or shown. Such a document is never kept.
   */
  private async open(name: string): Promise<DocEntry> {
    const orgId = orgIdOf(name)
    for (let attempt = 0; ; attempt++) {
      const connection = await this.hocuspocus.openDirectConnection(name, {
        orgId,
        email: 'server',
      })
      const doc = connection.document
      if (!doc) throw new Error(`document ${name} closed while opening`)
      if (doc.isDestroyed) {
        // Not disconnected: its document is gone already (unloadDocument ignores it anyway).
        if (attempt >= 10) throw new Error(`document ${name} kept unloading while opening`)
        continue
      }
      const entry: DocEntry = {
        name,
        doc,
        connection,
        refs: 0,
        idleTimer: undefined,
        evicted: false,
      }
      this.ready.set(name, entry)
      return entry
    }
  }

  /** An entry whose document was destroyed under it: nobody acquires it again. */
  private forget(entry: DocEntry): void {
    entry.evicted = true
    if (entry.idleTimer) clearTimeout(entry.idleTimer)
    if (this.ready.get(entry.name) === entry) this.ready.delete(entry.name)
    const current = this.entries.get(entry.name)
    void current?.then((e) => {
      if (e === entry && this.entries.get(entry.name) === current) this.entries.delete(entry.name)
    })
  }

  release(entry: DocEntry): void {
    entry.refs -= 1
    if (entry.refs > 0 || entry.evicted) return
    entry.idleTimer = setTimeout(() => void this.unload(entry), this.idleMs)
    entry.idleTimer.unref()
  }

  /** The loaded document of this name, if Hocuspocus has it (whoever opened it). */
  loaded(name: string): Document | undefined {
    const doc = this.hocuspocus.documents.get(name)
    return doc && !doc.isDestroyed && !doc.isLoading ? doc : undefined
  }

  /** Drops the server's hold; Hocuspocus unloads the document once no person has it open. */
  private async unload(entry: DocEntry): Promise<void> {
    if (entry.refs > 0 || entry.evicted) return
    if (this.ready.get(entry.name) === entry) {
      this.ready.delete(entry.name)
      this.entries.delete(entry.name)
    }
    if (entry.doc.isDestroyed) return
    await entry.connection.disconnect().catch((error: unknown) => {
      this.log.error(`unloading ${entry.name} failed`, error)
    })
  }

  /**
   * Drops these documents from memory at once: they hold changes that will never be
   * committed. Their connections are closed (whole sockets, so every provider reconnects
   * by itself and syncs again from what storage holds), and the next use loads them anew.
   */
  evict(names: Iterable<string>, close: { code: number; reason: string } = CLOSE.reloaded): void {
    for (const name of names) {
      const entry = this.ready.get(name)
      if (entry) {
        this.ready.delete(name)
        this.entries.delete(name)
        entry.evicted = true
        // Never unloaded through its connection: the document is destroyed below.
        if (entry.idleTimer) clearTimeout(entry.idleTimer)
      }
      // An open under way finds the document destroyed and loads it again (open()).
      const doc = this.hocuspocus.documents.get(name)
      if (!doc) continue
      for (const connection of doc.getConnections()) {
        try {
          if (close === CLOSE.reloaded) connection.webSocket.close(close.code, close.reason)
          // Only this document's connection: the socket's others are fine.
          else connection.close(close)
        } catch (error) {
          this.log.error(`closing a connection to ${name} failed`, error)
        }
      }
      this.hocuspocus.documents.delete(name)
      doc.destroy()
    }
  }

  /** Every document loaded now (people's and the server's). */
  documents(): Document[] {
    return [...this.hocuspocus.documents.values()]
  }

  /** Lets go of every document the server holds (shutdown). */
  async close(): Promise<void> {
    // Loads under way are waited for, and each unload, a while only: either can wait for
    // ever on a Redis that went away (its subscription, its lock), and by now every write
    // and every person's edit is stored (the lanes closed first): nothing is left to keep.
    await within(
      Promise.all([...this.entries.values()].map((p) => p.catch(() => undefined))),
      SHUTDOWN_WAIT_MS,
      () => undefined,
    )
    for (const entry of [...this.ready.values()]) {
      if (entry.idleTimer) clearTimeout(entry.idleTimer)
      entry.refs = 0
      await within(this.unload(entry), SHUTDOWN_WAIT_MS, () => undefined)
    }
  }
}

/** The entry's document is no longer the live one: acquire it again. */
export function gone(entry: DocEntry): boolean {
  return entry.evicted || entry.doc.isDestroyed
}
