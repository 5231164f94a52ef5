import type { Server as HttpServer } from 'node:http'
import type { Extension, WebSocketLike } from '@hocuspocus/server'
import crossws from 'crossws/adapters/node'
import * as decoding from 'lib0/decoding'
import type { Logger } from '../../http/json.ts'
import type { LiveDocs } from '../../live/live-docs.ts'

interface PeerState {
  _hocuspocus?: {
    handleMessage(m: Uint8Array): void
    handleClose(e: { code: number; reason: string }): void
    /** Hocuspocus's ClientConnection: the documents it has a connection to, by address. */
    documentConnections: Record<string, unknown>
    /** Addresses whose authentication is under way or done. */
    documentConnectionsEstablished: Set<string>
  }
  /** Addresses of documents this socket authenticated at some point. */
  _authed?: Set<string>
}

/** Hocuspocus message type of an authentication message. */
const AUTH = 2

/**
 * Whether a message is left over from a document connection the server closed (refused,
 * re-based, deleted): the provider sent it before hearing of the close. Hocuspocus would
 * keep it until a connection of the same address authenticates, then play it there, and
 * that connection would inherit it (a provider's own request to close, or an update of a
 * generation that ended). Only an authentication opens a document again.
 */
function leftOver(state: PeerState, message: Uint8Array): boolean {
  const client = state._hocuspocus
  if (!client) return false
  let address: string
  let type: number
  try {
    const decoder = decoding.createDecoder(message)
    address = decoding.readVarString(decoder)
    type = decoding.readVarUint(decoder)
  } catch {
    return false
  }
  state._authed ??= new Set()
  if (type === AUTH) {
    state._authed.add(address)
    return false
  }
  return (
    state._authed.has(address) &&
    client.documentConnections[address] === undefined &&
    !client.documentConnectionsEstablished.has(address)
  )
}

/** What one live-sync socket may cost before it has proved who it is. */
export interface SyncLimits {
  /** A socket that has authenticated no document this long after opening is closed. */
  authTimeoutMs: number
  /** Largest message taken; a larger one closes the socket with 1009 before it is read. */
  maxMessageBytes: number
}

/** Hocuspocus's own "Connection Timeout" close code: providers reconnect after it. */
const NOT_AUTHENTICATED = 4408

/**
 * Live sync on the HTTP server's own port: WebSocket upgrades on `/sync` go to Hocuspocus
 * (through crossws, as Hocuspocus's own server does); any other upgrade is refused.
 *
 * A socket is bounded before it authenticates: Hocuspocus itself closes an
 * unauthenticated socket only after its idle `timeout` (a minute, checked once a minute),
 * so hundreds of sockets that never send a token would stay open for minutes. Each
 * socket here gets `authTimeoutMs` to authenticate any document. Messages are bounded by
 * ws's `maxPayload`, checked on each frame's declared length, so an oversized message is
 * refused (1009) before its bytes are buffered.
 */
export function attachSync(server: HttpServer, live: LiveDocs, log: Logger, limits: SyncLimits) {
  /** Deadlines of the sockets not yet authenticated, by the request Hocuspocus hooks see. */
  const deadlines = new Map<object, NodeJS.Timeout>()
  const authenticated = (request: object) => {
    clearTimeout(deadlines.get(request))
    deadlines.delete(request)
  }
  const marker: Extension = {
    // Hooks run one extension after another and stop at the first that throws: appended
    // last, this one runs only when every check before it accepted the token.
    onAuthenticate: async ({ request }) => authenticated(request),
  }
  live.hocuspocus.configuration.extensions.push(marker)

  let open = 0
  const ws = crossws({
    serverOptions: { maxPayload: limits.maxMessageBytes },
    hooks: {
      open(peer) {
        open += 1
        const state = peer as unknown as PeerState
        const request = peer.request
        // Its private maps are read by leftOver (see there).
        state._hocuspocus = live.hocuspocus.handleConnection(
          peer.websocket as unknown as WebSocketLike,
          request as Request,
        ) as unknown as PeerState['_hocuspocus']
        if (limits.authTimeoutMs <= 0) return
        const timer = setTimeout(() => {
          deadlines.delete(request)
          peer.close(
            NOT_AUTHENTICATED,
            `No document authenticated within ${Math.round(limits.authTimeoutMs / 1000)} s`,
          )
        }, limits.authTimeoutMs)
        timer.unref()
        deadlines.set(request, timer)
      },
      message(peer, message) {
        const state = peer as unknown as PeerState
        const bytes = message.uint8Array()
        if (leftOver(state, bytes)) return
        state._hocuspocus?.handleMessage(bytes)
      },
      close(peer, event) {
        open -= 1
        authenticated(peer.request)
        ;(peer as unknown as PeerState)._hocuspocus?.handleClose({
          code: event.code ?? 1000,
          reason: event.reason ?? '',
        })
      },
      error(_peer, error) {
        // A client's oversized message is its own problem (the socket is closed with 1009).
        if (/Max payload size exceeded/.test(String(error.message))) {
          log.info(
            `live sync: closed a socket whose message exceeded ${limits.maxMessageBytes} bytes`,
          )
          return
        }
        log.error('websocket error', error)
      },
    },
  })
  server.on('upgrade', (req, socket, head) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname
    if (path !== '/sync') {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n')
      return
    }
    ws.handleUpgrade(req, socket, head).catch((error: unknown) => {
      log.error('websocket upgrade failed', error)
      socket.destroy()
    })
  })
  return {
    closeAll: () => ws.closeAll(1001, 'server shutting down'),
    /** Open sockets now (metrics). */
    open: () => open,
  }
}
