import { HocuspocusProvider, type HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import * as Y from 'yjs'
import { closeCase, parseNotice, type StatelessNotice } from '../../../shared/live-protocol.ts'
import { generationOf } from '../../../shared/rebase.ts'
import { Emitter } from '../store.ts'
import { LocalCopy } from './local-copy.ts'

export interface DocStatus {
  /** The copy kept on this device has been read (the document can be shown offline). */
  loaded: boolean
  /** The first exchange with the server is done since the last (re)connection. */
  synced: boolean
  /** Updates sent that the server has not acknowledged yet. */
  unsynced: number
  /** Why the server refused this document, if it did. */
  refused: string | undefined
}

/** The local name of a document's IndexedDB copy: per person, so sign-out can forget them. */
export function localName(userId: string, docName: string): string {
  return `corkboard/${userId}/${docName}`
}

/**
 * One live document: a Y.Doc kept on this device (local-copy.ts: IndexedDB, written from a
 * worker, so it opens and edits with no connection) and synchronised over the
 * organisation's shared WebSocket (Hocuspocus). The provider joins once the copy is read:
 * the server then sends only what the copy lacks, and the copy's offline edits go out in
 * the first exchange.
 */
export class LiveDoc {
  readonly name: string
  readonly doc = new Y.Doc()
  readonly provider: HocuspocusProvider
  readonly local: LocalCopy
  readonly whenLoaded: Promise<void>
  status: DocStatus = { loaded: false, synced: false, unsynced: 0, refused: undefined }
  private readonly socket: HocuspocusProviderWebsocket
  private readonly changed = new Emitter()
  private readonly noticeListeners = new Set<(notice: StatelessNotice) => void>()
  private destroyed = false

  constructor(options: {
    name: string
    userId: string
    socket: HocuspocusProviderWebsocket
    token: () => Promise<string>
    /**
     * A copy kept on this device turned out to be of a generation the server ended (read
     * late: see LocalCopy): its edits are to be carried across.
     */
    staleCopy?: (copy: Y.Doc) => void
  }) {
    this.name = options.name
    this.socket = options.socket
    this.local = new LocalCopy(localName(options.userId, options.name), this.doc, {
      synced: () => this.status.synced,
      stale: (copy) => options.staleCopy?.(copy),
    })
    this.whenLoaded = this.local.whenLoaded.then(() => {
      if (!this.destroyed) this.update({ loaded: true })
    })
    void this.local.whenReady.then(() => {
      // Several providers share one socket, and each must attach itself (docs/design.md).
      if (!this.destroyed) this.provider.attach()
    })
    this.provider = new HocuspocusProvider({
      websocketProvider: options.socket,
      name: options.name,
      document: this.doc,
      token: options.token,
      onSynced: () => this.update({ synced: true, refused: undefined }),
      onUnsyncedChanges: ({ number }) => this.update({ unsynced: number }),
      onAuthenticationFailed: ({ reason }) => this.update({ refused: reason }),
      onClose: ({ event }) => {
        // The server closed this document for good (deleted, or access revoked): say why.
        const gone = closeCase(event.reason)
        this.update(
          gone && gone !== 'reloaded'
            ? { synced: false, refused: event.reason }
            : { synced: false },
        )
      },
      onStateless: ({ payload }) => {
        const notice = parseNotice(payload)
        if (notice) for (const l of this.noticeListeners) l(notice)
      },
    })
    this.local.follow(this.provider)
  }

  get awareness() {
    const a = this.provider.awareness
    if (!a) throw new Error('live documents always have awareness')
    return a
  }

  private update(patch: Partial<DocStatus>) {
    this.status = { ...this.status, ...patch }
    this.changed.emit()
  }

  subscribe = (fn: () => void) => this.changed.subscribe(fn)

  /** The server's notices on this document: reverts, and on the board, map-list changes. */
  onNotice(fn: (notice: StatelessNotice) => void): () => void {
    this.noticeListeners.add(fn)
    return () => {
      this.noticeListeners.delete(fn)
    }
  }

  /** Resolves once the first exchange with the server is done (now, if it is). */
  whenSynced(): Promise<void> {
    return new Promise((resolve) => {
      if (this.status.synced) return resolve()
      const off = this.subscribe(() => {
        if (!this.status.synced) return
        off()
        resolve()
      })
    })
  }

  /**
   * Resolves once this copy holds generation `atLeast` or a later one (the server's state
   * after a re-base: every generation but the first names itself in the document).
   */
  whenGeneration(atLeast: number): Promise<void> {
    return new Promise((resolve) => {
      if (generationOf(this.doc) >= atLeast) return resolve()
      // Not 'update': the copy's listeners are set aside while the server's changes apply.
      const check = () => {
        if (generationOf(this.doc) < atLeast) return
        this.doc.off('afterTransaction', check)
        resolve()
      }
      this.doc.on('afterTransaction', check)
    })
  }

  /** Forgets the copy kept on this device (a document the server no longer has). */
  async clearLocal(): Promise<void> {
    await this.local.clear()
  }

  destroy(): void {
    this.destroyed = true
    if (this.status.refused !== undefined) {
      // The server closed this document already. Telling it so again would reach the next
      // provider of the same name on this socket: Hocuspocus keeps a message for a document
      // it has no connection to until one authenticates, then closes that one with it.
      this.socket.configuration.providerMap.delete(this.provider.effectiveName)
    }
    this.provider.destroy()
    this.local.destroy()
    this.doc.destroy()
    this.changed.clear()
    this.noticeListeners.clear()
  }
}

/** The keys a transaction changed on one Y.Map (added, overwritten or removed). */
export function changedKeys<T>(tr: Y.Transaction, map: Y.Map<T>): Set<string | null> | undefined {
  const target: unknown = map
  for (const [type, keys] of tr.changed) if (type === target) return keys
  return undefined
}
