import { Agent, type IncomingMessage, request, type ServerResponse } from 'node:http'
import type { Db } from '../../../persistence/types.ts'
import { actions, isActionName } from '../../../shared/actions.ts'
import { ApiError } from '../../errors.ts'
import type { Logger } from '../../http/json.ts'
import { currentRequest } from '../../http/request-context.ts'
import type { OrgOwners, Serving } from '../../live/owners.ts'
import type { Metrics } from '../../metrics/metrics.ts'

/**
 * Passes an agent call to the process that serves its organisation (live/owners.ts), when
 * that is another one: the call is authenticated, charged and computed there, and its
 * answer (status, headers, body) comes back as it was sent. A call that header marks as
 * passed on already is always served where it arrives.
 */
export const FORWARDED_HEADER = 'x-corkboard-forwarded'

/** Headers of one hop only (RFC 9110 7.6.1), never passed on. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
  'expect',
])

/** Errors that say the connection was never made: nothing was sent, so it is served here. */
const NOT_SENT = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])

/** How many key ids' organisations are remembered (a key never changes organisation). */
const KEYS_KEPT = 10_000
/** How long the serving process may take to answer before the call fails (ms). */
const ANSWER_TIMEOUT_MS = 60_000

/**
 * What became of a call passed on: answered by the serving process; refused (the connection
 * was never made: that process is gone); or lost (it stopped answering, and the call is a
 * read or carries an Idempotency-Key, so it is served here).
 */
export type Outcome = 'forwarded' | 'refused' | 'lost'

export class AgentForwarding {
  private readonly db: Db
  private readonly owners: OrgOwners
  private readonly log: Logger
  private readonly metrics: Metrics | undefined
  private readonly orgOfKey = new Map<string, string>()
  /**
   * Kept-alive connections to the serving processes: fewer than a process lets one address
   * open (MAX_CONNECTIONS_PER_ADDRESS, 256), and calls beyond them wait their turn.
   */
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 64 })

  constructor(options: { db: Db; owners: OrgOwners; log: Logger; metrics?: Metrics | undefined }) {
    this.db = options.db
    this.owners = options.owners
    this.log = options.log
    this.metrics = options.metrics
  }

  /**
   * Sends the call to the process serving the key's organisation and relays its answer;
   * false when it is to be served here (this process serves it, the key is unknown, the
   * call was passed on already, or the serving process could not be reached).
   */
  async forward(
    req: IncomingMessage,
    res: ServerResponse,
    keyId: string,
    body: Buffer,
  ): Promise<boolean> {
    const orgId = await this.orgOf(keyId)
    if (orgId === undefined) return false
    // Asked for a call passed on too: that keeps the serving process's lease renewed.
    const serving: Serving = await this.owners.serving(orgId)
    if (serving.here || req.headers[FORWARDED_HEADER] !== undefined) return false
    const outcome = await this.relay(req, res, serving.url, body).catch((error: unknown) => {
      this.metrics?.agentForwarded.inc({ outcome: 'failed' })
      this.owners.forget(orgId)
      throw error
    })
    this.metrics?.agentForwarded.inc({ outcome })
    // It stopped answering: the next call asks Redis again (and is refused if it is gone).
    if (outcome === 'lost') this.owners.forget(orgId)
    if (outcome === 'refused') {
      this.log.warn(
        `the process serving organisation ${orgId} (${serving.url}) refused the connection: its lease is dropped and its calls served here`,
      )
      await this.owners.unreachable(orgId, serving.holder)
    }
    return outcome === 'forwarded'
  }

  /** The organisation of a key id (revoked keys included: the serving process refuses them). */
  private async orgOf(keyId: string): Promise<string | undefined> {
    const known = this.orgOfKey.get(keyId)
    if (known !== undefined) return known
    const [row] = await this.db.query<{ org_id: string }>(
      'select org_id from api_keys where id = $1',
      [keyId],
    )
    if (!row) return undefined
    if (this.orgOfKey.size >= KEYS_KEPT) this.orgOfKey.clear()
    this.orgOfKey.set(keyId, row.org_id)
    return row.org_id
  }

  private relay(
    req: IncomingMessage,
    res: ServerResponse,
    url: string,
    body: Buffer,
  ): Promise<Outcome> {
    const headers: Record<string, string | string[]> = {}
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !HOP_BY_HOP.has(name) && name !== 'content-length') {
        headers[name] = value
      }
    }
    headers['content-length'] = String(body.length)
    headers[FORWARDED_HEADER] = '1'
    const id = currentRequest()?.id
    if (id) headers['x-request-id'] = id
    return new Promise<Outcome>((resolve, reject) => {
      let answered = false
      const out = request(
        new URL('/api/agent', url),
        { method: 'POST', headers, agent: this.agent, timeout: ANSWER_TIMEOUT_MS },
        (answer) => {
          answered = true
          const relayed: Record<string, string | string[]> = {}
          for (const [name, value] of Object.entries(answer.headers)) {
            if (value !== undefined && !HOP_BY_HOP.has(name) && name !== 'x-request-id') {
              relayed[name] = value
            }
          }
          res.writeHead(answer.statusCode ?? 502, relayed)
          answer.pipe(res)
          answer.once('end', () => resolve('forwarded'))
          answer.once('error', (error) => {
            res.destroy(error)
            resolve('forwarded')
          })
        },
      )
      out.once('timeout', () => out.destroy(new Error('no answer in time')))
      out.once('error', (error: NodeJS.ErrnoException) => {
        if (answered) return
        if (error.code !== undefined && NOT_SENT.has(error.code)) {
          resolve('refused')
          return
        }
        // It may have been computed: a read or a call with an Idempotency-Key is safe to
        // serve here; any other write is not, and the caller is told so (502: unlike a 503,
        // it does not promise that nothing was written).
        if (isRepeatable(req, body)) {
          resolve('lost')
          return
        }
        reject(
          new ApiError(
            502,
            "The service process computing this organisation's calls stopped answering while it had this write: it may or may not have been made. Read before sending it again, and send writes with an Idempotency-Key to make retries safe.",
          ),
        )
      })
      out.end(body)
    })
  }

  close(): void {
    this.agent.destroy()
  }
}

/** A read, or a write carrying an Idempotency-Key: computing it twice changes nothing. */
function isRepeatable(req: IncomingMessage, body: Buffer): boolean {
  if (req.headers['idempotency-key'] !== undefined) return true
  try {
    const action = (JSON.parse(body.toString('utf8')) as { action?: unknown }).action
    return typeof action === 'string' && isActionName(action) && !actions[action].write
  } catch {
    return true
  }
}
