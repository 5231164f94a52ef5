import type { IncomingMessage } from 'node:http'
import { ApiError } from '../errors.ts'
import { forwardedHttps, type Reached } from './client-address.ts'

/** Methods that change nothing: a page elsewhere may send them, and reads no answer (CORS). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

const first = (value: string | string[] | undefined) =>
  (Array.isArray(value) ? value[0] : value)?.split(',')[0]?.trim()

/**
 * The origin browsers use for this service: PUBLIC_URL's when set (behind a proxy the
 * request's own Host may be the proxy's upstream address), otherwise `http(s)://<Host>`,
 * https when a trusted TLS proxy (TRUST_PROXY=1) says so in X-Forwarded-Proto. Undefined
 * without a usable Host.
 */
export function ownOrigin(req: IncomingMessage, reached: Reached): string | undefined {
  if (reached.publicUrl) return new URL(reached.publicUrl).origin
  const host = req.headers.host
  if (!host) return undefined
  const scheme = forwardedHttps(req, reached.trustProxy) ? 'https' : 'http'
  try {
    return new URL(`${scheme}://${host}`).origin
  } catch {
    return undefined
  }
}

function normalisedOrigin(origin: string): string {
  try {
    return new URL(origin).origin
  } catch {
    return origin
  }
}

/**
 * Refuses what only a page on another site would send to the cookie-authenticated app API
 * (cross-site request forgery). The session cookie goes with every request the browser
 * makes to this service, whichever page makes it, and a page may POST a form or a
 * text/plain body elsewhere without a CORS preflight. So an unsafe request is refused
 * (403) when the browser says it comes from another site (Sec-Fetch-Site: cross-site, or
 * same-site: a sibling subdomain gets the SameSite=Lax cookie too) or from another origin
 * (Origin), and any body that is not JSON is refused (415): a cross-origin JSON
 * request needs a preflight, which this service never grants. Scripts send neither
 * header, so they keep working; so do reads (GET, HEAD), which change nothing.
 */
export function refuseCrossSite(
  req: IncomingMessage,
  reached: Reached,
  bodyTypes: readonly string[] = JSON_ONLY,
): void {
  const method = req.method ?? 'GET'
  if (SAFE_METHODS.has(method)) return

  const site = first(req.headers['sec-fetch-site'])
  if (site === 'cross-site' || site === 'same-site') {
    throw new ApiError(
      403,
      `Refused a ${site} request (Sec-Fetch-Site: ${site}): the app API only takes requests from this service's own pages`,
    )
  }
  const origin = first(req.headers.origin)
  if (origin !== undefined) {
    const own = ownOrigin(req, reached)
    if (own === undefined || normalisedOrigin(origin) !== own) {
      throw new ApiError(
        403,
        `Refused a request from origin ${origin}: the app API only takes requests from ${own ?? "this service's own origin"}` +
          (reached.publicUrl ? '' : ' (behind a proxy, set PUBLIC_URL to the address people use)'),
      )
    }
  }

  if (hasBody(req)) {
    const type = req.headers['content-type']
    const media = type?.split(';')[0]?.trim().toLowerCase()
    if (media === undefined || !bodyTypes.includes(media)) {
      throw new ApiError(
        415,
        type
          ? `Content-Type ${type} is not accepted: send the body as JSON with Content-Type: application/json`
          : 'The body has no Content-Type: send it as JSON with Content-Type: application/json',
      )
    }
  }
}

const JSON_ONLY = ['application/json']

/** Whether a body follows the headers: a non-zero Content-Length, or a chunked one. */
function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true
  const length = req.headers['content-length']
  return length !== undefined && length !== '0'
}
