import { randomUUID } from 'node:crypto'
import type { Queryable } from '../../persistence/types.ts'
import { holderLabel } from '../../shared/labels.ts'
import type { WebhookActor } from '../../shared/schemas/webhooks.ts'
import type { Clock } from '../clock.ts'
import type { DomainEvent, EventSink } from '../live/events.ts'
import type { WriteOrigin } from '../live/origins.ts'

/** Rows per INSERT: far below Postgres's 65,535 parameters even for a column of cards. */
const CHUNK = 500

/** Who the payload names as having made the change. */
export function actorOf(origin: WriteOrigin): WebhookActor {
  switch (origin.type) {
    case 'agent':
      return {
        type: 'agent',
        email: origin.email,
        keyId: origin.keyId,
        agentName: origin.identity.agentName ?? null,
        house: origin.identity.house ?? null,
        generation: origin.identity.generation ?? null,
        isSubChild: origin.identity.isSubChild ?? false,
        label: holderLabel(origin.identity),
      }
    case 'person':
      return { type: 'person', email: origin.email, userId: origin.userId }
    case 'server':
      return { type: 'server' }
    default: {
      const never: never = origin
      throw new Error(`unknown write origin ${JSON.stringify(never)}`)
    }
  }
}

/**
 * The event's `data` as delivered: whatever the writer recorded, plus the ids receivers
 * can always rely on (`taskId` on card events, `commentId` on comment.added), whichever
 * writer (agent endpoint, app API, live edit) raised it.
 */
export function payloadData(event: DomainEvent): Record<string, unknown> {
  const d = event.data
  const idOf = (record: unknown) =>
    typeof record === 'object' && record !== null && 'id' in record ? record.id : undefined
  switch (event.type) {
    case 'card.created':
    case 'card.moved':
    case 'card.unblocked':
      return { taskId: d.taskId ?? idOf(d.task), ...d }
    case 'comment.added':
      return { commentId: d.commentId ?? idOf(d.comment), ...d }
    default: {
      const never: never = event.type
      throw new Error(`unknown event type ${String(never)}`)
    }
  }
}

async function insertChunked(
  tx: Queryable,
  head: string,
  width: number,
  rows: readonly unknown[][],
): Promise<void> {
  for (let start = 0; start < rows.length; start += CHUNK) {
    const slice = rows.slice(start, start + CHUNK)
    const params: unknown[] = []
    const values = slice.map((row) => {
      const at = params.length
      params.push(...row)
      return `(${Array.from({ length: width }, (_, i) => `$${at + i + 1}`).join(', ')})`
    })
    await tx.query(`${head} values ${values.join(', ')}`, params)
  }
}

/** Up to this many events travel whole as parameters of the write's record statement. */
const STAGED_EVENTS = 50

/**
 * The transactional outbox: inside a write's transaction, each event is stored once (its
 * exact payload) with one delivery per enabled endpoint subscribed to its type. The rows
 * commit with the change or not at all. `enqueued` receives the new delivery ids (to wake
 * this process's worker); it runs before the commit, so it must not assume the rows are
 * visible yet.
 *
 * A write with a few events (create_task, move_task, add_comment) ships them as
 * parameters of its one record statement, which both finds the subscribed endpoints and
 * inserts the rows (record_writes): no round trip of their own. A write with many
 * (delete_column moving a column of cards) first asks which endpoints subscribe, so an
 * organisation without webhooks never ships a payload per card.
 */
export function outboxSink(options: {
  clock: Clock
  enqueued: (deliveryIds: readonly string[]) => void
}): EventSink {
  const payloads = (origin: WriteOrigin, events: readonly DomainEvent[], createdAt: Date) => {
    const actor = actorOf(origin)
    return events.map((event) => {
      const id = randomUUID()
      const payload = JSON.stringify({
        id,
        type: event.type,
        createdAt: createdAt.toISOString(),
        organizationId: origin.orgId,
        actor,
        data: payloadData(event),
      })
      return { id, type: event.type, payload }
    })
  }

  const stage = (
    origin: WriteOrigin,
    events: readonly DomainEvent[],
    requestId: string | undefined,
  ) => {
    if (events.length > STAGED_EVENTS) return undefined
    const createdAt = new Date(options.clock.now())
    return { rows: payloads(origin, events, createdAt), createdAt, requestId }
  }

  const store = async (
    tx: Queryable,
    origin: WriteOrigin,
    events: readonly DomainEvent[],
    requestId: string | undefined,
  ) => {
    if (events.length === 0) return
    const hooks = await tx.query<{ id: string; events: string[] }>(
      'select id, events from webhooks where org_id = $1 and enabled',
      [origin.orgId],
    )
    const subscribed = events.filter((e) => hooks.some((h) => h.events.includes(e.type)))
    if (subscribed.length === 0) return
    const createdAt = new Date(options.clock.now())
    const eventRows: unknown[][] = []
    const deliveryRows: unknown[][] = []
    for (const e of payloads(origin, subscribed, createdAt)) {
      eventRows.push([e.id, origin.orgId, e.type, e.payload, createdAt, requestId ?? null])
      for (const hook of hooks.filter((h) => h.events.includes(e.type))) {
        deliveryRows.push([randomUUID(), hook.id, e.id, origin.orgId, createdAt, createdAt])
      }
    }
    await insertChunked(
      tx,
      'insert into webhook_events (id, org_id, type, payload, created_at, request_id)',
      6,
      eventRows,
    )
    await insertChunked(
      tx,
      'insert into webhook_deliveries (id, webhook_id, event_id, org_id, next_attempt_at, created_at)',
      6,
      deliveryRows,
    )
    options.enqueued(deliveryRows.map((r) => r[0] as string))
  }

  const stored = (ids: readonly string[]) => {
    if (ids.length > 0) options.enqueued(ids)
  }

  return { stage, store, stored }
}
