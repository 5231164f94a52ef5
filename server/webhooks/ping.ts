import { randomUUID } from 'node:crypto'
import type { Db } from '../../persistence/types.ts'
import {
  WEBHOOK_PING,
  type WebhookActor,
  type WebhookPingPayload,
  type WebhookTestResult,
} from '../../shared/schemas/webhooks.ts'
import type { Clock } from '../clock.ts'
import { currentRequest } from '../http/request-context.ts'
import { Sender } from './sender.ts'
import { signatureHeaders, validSecrets } from './signature.ts'

/**
 * Sends a signed `ping` to an endpoint at once and answers how that one attempt went.
 *
 * It is signed and guarded exactly like a delivery of an event (the same secrets, the same
 * address guard at connect time, the same reply window, no redirects), but it never enters
 * the outbox: nothing retries it, and its outcome never touches the endpoint's failure
 * count, so testing a broken receiver cannot switch the endpoint off (nor a good one switch
 * it back on). It is written to the endpoint's delivery log, already finished, with its one
 * attempt. A switched-off endpoint is pinged too: that is how one checks a receiver before
 * re-enabling it. Undefined when the organisation has no such endpoint.
 */
export async function pingWebhook(
  db: Db,
  input: {
    orgId: string
    webhookId: string
    actor: WebhookActor
    clock: Clock
    allowPrivate: boolean
    timeoutMs: number
  },
): Promise<WebhookTestResult | undefined> {
  const now = input.clock.now()
  const [hook] = await db.query<{ url: string; secret: string; previous_secret: string | null }>(
    `select url, secret,
       case when previous_secret_expires_at > $3 then previous_secret end as previous_secret
     from webhooks where id = $1 and org_id = $2`,
    [input.webhookId, input.orgId, new Date(now)],
  )
  if (!hook) return undefined
  const eventId = randomUUID()
  const deliveryId = randomUUID()
  const createdAt = new Date(now)
  const ping: WebhookPingPayload = {
    id: eventId,
    type: WEBHOOK_PING,
    createdAt: createdAt.toISOString(),
    organizationId: input.orgId,
    actor: input.actor,
    data: { webhookId: input.webhookId },
  }
  const payload = JSON.stringify(ping)
  // A sender of its own (one connection, closed after): a ping must not wait behind the
  // worker's deliveries, and the worker's keep-alive pool is not this request's to hold.
  const sender = new Sender({
    allowPrivate: input.allowPrivate,
    timeoutMs: input.timeoutMs,
    maxSockets: 1,
  })
  const result = await sender
    .send(
      hook.url,
      payload,
      signatureHeaders(
        validSecrets(hook.secret, hook.previous_secret),
        deliveryId,
        Math.floor(now / 1000),
        payload,
      ),
    )
    .finally(() => sender.close())
  const finishedAt = new Date(input.clock.now())
  await db.transaction(async (tx) => {
    // The endpoint may have been deleted while the ping was under way: then log nothing.
    const [still] = await tx.query('select 1 from webhooks where id = $1 for share', [
      input.webhookId,
    ])
    if (!still) return
    await tx.query(
      `insert into webhook_events (id, org_id, type, payload, created_at, request_id)
       values ($1, $2, $3, $4, $5, $6)`,
      [eventId, input.orgId, WEBHOOK_PING, payload, createdAt, currentRequest()?.id ?? null],
    )
    await tx.query(
      `insert into webhook_deliveries (id, webhook_id, event_id, org_id, status, attempts,
         next_attempt_at, last_attempt_at, last_status_code, last_error, created_at, finished_at)
       values ($1, $2, $3, $4, $5, 1, $6, $6, $7, $8, $6, $9)`,
      [
        deliveryId,
        input.webhookId,
        eventId,
        input.orgId,
        result.ok ? 'delivered' : 'failed',
        createdAt,
        result.statusCode,
        result.error,
        finishedAt,
      ],
    )
    await tx.query(
      `insert into webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, ok)
       values ($1, 1, $2, $3, $4, $5, $6)`,
      [deliveryId, createdAt, result.durationMs, result.statusCode, result.error, result.ok],
    )
  })
  return {
    delivered: result.ok,
    status: result.statusCode,
    durationMs: result.durationMs,
    error: result.error,
  }
}
