import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { ApiError } from '../errors.ts'
import type { Metrics } from '../metrics/metrics.ts'

const digest = (s: string) => createHash('sha256').update(s).digest()

/**
 * `GET /metrics` in the Prometheus text format, for whoever holds METRICS_TOKEN as a
 * bearer token. Without the variable it does not exist (404, as any unknown path), so a
 * service put on the internet shows nothing by default. Tokens are compared through their
 * digests in constant time: neither the content nor the length leaks through timing.
 */
export function metricsEndpoint(metrics: Metrics, token: string | undefined) {
  const expected = token === undefined ? undefined : digest(token)
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (!expected) throw new ApiError(404, `No route ${req.method} /metrics`)
    const sent = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1]
    if (!sent || !timingSafeEqual(digest(sent), expected)) {
      throw new ApiError(
        401,
        'GET /metrics takes the METRICS_TOKEN as "Authorization: Bearer <token>"',
        undefined,
        { 'www-authenticate': 'Bearer realm="metrics"' },
      )
    }
    const body = await metrics.text()
    res.writeHead(200, {
      'content-type': metrics.contentType,
      'content-length': Buffer.byteLength(body),
      'cache-control': 'no-store',
    })
    res.end(body)
  }
}
