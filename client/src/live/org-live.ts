import type { HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import * as Y from 'yjs'
import { CLOSE } from '../../../shared/live-protocol.ts'
import { type CarriedEdit, carry, editsToCarry, generationOf } from '../../../shared/rebase.ts'
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
  private readonly docs = new Map<string, Entry>()
  private readonly replacedHooks = new Set<(name: string, live: LiveDoc) => void>()
  private readonly rebasedHooks = new Set<(outcome: RebaseOutcome) => void>()
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
    const entry: Entry = {
      live: undefined as unknown as LiveDoc,
      refs: 1,
      cleanup: [],
      refusalSeen: false,
      rebasing: false,
      replaced: new Set(),
    }
    this.docs.set(name, entry)
    this.start(name, entry)
    this.recompute()
    return entry.live
  }

  /** Makes the entry's live document (a fresh one after a re-base) and runs the open hooks. */
  private start(name: string, entry: Entry): void {
    const live = new LiveDoc({
      name,
      userId: this.me.id,
      socket: this.socket,
      token: this.fetchToken,
      staleCopy: (copy) => void this.staleCopy(name, entry, copy),
    })
    live.awareness.setLocalStateField('user', this.me)
    entry.live = live
    entry.refusalSeen = false
    live.subscribe(() => {
      if (entry.live !== live) return
      if (live.status.refused === CLOSE.rebased.reason) {
        if (!entry.rebasing) void this.rebase(name, entry)
      } else if (live.status.refused && !entry.refusalSeen) {
        entry.refusalSeen = true
        for (const hook of this.refusedHooks) hook(live)
      }
      this.recompute()
    })
    for (const hook of this.openHooks) {
      const cleanup = hook(live)
      if (cleanup) entry.cleanup.push(cleanup)
    }
  }

  /**
   * The server refused a document as holding a generation that ended (docs/design.md,
   * "Re-basing a document"): this device's copy cannot sync any more. Its unsent edits are
   * worked out by key against the ended generation's final state (shared/rebase.ts), the
   * copy is forgotten, a fresh one syncs the new generation, and the edits are made again
   * there, as new edits the server reviews like any other. Whoever shows the document is
   * told to take the fresh one (onReplaced).
   */
  private async rebase(name: string, entry: Entry): Promise<void> {
    entry.rebasing = true
    const old = entry.live
    const found = await this.editsOf(name, old.doc, () => this.docs.get(name) === entry)
    if (!found || this.destroyed || this.docs.get(name) !== entry) return
    // No await from the edits worked out to the fresh copy: an edit made in between would
    // be in neither. The worker clears the old copy before the fresh one reads it.
    for (const f of entry.cleanup.splice(0)) f()
    void old.clearLocal().catch(() => {})
    old.destroy()
    entry.replaced.add(old)
    this.start(name, entry)
    entry.rebasing = false
    const fresh = entry.live
    for (const hook of this.replacedHooks) hook(name, fresh)
    this.recompute()
    await this.carryOnto(name, fresh, found, generationOf(old.doc) + 1)
  }

  /** A copy kept on this device, read late, of a generation that ended: carry its edits. */
  private async staleCopy(name: string, entry: Entry, copy: Y.Doc): Promise<void> {
    const live = entry.live
    const found = await this.editsOf(name, copy, () => entry.live === live)
    const generation = generationOf(copy)
    copy.destroy()
    if (found && !this.destroyed && entry.live === live)
      await this.carryOnto(name, live, found, generation + 1)
  }

  /**
   * A copy's unsent edits, by key, against the final state of the generation it holds (the
   * server keeps it for a while): undefined when the document was closed meanwhile.
   */
  private async editsOf(
    name: string,
    copy: Y.Doc,
    wanted: () => boolean,
  ): Promise<{ edits: CarriedEdit[]; lost: boolean } | undefined> {
    for (;;) {
      try {
        const ended = await appApi.endedGeneration(this.orgId, name, generationOf(copy))
        if (!ended.base) return { edits: [], lost: hasOwnEdits(copy) }
        const final = Y.decodeStateVector(fromBase64(ended.stateVector))
        return { edits: editsToCarry(name, ended.base, final, copy), lost: false }
      } catch (error) {
        if (this.destroyed || !wanted()) return undefined
        // Offline, or the server away: the copy stays as it is until it can ask again.
        if (!this.online || (error as { status?: number }).status === undefined) {
          await new Promise((r) => setTimeout(r, 2_000))
          continue
        }
        return { edits: [], lost: hasOwnEdits(copy) }
      }
    }
  }

  /** Makes carried edits again on the live copy (and on other documents they belong to). */
  private async carryOnto(
    name: string,
    live: LiveDoc,
    { edits, lost }: { edits: CarriedEdit[]; lost: boolean },
    generation: number,
  ): Promise<void> {
    // The server's state of the generation after the copy's (a sync status meant for the
    // copy's provider may read as synced before the fresh one received anything).
    await live.whenGeneration(generation)
    if (this.destroyed) return
    let carried = carry(
      live.doc,
      edits.filter((e) => e.doc === name),
      CARRIED,
    )
    // Edits meant for another document: a version-2 board's descriptions, now each
    // card's own.
    const elsewhere = new Map<string, CarriedEdit[]>()
    for (const e of edits) {
      if (e.doc !== name) elsewhere.set(e.doc, [...(elsewhere.get(e.doc) ?? []), e])
    }
    for (const [doc, list] of elsewhere) {
      const other = this.open(doc)
      await other.whenSynced()
      carried += carry(other.doc, list, CARRIED)
      this.release(other)
    }
    for (const hook of this.rebasedHooks) hook({ name, carried, lost })
  }

  /** Runs when a document's live copy was replaced by a fresh one (a re-base). */
  onReplaced(hook: (name: string, live: LiveDoc) => void): () => void {
    this.replacedHooks.add(hook)
    return () => {
      this.replacedHooks.delete(hook)
    }
  }

  /** Runs once a re-base is done: how many edits were carried, and whether some were lost. */
  onRebased(hook: (outcome: RebaseOutcome) => void): () => void {
    this.rebasedHooks.add(hook)
    return () => {
      this.rebasedHooks.delete(hook)
    }
  }

  /** The document's live copy now (a re-base replaces it). */
  current(name: string): LiveDoc | undefined {
    return this.docs.get(name)?.live
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
    if (!entry) return
    // A copy a re-base replaced: its holder lets go of the document all the same.
    if (entry.live !== live && !entry.replaced.has(live)) return
    entry.refs -= 1
    if (entry.refs > 0) return
    // Closing a document a moment later lets a quick back-and-forth reuse it; one whose
    // edits the server may not have yet (offline, or not acknowledged) stays open and
    // syncing until it has them. After a re-base, the fresh copy is the one closed.
    const settled = () =>
      entry.rebasing
        ? false
        : entry.live.status.refused !== undefined ||
          (entry.live.status.synced && entry.live.status.unsynced === 0)
    const name = live.name
    const close = () => {
      if (entry.refs > 0 || this.docs.get(name) !== entry) return
      if (entry.rebasing) return void setTimeout(close, 1_000)
      const current = entry.live
      if (!settled()) {
        const off = current.subscribe(() => {
          if (!settled()) return
          off()
          close()
        })
        return
      }
      this.docs.delete(name)
      for (const f of entry.cleanup) f()
      current.destroy()
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

interface Entry {
  live: LiveDoc
  refs: number
  cleanup: (() => void)[]
  refusalSeen: boolean
  /** Its copy holds an ended generation: a fresh one is being made. */
  rebasing: boolean
  /** Copies a re-base replaced, still held by whoever opened them. */
  replaced: Set<LiveDoc>
}

/** What a re-base of one document did for this device. */
export interface RebaseOutcome {
  name: string
  /** Unsent edits made again on the new generation. */
  carried: number
  /** Unsent edits that could not be carried (the ended generation's base expired). */
  lost: boolean
}

/** The origin of edits carried across a re-base: sent and kept like the person's own. */
const CARRIED = Symbol('carried across a re-base')

const fromBase64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0))

/**
 * Whether a copy holds edits of this device's own that the server may lack (it made any
 * change under its own client id). Without the ended generation's base they are lost.
 */
function hasOwnEdits(doc: Y.Doc): boolean {
  return Y.getState(doc.store, doc.clientID) > 0
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
