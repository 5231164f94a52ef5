import type { Server as HttpServer } from 'node:http'
import type { WebSocketLike } from '@hocuspocus/server'
import crossws from 'crossws/adapters/node'
import type { Logger } from '../http/json.ts'
import type { LiveDocs } from './live-docs.ts'

interface PeerState {
  _hocuspocus?: {
    handleMessage(m: Uint8Array): void
    handleClose(e: { code: number; reason: string }): void
  }
}

/**
 * Live sync on the HTTP server's own port: WebSocket upgrades on `/sync` go to Hocuspocus
 * (through crossws, as Hocuspocus's own server does); any other upgrade is refused.
 */
export function attachSync(server: HttpServer, live: LiveDocs, log: Logger) {
  const ws = crossws({
    hooks: {
      open(peer) {
        const state = peer as unknown as PeerState
        state._hocuspocus = live.hocuspocus.handleConnection(
          peer.websocket as unknown as WebSocketLike,
          peer.request as Request,
        )
      },
      message(peer, message) {
        ;(peer as unknown as PeerState)._hocuspocus?.handleMessage(message.uint8Array())
      },
      close(peer, event) {
        ;(peer as unknown as PeerState)._hocuspocus?.handleClose({
          code: event.code ?? 1000,
          reason: event.reason ?? '',
        })
      },
      error(_peer, error) {
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
  return { closeAll: () => ws.closeAll(1001, 'server shutting down') }
}
