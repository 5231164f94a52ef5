import { Agent as HttpsAgent, request as httpsRequest } from 'node:https'
import { rootCertificates } from 'node:tls'
import type { Clock } from '../clock.ts'
import {
  AddressRefusedError,
  bareHost,
  guardedLookup,
  refusedLiteral,
} from '../http/address-guard.ts'
import { type ClientRow, checkClientMetadata } from './oauth-client-metadata.ts'

/**
 * Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, which the
 * MCP authorization specification asks authorization servers to support): a client whose
 * `client_id` is an https URL publishes its metadata there, and needs no registration.
 *
 * The URL is a stranger's, so the fetch is the webhooks' kind of request: through the
 * address guard (no loopback, private or metadata addresses unless the operator allows
 * them), no redirects, a short timeout and a small size cap.
 */

const MAX_BYTES = 64 * 1024
const TIMEOUT_MS = 5_000
/** A fetched document is trusted this long, so authorize, consent and token fetch it once. */
const CACHE_MS = 5 * 60 * 1000
const CACHE_ENTRIES = 500

/** Whether a `client_id` names a metadata document (registered ids are never URLs). */
export const isClientDocId = (clientId: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(clientId)

export type ClientDocOutcome =
  | { type: 'ok'; client: ClientRow }
  | { type: 'refused'; message: string }

export interface ClientDocsOptions {
  clock: Clock
  /** Lets documents live on loopback and private addresses (OAUTH_ALLOW_PRIVATE_CLIENT_DOCS). */
  allowPrivate: boolean
  /** An extra certificate authority to trust beside the system's (a test's own). */
  ca?: string
}

class Refused extends Error {}

/** Why a URL may not be a client ID (draft §3), or undefined when it may. */
function urlProblem(clientId: string): string | undefined {
  let url: URL
  try {
    url = new URL(clientId)
  } catch {
    return 'it is not a URL'
  }
  if (url.protocol !== 'https:') return 'it must be an https URL'
  if (url.pathname === '/' || url.pathname === '') return 'it must have a path'
  if (url.username || url.password) return 'it must not carry credentials'
  if (url.hash || clientId.includes('#')) return 'it must not have a fragment'
  // The normalised form only: no dot segments, default ports, or case the parser would fold.
  if (url.href !== clientId) return `it must be written in normal form (${url.href})`
  return undefined
}

export class ClientDocs {
  private readonly clock: Clock
  private readonly allowPrivate: boolean
  private readonly agent: HttpsAgent
  private readonly cache = new Map<string, { until: number; client: Promise<ClientRow> }>()

  constructor(options: ClientDocsOptions) {
    this.clock = options.clock
    this.allowPrivate = options.allowPrivate
    this.agent = new HttpsAgent({
      keepAlive: false,
      lookup: guardedLookup(options.allowPrivate),
      ...(options.ca ? { ca: [...rootCertificates, options.ca] } : {}),
    })
  }

  /**
   * The client a metadata document describes, fetched and checked (or cached from a fetch
   * in the last five minutes). A refusal says why, for the error page or error response.
   */
  async resolve(clientId: string): Promise<ClientDocOutcome> {
    const problem = urlProblem(clientId)
    if (problem) return { type: 'refused', message: `client_id ${clientId}: ${problem}.` }
    const now = this.clock.now()
    let entry = this.cache.get(clientId)
    if (!entry || entry.until <= now) {
      if (entry) this.cache.delete(clientId)
      while (this.cache.size >= CACHE_ENTRIES) {
        const oldest = this.cache.keys().next().value
        if (oldest === undefined) break
        this.cache.delete(oldest)
      }
      const client = this.fetchClient(clientId)
      const fresh = { until: now + CACHE_MS, client }
      // A failed fetch is not remembered: the next request tries again.
      client.catch(() => {
        if (this.cache.get(clientId) === fresh) this.cache.delete(clientId)
      })
      this.cache.set(clientId, fresh)
      entry = fresh
    }
    try {
      return { type: 'ok', client: await entry.client }
    } catch (error) {
      if (error instanceof Refused) return { type: 'refused', message: error.message }
      throw error
    }
  }

  private async fetchClient(clientId: string): Promise<ClientRow> {
    const body = await this.fetchDocument(clientId)
    let raw: unknown
    try {
      raw = JSON.parse(body)
    } catch {
      throw new Refused(`The client metadata document at ${clientId} is not JSON.`)
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      throw new Refused(`The client metadata document at ${clientId} is not a JSON object.`)
    }
    const doc = raw as Record<string, unknown>
    if (doc.client_id !== clientId) {
      throw new Refused(
        `The client metadata document at ${clientId} names another client_id (${String(doc.client_id)}); it must name its own URL.`,
      )
    }
    if ('client_secret' in doc || 'client_secret_expires_at' in doc) {
      throw new Refused(
        `The client metadata document at ${clientId} carries a client secret; such clients are public.`,
      )
    }
    const checked = checkClientMetadata(doc)
    if (checked.type === 'refused') {
      throw new Refused(`The client metadata document at ${clientId}: ${checked.message}.`)
    }
    return {
      id: clientId,
      name: checked.name || new URL(clientId).host,
      redirect_uris: checked.redirectUris,
    }
  }

  /** GETs the document once: no redirects, the address guard, a timeout and a size cap. */
  private fetchDocument(clientId: string): Promise<string> {
    const url = new URL(clientId)
    const unreachable = (why: string) =>
      new Refused(`The client metadata document at ${clientId} could not be fetched: ${why}.`)
    if (!this.allowPrivate) {
      const refused = refusedLiteral(url.hostname)
      if (refused) return Promise.reject(unreachable(guardMessage(refused)))
    }
    return new Promise<string>((resolve, reject) => {
      const req = httpsRequest({
        hostname: bareHost(url.hostname),
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: 'GET',
        agent: this.agent,
        headers: { accept: 'application/json', 'user-agent': 'Corkboard-OAuth/1' },
      })
      const timer = setTimeout(
        () => req.destroy(unreachable(`no answer within ${TIMEOUT_MS / 1000} s`)),
        TIMEOUT_MS,
      )
      req.on('error', (error) => {
        clearTimeout(timer)
        if (error instanceof Refused) return reject(error)
        const cause = (error as { cause?: unknown }).cause
        if (error instanceof AddressRefusedError) return reject(unreachable(guardMessage(error)))
        if (cause instanceof AddressRefusedError) return reject(unreachable(guardMessage(cause)))
        reject(unreachable(error.message))
      })
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          clearTimeout(timer)
          res.resume()
          // A 3xx is not followed: the document must be at the client_id itself.
          return reject(unreachable(`it answered ${res.statusCode} (redirects are not followed)`))
        }
        const declared = Number(res.headers['content-length'])
        if (declared > MAX_BYTES) {
          req.destroy(unreachable(`it is larger than ${MAX_BYTES / 1024} KB`))
          return
        }
        const chunks: Buffer[] = []
        let size = 0
        res.on('data', (chunk: Buffer) => {
          size += chunk.length
          if (size > MAX_BYTES) req.destroy(unreachable(`it is larger than ${MAX_BYTES / 1024} KB`))
          else chunks.push(chunk)
        })
        res.on('end', () => {
          clearTimeout(timer)
          resolve(Buffer.concat(chunks).toString('utf8'))
        })
        res.on('error', (error) => {
          clearTimeout(timer)
          reject(error instanceof Refused ? error : unreachable(error.message))
        })
      })
      req.end()
    })
  }
}

function guardMessage(error: AddressRefusedError): string {
  const where = error.host === error.address ? error.address : `${error.host} (${error.address})`
  return `${where} is ${error.why}; client metadata documents only come from public addresses unless OAUTH_ALLOW_PRIVATE_CLIENT_DOCS=1`
}
