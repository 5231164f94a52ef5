import { HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import { appApi } from '../api/app-api.ts'
import { LiveDoc, localName } from './live-doc.ts'

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
  private readonly docs = new Map<string, { live: LiveDoc; refs: number }>()
  private readonly listeners = new Set<() => void>()
  private token: { value: string; expiresAt: number } | undefined
  private socketStatus: 'connecting' | 'connected' | 'disconnected' = 'disconnected'
  private online = navigator.onLine
  state: SyncState = 'offline'

  constructor(orgId: string, me: Omit<Identity, 'color'>) {
    this.orgId = orgId
    this.me = { ...me, color: colorFor(me.id) }
    this.socket = new HocuspocusProviderWebsocket({
      url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/sync`,
      autoConnect: this.online,
      // Reconnect quickly: a person waiting for "Synced" should not wait long.
      delay: 500,
      minDelay: 250,
      maxDelay: 10_000,
    })
    this.socket.on(
      'status',
      ({ status }: { status: 'connecting' | 'connected' | 'disconnected' }) => {
        this.socketStatus = status
        this.recompute()
      },
    )
    window.addEventListener('online', this.goOnline)
    window.addEventListener('offline', this.goOffline)
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

  private fetchToken = async (): Promise<string> => {
    if (this.token && this.token.expiresAt - Date.now() > 60_000) return this.token.value
    const { token, expiresAt } = await appApi.syncToken(this.orgId)
    this.token = { value: token, expiresAt: Date.parse(expiresAt) }
    return token
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
    live.subscribe(() => this.recompute())
    this.docs.set(name, { live, refs: 1 })
    this.recompute()
    return live
  }

  release(live: LiveDoc): void {
    const entry = this.docs.get(live.name)
    if (!entry || entry.live !== live) return
    entry.refs -= 1
    if (entry.refs > 0) return
    // Closing a document a moment later lets a quick back-and-forth reuse it.
    setTimeout(() => {
      if (entry.refs > 0 || this.docs.get(live.name) !== entry) return
      this.docs.delete(live.name)
      live.destroy()
      this.recompute()
    }, 5_000)
  }

  private recompute() {
    let next: SyncState
    if (!this.online || this.socketStatus === 'disconnected') next = 'offline'
    else if (this.socketStatus === 'connecting') next = 'connecting'
    else {
      const busy = [...this.docs.values()].some(
        ({ live }) => !live.status.synced || live.status.unsynced > 0,
      )
      next = busy ? 'syncing' : 'synced'
    }
    if (next === this.state) return
    this.state = next
    for (const l of this.listeners) l()
  }

  subscribe = (fn: () => void) => {
    this.listeners.add(fn)
    return () => {
      this.listeners.delete(fn)
    }
  }

  destroy(): void {
    window.removeEventListener('online', this.goOnline)
    window.removeEventListener('offline', this.goOffline)
    for (const { live } of this.docs.values()) live.destroy()
    this.docs.clear()
    this.socket.destroy()
    this.listeners.clear()
  }
}

/** Deletes every IndexedDB copy this person's documents left on the device (sign-out). */
export async function forgetLocalCopies(userId: string): Promise<void> {
  const prefix = localName(userId, '')
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
