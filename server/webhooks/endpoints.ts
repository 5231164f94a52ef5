import { randomUUID } from 'node:crypto'
import type { Db, Queryable } from '../../persistence/types.ts'
import {
  MAX_WEBHOOKS_PER_ORG,
  type RotateWebhookSecretResult,
  SECRET_ROTATION_OVERLAP_MS,
  type WEBHOOK_PING,
  type WebhookEventType,
} from '../../shared/schemas/webhooks.ts'
import { ApiError } from '../errors.ts'
import { newWebhookSecret } from './signature.ts'

/** Deliveries listed with each endpoint, newest first. */
export const RECENT_DELIVERIES = 10

export interface WebhookView {
  id: string
  url: string
  events: WebhookEventType[]
  enabled: boolean
  /** Why the endpoint switched itself off; null while enabled. */
  disabledReason: string | null
  disabledAt: string | null
  /** Events in a row whose delivery finally failed (5 switch the endpoint off). */
  consecutiveFailures: number
  createdAt: string
  /**
   * Until when deliveries are also signed with the secret the last rotation replaced; null
   * when it was never rotated. Once past, only the current secret signs.
   */
  previousSecretExpiresAt: string | null
}

export interface DeliveryView {
  id: string
  eventId: string
  /** The event's type, or `ping` for a test ping sent on request. */
  eventType: WebhookEventType | typeof WEBHOOK_PING
  /** pending (waiting or being sent), delivered, failed (retries exhausted), cancelled (endpoint switched off). */
  status: 'pending' | 'delivered' | 'failed' | 'cancelled'
  attempts: number
  createdAt: string
  lastAttemptAt: string | null
  /** When the next attempt is due (pending only). */
  nextAttemptAt: string | null
  finishedAt: string | null
  lastStatusCode: number | null
  lastError: string | null
  /**
   * The X-Request-Id of the request that raised the event (the agent's or app's call, or
   * the test ping's); null for events of people's live edits. Its log lines carry it too.
   */
  requestId: string | null
}

export interface AttemptView {
  attempt: number
  startedAt: string
  durationMs: number
  ok: boolean
  statusCode: number | null
  error: string | null
}

const iso = (d: unknown) => (d instanceof Date ? d.toISOString() : d == null ? null : String(d))
const isoOf = (d: unknown) => iso(d) ?? ''

type WebhookRow = {
  id: string
  url: string
  events: WebhookEventType[]
  enabled: boolean
  disabled_reason: string | null
  disabled_at: Date | null
  consecutive_failures: number
  created_at: Date
  previous_secret_expires_at: Date | null
}

const WEBHOOK_COLUMNS =
  'id, url, events, enabled, disabled_reason, disabled_at, consecutive_failures, created_at, previous_secret_expires_at'

function webhookView(r: WebhookRow): WebhookView {
  return {
    id: r.id,
    url: r.url,
    events: r.events,
    enabled: r.enabled,
    disabledReason: r.disabled_reason,
    disabledAt: iso(r.disabled_at),
    consecutiveFailures: r.consecutive_failures,
    createdAt: isoOf(r.created_at),
    previousSecretExpiresAt: iso(r.previous_secret_expires_at),
  }
}

type DeliveryRow = {
  id: string
  webhook_id: string
  event_id: string
  type: DeliveryView['eventType']
  status: DeliveryView['status']
  attempts: number
  created_at: Date
  last_attempt_at: Date | null
  next_attempt_at: Date
  finished_at: Date | null
  last_status_code: number | null
  last_error: string | null
  request_id: string | null
}

function deliveryView(r: DeliveryRow): DeliveryView {
  return {
    id: r.id,
    eventId: r.event_id,
    eventType: r.type,
    status: r.status,
    attempts: r.attempts,
    createdAt: isoOf(r.created_at),
    lastAttemptAt: iso(r.last_attempt_at),
    nextAttemptAt: r.status === 'pending' ? iso(r.next_attempt_at) : null,
    finishedAt: iso(r.finished_at),
    lastStatusCode: r.last_status_code,
    lastError: r.last_error,
    requestId: r.request_id,
  }
}

const DELIVERY_COLUMNS = `d.id, d.webhook_id, d.event_id, e.type, d.status, d.attempts, d.created_at,
  d.last_attempt_at, d.next_attempt_at, d.finished_at, d.last_status_code, d.last_error, e.request_id`

/** Registers an endpoint; its secret is returned here and never again. At most 20 per organisation. */
export async function createWebhook(
  db: Db,
  input: { orgId: string; url: string; events: WebhookEventType[]; createdBy: string },
): Promise<{ webhook: WebhookView; secret: string }> {
  const secret = newWebhookSecret()
  const row = await db.transaction(async (tx) => {
    // Serialises registrations per organisation so the cap holds under concurrent calls.
    await tx.query('select 1 from organizations where id = $1 for update', [input.orgId])
    const [count] = await tx.query<{ n: number }>(
      'select count(*)::int as n from webhooks where org_id = $1',
      [input.orgId],
    )
    if ((count?.n ?? 0) >= MAX_WEBHOOKS_PER_ORG) {
      throw new ApiError(
        400,
        `An organisation can register at most ${MAX_WEBHOOKS_PER_ORG} webhooks; delete one first`,
      )
    }
    const [created] = await tx.query<WebhookRow>(
      `insert into webhooks (id, org_id, url, events, secret, created_by)
       values ($1, $2, $3, $4, $5, $6) returning ${WEBHOOK_COLUMNS}`,
      [randomUUID(), input.orgId, input.url, input.events, secret, input.createdBy],
    )
    if (!created) throw new Error('webhook insert returned nothing')
    return created
  })
  return { webhook: webhookView(row), secret }
}

/** Every endpoint of the organisation, oldest first, each with its newest deliveries. */
export async function listWebhooks(
  db: Queryable,
  orgId: string,
): Promise<(WebhookView & { recentDeliveries: DeliveryView[] })[]> {
  const [hooks, deliveries] = await Promise.all([
    db.query<WebhookRow>(
      `select ${WEBHOOK_COLUMNS} from webhooks where org_id = $1 order by created_at, id`,
      [orgId],
    ),
    db.query<DeliveryRow>(
      `select ${DELIVERY_COLUMNS}
       from webhooks w
       cross join lateral (
         select * from webhook_deliveries d0
         where d0.webhook_id = w.id
         order by d0.created_at desc, d0.id
         limit $2
       ) d
       join webhook_events e on e.id = d.event_id
       where w.org_id = $1
       order by d.created_at desc, d.id`,
      [orgId, RECENT_DELIVERIES],
    ),
  ])
  return hooks.map((h) => ({
    ...webhookView(h),
    recentDeliveries: deliveries.filter((d) => d.webhook_id === h.id).map(deliveryView),
  }))
}

/** Deletes an endpoint with its pending deliveries and history; false when there is none. */
export async function deleteWebhook(db: Db, orgId: string, id: string): Promise<boolean> {
  return db.transaction(async (tx) => {
    const gone = await tx.query('delete from webhooks where id = $1 and org_id = $2 returning id', [
      id,
      orgId,
    ])
    if (gone.length === 0) return false
    await tx.query('delete from webhook_deliveries where webhook_id = $1', [id])
    return true
  })
}

/**
 * Gives the endpoint a new secret. The one it replaces keeps signing deliveries beside it
 * for {@link SECRET_ROTATION_OVERLAP_MS} from `now`; a previous secret still in its window
 * is dropped at once (only two secrets are ever valid). Not idempotent; undefined when the
 * organisation has no such endpoint.
 */
export async function rotateWebhookSecret(
  db: Queryable,
  orgId: string,
  id: string,
  now: number,
): Promise<RotateWebhookSecretResult | undefined> {
  const secret = newWebhookSecret()
  const expiresAt = new Date(now + SECRET_ROTATION_OVERLAP_MS)
  // One statement, so concurrent rotations chain under the row lock: the later one moves
  // the earlier one's new secret (the committed row) to previous_secret.
  const [row] = await db.query<{ id: string }>(
    `update webhooks set previous_secret = secret, previous_secret_expires_at = $3, secret = $4
     where id = $1 and org_id = $2 returning id`,
    [id, orgId, expiresAt, secret],
  )
  return row ? { secret, previousSecretExpiresAt: expiresAt.toISOString() } : undefined
}

/**
 * Switches an endpoint back on and clears its failure count and reason; idempotent.
 * Deliveries cancelled when it switched off stay cancelled (get_changes fills the gap).
 */
export async function enableWebhook(
  db: Queryable,
  orgId: string,
  id: string,
): Promise<WebhookView | undefined> {
  const [row] = await db.query<WebhookRow>(
    `update webhooks set enabled = true, disabled_reason = null, disabled_at = null,
       consecutive_failures = 0
     where id = $1 and org_id = $2 returning ${WEBHOOK_COLUMNS}`,
    [id, orgId],
  )
  return row ? webhookView(row) : undefined
}

/** One delivery with every attempt made so far. */
export async function deliveryDetail(
  db: Queryable,
  orgId: string,
  webhookId: string,
  deliveryId: string,
): Promise<{ delivery: DeliveryView; attempts: AttemptView[] } | undefined> {
  const [row] = await db.query<DeliveryRow>(
    `select ${DELIVERY_COLUMNS} from webhook_deliveries d
     join webhook_events e on e.id = d.event_id
     where d.id = $1 and d.webhook_id = $2 and d.org_id = $3`,
    [deliveryId, webhookId, orgId],
  )
  if (!row) return undefined
  const attempts = await db.query<{
    attempt: number
    started_at: Date
    duration_ms: number
    ok: boolean
    status_code: number | null
    error: string | null
  }>(
    `select attempt, started_at, duration_ms, ok, status_code, error
     from webhook_attempts where delivery_id = $1 order by attempt, id`,
    [deliveryId],
  )
  return {
    delivery: deliveryView(row),
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      startedAt: isoOf(a.started_at),
      durationMs: a.duration_ms,
      ok: a.ok,
      statusCode: a.status_code,
      error: a.error,
    })),
  }
}
