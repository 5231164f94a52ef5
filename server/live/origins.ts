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

/**
 * A write's events ready to travel as parameters of its record statement (record_writes):
 * each with its id and exact payload.
 */
export interface StagedEvents {
  rows: { id: string; type: EventType; payload: string }[]
  createdAt: Date
}

/** Stores writes' events in the outbox, inside their transaction; the webhooks module provides it. */
export interface EventSink {
  /**
   * The events as parameters for the write's one record statement, or undefined when they
   * are too many to ship whole (most organisations subscribe to nothing): then `store`.
   */
  stage(origin: WriteOrigin, events: readonly DomainEvent[]): StagedEvents | undefined
  /** Stores the events with statements of their own on `tx`, settled before it resolves. */
  store(
    tx: import('../../persistence/types.ts').Queryable,
    origin: WriteOrigin,
    events: readonly DomainEvent[],
  ): Promise<void>
  /** Told the ids of deliveries a record statement queued (once they committed). */
  stored(deliveryIds: readonly string[]): void
}
