import type { AgentIdentity } from '../../shared/labels.ts'
import type { WebhookEventType } from '../../shared/schemas/webhooks.ts'

/**
 * Who a server-side document write is made for. Persistence, the change log, claim checks
 * and (later) webhooks read this; nobody guesses from the update bytes.
 */
export type WriteOrigin =
  | {
      type: 'agent'
      orgId: string
      keyId: string
      email: string
      identity: AgentIdentity
    }
  | { type: 'person'; orgId: string; userId: string; email: string }
  | { type: 'server'; orgId: string }

export const CHANGE_KINDS = ['task', 'column', 'comment', 'attachment', 'claim'] as const
export type ChangeKind = (typeof CHANGE_KINDS)[number]

/** Marks transactions on a live document that the server itself applied. */
export interface ServerTransactionOrigin {
  source: 'local'
  skipStoreHooks: true
  context: { write: WriteOrigin }
}

/** The webhook event types; one list, in shared/ so the app API's schema uses it too. */
export { WEBHOOK_EVENT_TYPES as EVENT_TYPES } from '../../shared/schemas/webhooks.ts'
export type EventType = WebhookEventType

/**
 * Something a write did that webhooks announce. Recorded in the write's own transaction
 * (the outbox), so an event exists exactly when its change committed.
 */
export interface DomainEvent {
  type: EventType
  data: Record<string, unknown>
}

/** Stores a write's events inside its transaction; the webhooks module provides it. */
export type EventSink = (
  tx: import('../../persistence/db.ts').Queryable,
  origin: WriteOrigin,
  events: readonly DomainEvent[],
) => Promise<void>
