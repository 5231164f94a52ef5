import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'

/** An IPv4 client reached over an IPv6 socket shows up as ::ffff:a.b.c.d: it is one client. */
export function plainAddress(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  return mapped?.[1] ?? address.toLowerCase()
}

/** An X-Forwarded-For entry as an address: some proxies add a port (`1.2.3.4:5678`, `[::1]:80`). */
function forwarded(entry: string): string | undefined {
  const candidates = [
    entry,
    /^\[([^\]]+)\](?::\d+)?$/.exec(entry)?.[1],
    /^([\d.]+):\d+$/.exec(entry)?.[1],
  ]
  return candidates.find((c): c is string => c !== undefined && isIP(c) !== 0)
}

/**
 * The address of the client a request comes from, for throttling. The socket's peer,
 * unless a reverse proxy is in front (TRUST_PROXY=1): then every socket is the proxy's and
 * the client is the first X-Forwarded-For entry. That entry is only trustworthy when the
 * proxy replaces the header a client sent rather than appending to it; without
 * TRUST_PROXY the header is ignored, since anyone can send it.
 */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const header = req.headers['x-forwarded-for']
    const first = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim()
    const address = first ? forwarded(first) : undefined
    if (address) return plainAddress(address)
  }
  return plainAddress(req.socket.remoteAddress ?? 'unknown')
}

/**
 * Whether the browser reached the service over https, as the proxy in front says in
 * X-Forwarded-Proto (the first entry: a chain lists one scheme per hop). Only behind a
 * proxy the operator declared (TRUST_PROXY=1): otherwise anyone could send the header,
 * and a plain-HTTP service would take itself for https.
 */
export function forwardedHttps(req: IncomingMessage, trustProxy: boolean): boolean {
  if (!trustProxy) return false
  const header = req.headers['x-forwarded-proto']
  const first = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim()
  return first?.toLowerCase() === 'https'
}

/** How the service sees where it is reached: PUBLIC_URL, and whether a proxy is trusted. */
export interface Reached {
  publicUrl: string | undefined
  trustProxy: boolean
}

/**
 * Whether the browser uses https, so cookies must be Secure: the operator says so in
 * PUBLIC_URL, or a trusted TLS proxy in X-Forwarded-Proto.
 */
export function browserUsesHttps(req: IncomingMessage, reached: Reached): boolean {
  return reached.publicUrl?.startsWith('https:') === true || forwardedHttps(req, reached.trustProxy)
}

/**
 * The key one client's budgets and caps are kept under: its address, or for IPv6 its /64,
 * since one machine is usually given a whole /64 and could otherwise use billions of
 * addresses, each with a budget of its own.
 */
export function addressKey(address: string): string {
  if (isIP(address) !== 6 || address.includes('.')) return address
  const [head = '', tail] = address.split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const zeros = Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0')
  const groups = [...left, ...zeros, ...right].slice(0, 4)
  return `${groups.map((g) => Number.parseInt(g, 16).toString(16)).join(':')}::/64`
}
