import type { Queryable } from '../../persistence/types.ts'
import type { WebhookEventType } from '../../shared/schemas/webhooks.ts'
import type { WriteOrigin } from './origins.ts'

/** What a change-log row is about (get_changes reads one stream per kind). */
export type ChangeKind = 'task' | 'column' | 'comment' | 'attachment' | 'claim'

/**
 * Something a write did that webhooks announce. Recorded in the write's own transaction
 * (the outbox), so an event exists exactly when its change committed.
 */
export interface DomainEvent {
  type: WebhookEventType
  data: Record<string, unknown>
}

/**
 * A write's events ready to travel as parameters of its record statement (record_writes):
 * each with its id and exact payload.
 */
export interface StagedEvents {
  rows: { id: string; type: WebhookEventType; payload: string }[]
  createdAt: Date
  /** The X-Request-Id of the request that raised them, stored with each. */
  requestId?: string | undefined
}

/** Stores writes' events in the outbox, inside their transaction; the webhooks module provides it. */
export interface EventSink {
  /**
   * The events as parameters for the write's one record statement, or undefined when they
   * are too many to ship whole (most organisations subscribe to nothing): then `store`.
   */
  stage(
    origin: WriteOrigin,
    events: readonly DomainEvent[],
    requestId: string | undefined,
  ): StagedEvents | undefined
  /** Stores the events with statements of their own on `tx`, settled before it resolves. */
  store(
    tx: Queryable,
    origin: WriteOrigin,
    events: readonly DomainEvent[],
    requestId: string | undefined,
  ): Promise<void>
  /** Told the ids of deliveries a record statement queued (once they committed). */
  stored(deliveryIds: readonly string[]): void
}
