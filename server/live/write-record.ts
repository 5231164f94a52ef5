import type { Queryable } from '../../persistence/db.ts'
import type { ChangeKind, StagedEvents } from './origin.ts'

/** What one live write records besides its callback's own statements. */
export interface WriteRecord {
  /** The write's update bytes; undefined when it changed nothing in the document. */
  update: Uint8Array | undefined
  /** The agent key the write is made with: held FOR SHARE until the commit. */
  keyId: string | undefined
  changes: readonly { kind: ChangeKind; entityId: string }[]
  events: StagedEvents | undefined
}

/** True when there is nothing to store (a write that found nothing to change). */
export function recordsNothing(r: WriteRecord): boolean {
  return r.update === undefined && r.changes.length === 0 && (r.events?.rows.length ?? 0) === 0
}

const RECORD = `select stored, delivery_id from record_writes(
  $1::text, $2::uuid, $3::boolean, $4::text[], $5::uuid[], $6::integer[], $7::text[],
  $8::uuid[], $9::integer[], $10::uuid[], $11::text[], $12::text[], $13::timestamptz[])`

export interface Recorded {
  /** How many of the records were stored: all but those from the first revoked key on. */
  stored: number
  /** The webhook deliveries queued. */
  deliveryIds: string[]
}

/**
 * Stores the records of writes to one document, in order, in one statement
 * (persistence/migrations/007_record_writes.sql). Records are stored up to the first whose
 * agent key is revoked; with `allOrNothing` that raises instead (CB401, see
 * revokedKeyError), failing the transaction. On its own, outside a transaction, the
 * statement is the writes' whole transaction.
 */
export async function recordWrites(
  q: Queryable,
  target: { docName: string; orgId: string; allOrNothing: boolean },
  records: readonly WriteRecord[],
): Promise<Recorded> {
  const updates: (string | null)[] = []
  const keys: (string | null)[] = []
  const changes: { writes: number[]; kinds: string[]; ids: string[] } = {
    writes: [],
    kinds: [],
    ids: [],
  }
  const events: {
    writes: number[]
    ids: string[]
    types: string[]
    payloads: string[]
    times: string[]
  } = {
    writes: [],
    ids: [],
    types: [],
    payloads: [],
    times: [],
  }
  for (const [i, r] of records.entries()) {
    updates.push(
      r.update
        ? Buffer.from(r.update.buffer, r.update.byteOffset, r.update.length).toString('base64')
        : null,
    )
    keys.push(r.keyId ?? null)
    for (const c of r.changes) {
      changes.writes.push(i + 1)
      changes.kinds.push(c.kind)
      changes.ids.push(c.entityId)
    }
    // As text: a Date array would be sent as one timestamptz.
    const at = r.events?.createdAt.toISOString()
    for (const e of r.events?.rows ?? []) {
      events.writes.push(i + 1)
      events.ids.push(e.id)
      events.types.push(e.type)
      events.payloads.push(e.payload)
      events.times.push(at as string)
    }
  }
  const rows = await q.query<{ stored: number; delivery_id: string | null }>(RECORD, [
    target.docName,
    target.orgId,
    target.allOrNothing,
    updates,
    keys,
    changes.writes,
    changes.kinds,
    changes.ids,
    events.writes,
    events.ids,
    events.types,
    events.payloads,
    events.times,
  ])
  return {
    stored: rows[0]?.stored ?? 0,
    deliveryIds: rows.flatMap((r) => (r.delivery_id ? [r.delivery_id] : [])),
  }
}
