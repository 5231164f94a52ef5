import type { Server, ServerOptions } from 'node:http'
import type { Socket } from 'node:net'
import { addressKey, plainAddress } from './client-address.ts'
import type { Logger } from './json.ts'

/** How long a client refused for too many connections is asked to wait. */
const REFUSED_RETRY_SECONDS = 5

export interface ConnectionLimits {
  /** A request's headers must arrive within this (Node's `headersTimeout`). */
  headersTimeoutMs: number
  /** A whole request, body included, must arrive within this (Node's `requestTimeout`). */
  requestTimeoutMs: number
  /** Open TCP connections per client address (an IPv6 /64); 0 = no cap. */
  maxPerAddress: number
}

/**
 * Bounds what one client can hold open on the HTTP server, so that a few machines cannot
 * use up its sockets and memory (slowloris). Returns the options of `createServer`:
 * a request that does not arrive in full in time is answered 408 and closed; Node counts
 * the headers' time from the connection (or from the previous request on it), so a
 * connection that sends nothing is closed too. Node checks every
 * `connectionsCheckingInterval` (30 s unless set, and settable only here): it is set to a
 * fraction of the timeouts, so a request is closed close to its deadline rather than up to
 * 30 s later. A WebSocket leaves this tracking once upgraded (sync-server.ts bounds it).
 */
export function requestTimeouts(limits: ConnectionLimits): ServerOptions {
  if (limits.requestTimeoutMs > 0 && limits.headersTimeoutMs > limits.requestTimeoutMs) {
    throw new Error(
      `HTTP_HEADERS_TIMEOUT_MS (${limits.headersTimeoutMs}) must not exceed HTTP_REQUEST_TIMEOUT_MS (${limits.requestTimeoutMs})`,
    )
  }
  const shortest = Math.min(
    ...[limits.headersTimeoutMs, limits.requestTimeoutMs].filter((ms) => ms > 0),
    4_000,
  )
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: Math.max(10, Math.floor(shortest / 4)),
  }
}

/**
 * Beyond `maxPerAddress` open connections from one address (an IPv6 /64), a new one is
 * answered 503 and closed before any HTTP parsing: the request it carries never runs.
 * Call once, before `listen`.
 */
export function capConnections(server: Server, limits: ConnectionLimits, log: Logger): void {
  if (limits.maxPerAddress > 0) capPerAddress(server, limits.maxPerAddress, log)
}

/**
 * Counts open connections per address on the server's 'connection' event. The HTTP
 * server's own listener on that event (which attaches its parser) is moved behind the
 * count: a refused socket never gets a parser, so nothing it sends is read or run.
 */
function capPerAddress(server: Server, max: number, log: Logger): void {
  const open = new Map<string, number>()
  const warned = new Set<string>()
  const serve = server.listeners('connection')
  server.removeAllListeners('connection')
  server.on('connection', (socket: Socket) => {
    const key = addressKey(plainAddress(socket.remoteAddress ?? 'unknown'))
    const count = open.get(key) ?? 0
    if (count >= max) {
      if (!warned.has(key)) {
        warned.add(key)
        log.info(
          `refusing connections from ${key}: ${max} already open (MAX_CONNECTIONS_PER_ADDRESS)`,
        )
      }
      refuse(socket, max)
      return
    }
    open.set(key, count + 1)
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1
      if (left > 0) open.set(key, left)
      else open.delete(key)
      if (left < max) warned.delete(key)
    })
    for (const listener of serve) listener.call(server, socket)
  })
}

function refuse(socket: Socket, max: number): void {
  const body = JSON.stringify({
    error: `Too many open connections from your address: at most ${max} open connections per address. Close some and try again`,
  })
  socket.on('error', () => {})
  // Read and drop whatever it sends, so closing does not reset the connection before the
  // client has read the answer.
  socket.on('data', () => {})
  socket.end(
    [
      'HTTP/1.1 503 Service Unavailable',
      'Connection: close',
      'Content-Type: application/json; charset=utf-8',
      'X-Content-Type-Options: nosniff',
      `Retry-After: ${REFUSED_RETRY_SECONDS}`,
      `Content-Length: ${Buffer.byteLength(body)}`,
      '',
      body,
    ].join('\r\n'),
    () => socket.destroy(),
  )
}
