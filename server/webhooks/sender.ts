import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http'
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import {
  AddressRefusedError,
  bareHost,
  guardedLookup,
  refusedLiteral,
} from '../http/address-guard.ts'

/** How one attempt went. A delivery succeeds only on a 2xx answered in time. */
export interface SendResult {
  ok: boolean
  /** The receiver's status, when it answered at all. */
  statusCode: number | null
  /** Why it failed, written for the person reading the delivery log. */
  error: string | null
  durationMs: number
}

/** Keep-alive connections to receivers, every one opened through the address guard. */
export class Sender {
  private readonly http: HttpAgent
  private readonly https: HttpsAgent
  private readonly allowPrivate: boolean
  private readonly timeoutMs: number

  constructor(options: { allowPrivate: boolean; timeoutMs: number; maxSockets?: number }) {
    this.allowPrivate = options.allowPrivate
    this.timeoutMs = options.timeoutMs
    const lookup = guardedLookup(options.allowPrivate)
    const common = { keepAlive: true, maxSockets: options.maxSockets ?? 64, lookup }
    this.http = new HttpAgent(common)
    this.https = new HttpsAgent(common)
  }

  /**
   * POSTs `body` once. Never follows a redirect (a 3xx is a failure), gives the receiver
   * `timeoutMs` to answer (then aborts), and never throws: every outcome is a result.
   */
  send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const started = performance.now()
    const done = (r: Omit<SendResult, 'durationMs'>): SendResult => ({
      ...r,
      durationMs: Math.round(performance.now() - started),
    })
    let target: URL
    try {
      target = new URL(url)
    } catch {
      return Promise.resolve(done({ ok: false, statusCode: null, error: 'invalid url' }))
    }
    if (!this.allowPrivate) {
      const refused = refusedLiteral(target.hostname)
      if (refused)
        return Promise.resolve(done({ ok: false, statusCode: null, error: refused.message }))
    }
    const secure = target.protocol === 'https:'
    return new Promise<SendResult>((resolve) => {
      let settled = false
      const finish = (r: Omit<SendResult, 'durationMs'>) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(done(r))
      }
      const req = (secure ? httpsRequest : httpRequest)({
        protocol: target.protocol,
        hostname: bareHost(target.hostname),
        port: target.port || undefined,
        path: `${target.pathname}${target.search}`,
        method: 'POST',
        agent: secure ? this.https : this.http,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'user-agent': 'Corkboard-Webhooks/1',
          ...headers,
        },
      })
      const timer = setTimeout(() => {
        req.destroy()
        finish({
          ok: false,
          statusCode: null,
          error: `no reply within ${this.timeoutMs / 1000} s (timed out)`,
        })
      }, this.timeoutMs)
      req.on('response', (res: IncomingMessage) => {
        const status = res.statusCode ?? 0
        // Drain (and so free the connection for reuse) without keeping the body; a body
        // that never ends must not hold the connection forever.
        const drain = setTimeout(() => res.destroy(), this.timeoutMs)
        drain.unref()
        res.on('close', () => clearTimeout(drain))
        res.on('error', () => {})
        res.resume()
        finish(outcome(status, res.headers.location))
      })
      req.on('error', (error: NodeJS.ErrnoException) => {
        finish({ ok: false, statusCode: null, error: describeError(error) })
      })
      req.end(body)
    })
  }

  /** Closes idle keep-alive connections (in-flight ones finish on their own). */
  close(): void {
    this.http.destroy()
    this.https.destroy()
  }
}

function outcome(status: number, location: string | undefined): Omit<SendResult, 'durationMs'> {
  if (status >= 200 && status < 300) return { ok: true, statusCode: status, error: null }
  if (status >= 300 && status < 400) {
    return {
      ok: false,
      statusCode: status,
      error: `HTTP ${status} redirect${location ? ` to ${location.slice(0, 200)}` : ''} not followed: webhooks are delivered only to the registered address`,
    }
  }
  return { ok: false, statusCode: status, error: `HTTP ${status}` }
}

function describeError(error: NodeJS.ErrnoException): string {
  if (error instanceof AddressRefusedError) return error.message
  switch (error.code) {
    case 'ECONNREFUSED':
      return 'connection refused'
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `could not resolve the host (${error.code})`
    case 'ECONNRESET':
      return 'connection reset by the receiver'
    default:
      return error.code ? `${error.code}: ${error.message}` : error.message
  }
}
