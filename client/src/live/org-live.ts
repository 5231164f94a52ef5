import type { HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import { appApi } from '../api/app-api.ts'
import { Emitter } from '../store.ts'
import { pageSettled } from '../sw/register.ts'
import { liveSocket, takeEarly } from './early.ts'
import { LiveDoc, localName } from './live-doc.ts'
import { forgetCopiesKept, warmLocalCopies } from './local-copy.ts'

export type SyncState = 'offline' | 'connecting' | 'syncing' | 'synced'

export interface Identity {
  id: string
  name: string
  email: string
  color: string
}

const PRESENCE_COLORS = [
  '#e5484d',
  '#0090ff',
  '#30a46c',
  '#f76b15',
  '#8e4ec6',
  '#d6409f',
  '#12a594',
  '#ab6400',
]

export function colorFor(id: string): string {
  let h = 0
  for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) | 0
  return PRESENCE_COLORS[Math.abs(h) % PRESENCE_COLORS.length] as string
}

/**
 * Everything live for one organisation: one WebSocket shared by its documents, a sync token
 * fetched on each (re)connection, and the browser's online/offline state: Chromium keeps a
 * socket open when the network goes away, so going offline closes it on purpose and coming
 * back reconnects (edits made meanwhile live in IndexedDB and sync then).
 */
export class OrgLive {
  readonly orgId: string
  readonly me: Identity
  readonly socket: HocuspocusProviderWebsocket
  private readonly docs = new Map<
    string,
    { live: LiveDoc; refs: number; cleanup: (() => void)[]; refusalSeen: boolean }
  >()
  private readonly changed = new Emitter()
  private readonly openHooks = new Set<(live: LiveDoc) => (() => void) | undefined>()
  private readonly refusedHooks = new Set<(live: LiveDoc) => void>()
  private token: { value: string; expiresAt: number } | undefined
  private tokenFetch: Promise<string> | undefined
  private socketStatus: 'connecting' | 'connected' | 'disconnected' = 'disconnected'
  private online = navigator.onLine
  private destroyed = false
  state: SyncState = 'offline'

  constructor(orgId: string, me: Omit<Identity, 'color'>) {
    this.orgId = orgId
    this.me = { ...me, color: colorFor(me.id) }
    // The socket and the sync token may have been started with the page (early.ts).
    const early = takeEarly(orgId)
    this.socket = early?.socket ?? liveSocket(this.online)
    this.socketStatus = early ? this.socket.status : 'disconnected'
    if (early) {
      this.tokenFetch = early.token
        .then((answer) => answer ?? appApi.syncToken(this.orgId))
        .then(this.keepToken)
        .finally(() => {
          this.tokenFetch = undefined
        })
    }
    this.socket.on(
      'status',
      ({ status }: { status: 'connecting' | 'connected' | 'disconnected' }) => {
        this.socketStatus = status
        // Back online before the socket closed for going offline (a network blip): the
        // provider's connect() did nothing then, as the socket still read connected, and
        // it does not reconnect a socket it was asked to close. Connect now it has closed.
        if (status === 'disconnected' && this.online && !this.destroyed) {
          if (!this.socket.shouldConnect) void this.socket.connect()
        }
        this.recompute()
      },
    )
    window.addEventListener('online', this.goOnline)
    window.addEventListener('offline', this.goOffline)
    // Documents join once their copy on this device is read: meanwhile the worker that reads
    // it starts and the sync token arrives, rather than one after the other.
    warmLocalCopies()
    if (this.online) this.fetchToken().catch(() => {})
    this.recompute()
  }

  private goOnline = () => {
    this.online = true
    void this.socket.connect()
    this.recompute()
  }

  private goOffline = () => {
    this.online = false
    this.socket.disconnect()
    this.recompute()
  }

  private keepToken = ({ token, expiresAt }: { token: string; expiresAt: string }): string => {
    this.token = { value: token, expiresAt: Date.parse(expiresAt) }
    return token
  }

  /** A sync token, fetched once for every document asking at the same time. */
  private fetchToken = (): Promise<string> => {
    if (this.token && this.token.expiresAt - Date.now() > 60_000) {
      return Promise.resolve(this.token.value)
    }
    this.tokenFetch ??= appApi
      .syncToken(this.orgId)
      .then(this.keepToken)
      .finally(() => {
        this.tokenFetch = undefined
      })
    return this.tokenFetch
  }

  /** Opens (or shares) a live document; pair every open with a release. */
  open(name: string): LiveDoc {
    const existing = this.docs.get(name)
    if (existing) {
      existing.refs += 1
      return existing.live
    }
    const live = new LiveDoc({
      name,
      userId: this.me.id,
      socket: this.socket,
      token: this.fetchToken,
    })
    live.awareness.setLocalStateField('user', this.me)
    const entry = { live, refs: 1, cleanup: [] as (() => void)[], refusalSeen: false }
    live.subscribe(() => {
      if (live.status.refused && !entry.refusalSeen) {
        entry.refusalSeen = true
        for (const hook of this.refusedHooks) hook(live)
      }
      this.recompute()
    })
    for (const hook of this.openHooks) {
      const cleanup = hook(live)
      if (cleanup) entry.cleanup.push(cleanup)
    }
    this.docs.set(name, entry)
    this.recompute()
    return live
  }

  /** Runs for every document opened from now on; what it returns runs when it closes. */
  onOpen(hook: (live: LiveDoc) => (() => void) | undefined): () => void {
    this.openHooks.add(hook)
    return () => {
      this.openHooks.delete(hook)
    }
  }

  /** Runs once when the server refuses or closes a document for good (deleted, revoked). */
  onRefused(hook: (live: LiveDoc) => void): () => void {
    this.refusedHooks.add(hook)
    return () => {
      this.refusedHooks.delete(hook)
    }
  }

  release(live: LiveDoc): void {
    const entry = this.docs.get(live.name)
    if (!entry || entry.live !== live) return
    entry.refs -= 1
    if (entry.refs > 0) return
    // Closing a document a moment later lets a quick back-and-forth reuse it; one whose
    // edits the server may not have yet (offline, or not acknowledged) stays open and
    // syncing until it has them.
    const settled = () =>
      live.status.refused !== undefined || (live.status.synced && live.status.unsynced === 0)
    const close = () => {
      if (entry.refs > 0 || this.docs.get(live.name) !== entry) return
      if (!settled()) {
        const off = live.subscribe(() => {
          if (!settled()) return
          off()
          close()
        })
        return
      }
      this.docs.delete(live.name)
      for (const f of entry.cleanup) f()
      live.destroy()
      this.recompute()
    }
    setTimeout(close, 5_000)
  }

  private recompute() {
    let next: SyncState
    if (!this.online || this.socketStatus === 'disconnected') next = 'offline'
    else if (this.socketStatus === 'connecting') next = 'connecting'
    else {
      // A document the server refused for good (deleted, revoked) has nothing left to sync.
      const busy = [...this.docs.values()].some(
        ({ live }) => !live.status.refused && (!live.status.synced || live.status.unsynced > 0),
      )
      next = busy ? 'syncing' : 'synced'
    }
    if (next === this.state) return
    this.state = next
    // Not before a document is open: the socket alone reads as synced for a moment.
    if (next === 'synced' && this.docs.size > 0) pageSettled()
    this.changed.emit()
  }

  subscribe = (fn: () => void) => this.changed.subscribe(fn)

  destroy(): void {
    this.destroyed = true
    window.removeEventListener('online', this.goOnline)
    window.removeEventListener('offline', this.goOffline)
    for (const { live, cleanup } of this.docs.values()) {
      for (const f of cleanup) f()
      live.destroy()
    }
    this.docs.clear()
    this.socket.destroy()
    this.changed.clear()
  }
}

/** Deletes every IndexedDB copy this person's documents left on the device (sign-out). */
export async function forgetLocalCopies(userId: string): Promise<void> {
  const prefix = localName(userId, '')
  forgetCopiesKept(prefix)
  const dbs = typeof indexedDB.databases === 'function' ? await indexedDB.databases() : []
  await Promise.all(
    dbs
      .map((d) => d.name)
      .filter((n): n is string => typeof n === 'string' && n.startsWith(prefix))
      .map(
        (name) =>
          new Promise<void>((resolve) => {
            const req = indexedDB.deleteDatabase(name)
            req.onsuccess = () => resolve()
            req.onerror = () => resolve()
            req.onblocked = () => resolve()
          }),
      ),
  )
}
