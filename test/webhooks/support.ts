import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Config } from '../../server/config.ts'
import type { WebhookOptions } from '../../server/webhooks/webhooks.ts'
import type { WebhookEventType } from '../../shared/schemas/webhooks.ts'
import { type Agent, Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import type { StorageKind } from '../support/storage.ts'

export const ALL_EVENTS: WebhookEventType[] = ['card.created', 'card.moved', 'comment.added']

/** One request as the receiver saw it. */
export interface Received {
  path: string
  headers: Record<string, string>
  body: string
  json: any
  /** performance.now() when the body had fully arrived. */
  at: number
  /** What the receiver answered, once it has. */
  status?: number
}

/** What the receiver answers: a status (possibly later), or 'hang' to never answer. */
export type Respond = (request: Received, index: number) => number | 'hang' | Promise<number>

/** A real HTTP server on loopback that records every request and answers as told. */
export class Receiver {
  readonly received: Received[] = []
  respond: Respond
  url = ''
  private readonly server: Server
  private waiters: (() => void)[] = []

  private constructor(respond: Respond) {
    this.respond = respond
    this.server = createServer((req, res) => void this.handle(req, res))
  }

  static async start(respond: Respond = () => 200): Promise<Receiver> {
    const r = new Receiver(respond)
    await new Promise<void>((resolve) => r.server.listen(0, '127.0.0.1', () => resolve()))
    r.url = `http://127.0.0.1:${(r.server.address() as AddressInfo).port}`
    return r
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const body = Buffer.concat(chunks).toString('utf8')
    const headers: Record<string, string> = {}
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers[k] = v
    let json: unknown
    try {
      json = body ? JSON.parse(body) : undefined
    } catch {
      json = undefined
    }
    const r: Received = { path: req.url ?? '/', headers, body, json, at: performance.now() }
    const index = this.received.length
    this.received.push(r)
    const answer = this.respond(r, index)
    for (const w of this.waiters.splice(0)) w()
    if (answer === 'hang') return
    const status = await answer
    r.status = status
    if (status >= 300 && status < 400) {
      res.writeHead(status, { location: `${this.url}/redirected` })
      res.end()
      return
    }
    res.writeHead(status, { 'content-type': 'text/plain' })
    res.end(status < 300 ? 'ok' : 'nope')
  }

  /** Resolves with the requests so far once `check` holds for them. */
  async waitFor(check: (all: Received[]) => boolean, ms = 10_000): Promise<Received[]> {
    const deadline = Date.now() + ms
    while (!check(this.received)) {
      const left = deadline - Date.now()
      if (left <= 0)
        throw new Error(`receiver: condition not met (${this.received.length} requests)`)
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200))
        this.waiters.push(() => {
          clearTimeout(t)
          resolve()
        })
      })
    }
    return this.received
  }

  /** Requests carrying an event of this type. */
  ofType(type: WebhookEventType): Received[] {
    return this.received.filter((r) => r.json?.type === type)
  }

  async close(): Promise<void> {
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

/** A clock the test moves by hand. */
export class FakeClock {
  t: number
  constructor(start = Date.now()) {
    this.t = start
  }
  now(): number {
    return this.t
  }
  advance(ms: number): void {
    this.t += ms
  }
  set(ms: number): void {
    this.t = ms
  }
}

/** startServer with the webhook seams (clock, timing, hooks), private addresses allowed: the receivers are on loopback. */
export function startWebhookServer(
  kind: StorageKind,
  webhooks: WebhookOptions = {},
  overrides: Partial<Config> = {},
): Promise<TestServer> {
  return startServer(kind, { webhookAllowPrivate: true, ...overrides }, { webhooks })
}

/** Registers a webhook as `person`, insisting on 201. */
export async function register(
  person: Person,
  url: string,
  events: WebhookEventType[] = ALL_EVENTS,
): Promise<{ id: string; secret: string }> {
  const res = await person.request('POST', `/api/app/orgs/${person.orgId}/webhooks`, {
    url,
    events,
  })
  if (res.status !== 201) throw new Error(`register → ${res.status} ${JSON.stringify(res.body)}`)
  return { id: res.body.webhook.id, secret: res.body.secret }
}

/** The id of the board's first column. */
export async function firstColumn(agent: Agent): Promise<string> {
  const { columns } = await agent.ok('list_columns')
  return columns[0].id
}

/** The webhook as the app API lists it. */
export async function listed(person: Person, webhookId: string): Promise<any> {
  const res = await person.request('GET', `/api/app/orgs/${person.orgId}/webhooks`)
  if (res.status !== 200) throw new Error(`list → ${res.status}`)
  return res.body.webhooks.find((w: { id: string }) => w.id === webhookId)
}

/** The endpoint's delivery rows, oldest first. */
export function deliveryRows(server: TestServer, webhookId: string) {
  return server.storage.db.query<{
    id: string
    status: string
    attempts: number
    next_attempt_at: Date
    last_error: string | null
    last_status_code: number | null
    locked_by: string | null
  }>(
    'select id, status, attempts, next_attempt_at, last_error, last_status_code, locked_by from webhook_deliveries where webhook_id = $1 order by created_at, id',
    [webhookId],
  )
}

/** Polls an async `check` until it returns something other than undefined, or fails after `ms`. */
export async function eventually<T>(check: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await check()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** A person invited into `owner`'s organisation with `role`, signed in. */
export async function invited(owner: Person, role: 'admin' | 'member'): Promise<Person> {
  const email = `${role}-${randomBytes(4).toString('hex')}@example.test`
  const invite = await owner.request('POST', `/api/app/orgs/${owner.orgId}/invites`, {
    email,
    role,
  })
  if (invite.status !== 201) throw new Error(`invite → ${invite.status}`)
  const p = new Person(owner.url)
  await p.signUp({ email })
  const accepted = await p.request('POST', `/api/app/invites/${invite.body.invite.token}/accept`)
  if (accepted.status !== 200) throw new Error(`accept → ${accepted.status}`)
  p.orgId = owner.orgId
  return p
}

const same = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/**
 * Whether a delivery verifies with `secret`, checked as docs/webhooks.md tells a receiver
 * to (timestamps aside: tests that move the clock check those themselves), in each scheme:
 * accept when ANY of the space-separated signatures matches.
 * - `webhook-signature`: `v1,<base64 HMAC-SHA256>` keyed with the base64-decoded part
 *   after `whsec_`, over `<webhook-id>.<webhook-timestamp>.<body>`;
 * - `X-Service-Signature`: `v1=<hex HMAC-SHA256>` keyed with the whole secret string, over
 *   `<X-Service-Timestamp>.<body>`.
 */
export function verifiesWith(secret: string, r: Received): { standard: boolean; service: boolean } {
  const h = r.headers
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  const standard = `v1,${createHmac('sha256', key)
    .update(`${h['webhook-id']}.${h['webhook-timestamp']}.${r.body}`)
    .digest('base64')}`
  const service = `v1=${createHmac('sha256', secret)
    .update(`${h['x-service-timestamp']}.${r.body}`)
    .digest('hex')}`
  return {
    standard: (h['webhook-signature'] ?? '').split(' ').some((s) => same(s, standard)),
    service: (h['x-service-signature'] ?? '').split(' ').some((s) => same(s, service)),
  }
}
