import { z } from 'zod'
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from '../constants.ts'
import type { Comment, Task } from '../records.ts'

export { WEBHOOK_EVENT_TYPES, type WebhookEventType }

/** Webhooks an organisation may register (each write fans out to every one). */
export const MAX_WEBHOOKS_PER_ORG = 20
export const WEBHOOK_URL_MAX = 2000

const EVENT_LIST = WEBHOOK_EVENT_TYPES.join(', ')

/**
 * A receiving address: absolute http(s), no user name or password (the signature is the
 * authentication), normalised by the URL parser with any `#fragment` dropped (it is never
 * sent). Whether its host is a public address is checked by the server, at registration
 * for literal addresses and again on the resolved address at every connection.
 */
export const webhookUrl = z
  .string({
    error: (i) => (i.input === undefined ? 'url is required' : 'url must be a string'),
  })
  .trim()
  .max(WEBHOOK_URL_MAX, { error: `url must be at most ${WEBHOOK_URL_MAX} characters` })
  .transform((raw, ctx) => {
    let parsed: URL
    try {
      parsed = new URL(raw)
    } catch {
      ctx.addIssue({
        code: 'custom',
        message: 'url must be an absolute http:// or https:// address',
      })
      return z.NEVER
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      ctx.addIssue({
        code: 'custom',
        message: `url must use http or https, not ${parsed.protocol.slice(0, -1)}`,
      })
      return z.NEVER
    }
    if (parsed.username || parsed.password) {
      ctx.addIssue({
        code: 'custom',
        message:
          'url must not contain a user name or password; verify deliveries by their signature',
      })
      return z.NEVER
    }
    if (!parsed.hostname) {
      ctx.addIssue({ code: 'custom', message: 'url must name a host' })
      return z.NEVER
    }
    parsed.hash = ''
    return parsed.href
  })

/** A non-empty set of event types; duplicates are folded, order is kept. */
export const webhookEvents = z
  .array(
    z.enum(WEBHOOK_EVENT_TYPES, {
      error: `each entry of events must be one of ${EVENT_LIST}`,
    }),
    {
      error: (i) =>
        i.input === undefined
          ? `events is required: an array of one or more of ${EVENT_LIST}`
          : `events must be an array of one or more of ${EVENT_LIST}`,
    },
  )
  .min(1, { error: `events must name at least one of ${EVENT_LIST}` })
  .transform((list) => [...new Set(list)])

/**
 * `POST /api/app/orgs/:orgId/webhooks` (owner or admin): registers an address for the
 * chosen events. Not idempotent: each call registers a new endpoint with a new secret.
 */
export const createWebhook = z.strictObject({ url: webhookUrl, events: webhookEvents })

/**
 * How long the secret a rotation replaces keeps signing deliveries beside the new one, so
 * a receiver can switch over without losing a delivery.
 */
export const SECRET_ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000

/**
 * The answer of `POST /api/app/orgs/:orgId/webhooks/:webhookId/rotate-secret` (owner or
 * admin). Not idempotent: every call makes a new secret. Until `previousSecretExpiresAt`
 * every delivery is signed with both `secret` and the secret it replaced; a second rotation
 * within that window replaces that previous secret with the one being rotated out.
 */
export const rotateWebhookSecretResult = z.strictObject({
  /** The new secret (`whsec_` + base64 of 32 random bytes), shown here only. */
  secret: z.string().startsWith('whsec_'),
  /** When deliveries stop carrying a signature made with the replaced secret (ISO 8601 UTC). */
  previousSecretExpiresAt: z.iso.datetime(),
})
export type RotateWebhookSecretResult = z.infer<typeof rotateWebhookSecretResult>

/** The event type of a test ping; no endpoint subscribes to it, it is sent on request only. */
export const WEBHOOK_PING = 'ping'

/**
 * The answer of `POST /api/app/orgs/:orgId/webhooks/:webhookId/test` (owner or admin): how
 * the one attempt at delivering a signed `ping` went. A failure is an answer too, never an
 * error status, and never counts toward switching the endpoint off.
 */
export const webhookTestResult = z.strictObject({
  /** The receiver answered 2xx within the reply window. */
  delivered: z.boolean(),
  /** The receiver's HTTP status; null when it did not answer. */
  status: z.int().min(100).max(599).nullable(),
  durationMs: z.int().nonnegative(),
  /** Why it failed, in words; null when delivered. */
  error: z.string().nullable(),
})
export type WebhookTestResult = z.infer<typeof webhookTestResult>

/** Who made the change an event announces. */
export type WebhookActor =
  | {
      type: 'agent'
      /** The key's robot account, the `createdByEmail`/`authorEmail` of what it writes. */
      email: string
      keyId: string
      /** Identity the agent sent with the write; null when it sent none. */
      agentName: string | null
      house: string | null
      generation: number | null
      isSubChild: boolean
      /** The board's display label for this identity. */
      label: string
    }
  | { type: 'person'; email: string; userId: string }
  | { type: 'server' }

/** `data` of each event type. */
export interface WebhookEventData {
  'card.created': { taskId: string; task: Task }
  'card.moved': {
    taskId: string
    task: Task
    fromColumnId: string
    toColumnId: string
    /** Title of the destination column at the time of the move. */
    toColumnTitle: string
  }
  /** The card's last open blocker closed (not the first of two): it can be worked on now. */
  'card.unblocked': { taskId: string; task: Task }
  'comment.added': {
    commentId: string
    comment: Comment
    taskId: string
    /** True when the comment carried no agentName (a person's, for attribution only). */
    authorIsHuman: boolean
  }
}

/** The JSON body of a test ping. */
export interface WebhookPingPayload {
  id: string
  type: typeof WEBHOOK_PING
  createdAt: string
  organizationId: string
  /** The person who asked for the ping. */
  actor: WebhookActor
  data: { webhookId: string }
}

/** The JSON body of every delivery of an event; the same bytes on every retry. */
export type WebhookPayload = {
  [T in WebhookEventType]: {
    /** Event id: the same in the deliveries of this event to every endpoint. */
    id: string
    type: T
    /** When the change committed (ISO 8601 UTC). */
    createdAt: string
    organizationId: string
    actor: WebhookActor
    data: WebhookEventData[T]
  }
}[WebhookEventType]
