import { HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import { appApi } from '../api/app-api.ts'
import { warmLocalCopies } from './local-copy.ts'

/** The organisation's live socket, as every page of it opens one. */
export function liveSocket(autoConnect: boolean): HocuspocusProviderWebsocket {
  return new HocuspocusProviderWebsocket({
    url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/sync`,
    autoConnect,
    // Reconnect quickly: a person waiting for "Synced" should not wait long.
    delay: 500,
    minDelay: 250,
    maxDelay: 10_000,
  })
}

export interface EarlyStart {
  orgId: string
  socket: HocuspocusProviderWebsocket
  /** A sync token, or undefined when the server gave none (signed out, not a member). */
  token: Promise<{ token: string; expiresAt: string } | undefined>
}

/** Not taken by then, what was started early is let go (the page went elsewhere). */
const KEEP_MS = 10_000

let early: (EarlyStart & { timer: ReturnType<typeof setTimeout> }) | undefined
/** An organisation's connection has started: nothing is started early any more. */
let tooLate = false

/**
 * Starts what a page of an organisation waits for, before the app's code has rendered
 * anything or heard who is signed in: the socket to the live documents, the sync token,
 * and the worker that reads the device's copies. A first visit otherwise does these one
 * after the other once /me has answered (about a tenth of a second on loopback, more over
 * a real network). Whatever the organisation's live connection does not take is let go.
 */
export function startEarly(): void {
  // The page's first script read the organisation from the address the page opened on.
  const orgId = window.corkboardBoot?.orgId
  if (!orgId || !navigator.onLine || early || tooLate) return
  warmLocalCopies()
  const token = appApi.syncToken(orgId).catch(() => undefined)
  const started = { orgId, socket: liveSocket(true), token }
  early = { ...started, timer: setTimeout(() => letGo(started), KEEP_MS) }
}

/** What was started early for this organisation, if anything; each start is taken once. */
export function takeEarly(orgId: string): EarlyStart | undefined {
  tooLate = true
  if (early?.orgId !== orgId) return undefined
  const { timer, ...taken } = early
  clearTimeout(timer)
  early = undefined
  return taken
}

/** Lets go of an early start nobody took (signed out, or another organisation). */
export function discardEarly(): void {
  if (early) letGo(early)
}

function letGo(started: EarlyStart): void {
  if (early?.socket !== started.socket) return
  clearTimeout(early.timer)
  early = undefined
  started.socket.destroy()
}
