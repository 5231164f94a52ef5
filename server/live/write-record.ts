import type { Queryable } from '../../persistence/db.ts'
import type { StoredAttachment, StoredComment } from '../../shared/card-doc.ts'
import type { TaskStats } from '../../shared/records.ts'
import type { ChangeKind, StagedEvents } from './origin.ts'

/**
 * A row a write puts into (or removes from) the history tables, in the same statement as
 * its document updates: the comments and screenshots index, and archived cards.
 */
export type RowOp =
  | { t: 'comment'; id: string; rec: CommentRow | null }
  | { t: 'attachment'; id: string; rec: AttachmentRow | null }
  | { t: 'archived'; id: string; rec: ArchivedRow | null }
  /** An archived card's stats after a comment or screenshot changed. */
  | { t: 'archived_stats'; id: string; rec: TaskStats }
  /** A map people drew on: it moves to the top of list_maps. */
  | { t: 'map_touch'; id: string; rec: null }
  /** A node or edge people drew, for the index agents find its map by. */
  | { t: 'map_item'; id: string; rec: { mapId: string; kind: 'node' | 'edge' } }

/** A comment's row: the card document's entry without its id (the row's key). */
export type CommentRow = Omit<StoredComment, 'id'>

/** A screenshot's row: the card document's entry without its id. */
export type AttachmentRow = Omit<StoredAttachment, 'id'>

/** An archived card, whole (StoredTask without its id): the `record` column. */
export interface ArchivedRow {
  columnId: string
  archivedAt: string
  [field: string]: unknown
}

/** What one live write records besides its callback's own statements. */
export interface WriteRecord {
  /** The write's update bytes, per document it changed. */
  updates: readonly { doc: string; update: Uint8Array }[]
  /** The agent key the write is made with: held FOR SHARE until the commit. */
  keyId: string | undefined
  changes: readonly { kind: ChangeKind; entityId: string }[]
  ops: readonly RowOp[]
  events: StagedEvents | undefined
}

/** True when there is nothing to store (a write that found nothing to change). */
export function recordsNothing(r: WriteRecord): boolean {
  return (
    r.updates.length === 0 &&
    r.changes.length === 0 &&
    r.ops.length === 0 &&
    (r.events?.rows.length ?? 0) === 0
  )
}

const RECORD = `select stored, delivery_id from record_writes(
  $1::uuid, $2::boolean, $3::uuid[], $4::integer[], $5::text[], $6::text[], $7::integer[],
  $8::text[], $9::uuid[], $10::text, $11::integer[], $12::uuid[], $13::text[], $14::text[],
  $15::timestamptz[])`

export interface Recorded {
  /** How many of the records were stored: all but those from the first revoked key on. */
  stored: number
  /** The webhook deliveries queued. */
  deliveryIds: string[]
}

const base64 = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.length).toString('base64')

/**
 * Stores the records of writes to one organisation's documents, in order, in one
 * statement (persistence/migrations/009_history.sql). Records are stored up to the first
 * whose agent key is revoked; with `allOrNothing` that raises instead (CB401, see
 * revokedKeyError), failing the transaction. On its own, outside a transaction, the
 * statement is the writes' whole transaction.
 */
export async function recordWrites(
  q: Queryable,
  target: { orgId: string; allOrNothing: boolean },
  records: readonly WriteRecord[],
): Promise<Recorded> {
  const keys: (string | null)[] = []
  const updates: { writes: number[]; docs: string[]; data: string[] } = {
    writes: [],
    docs: [],
    data: [],
  }
  const changes: { writes: number[]; kinds: string[]; ids: string[] } = {
    writes: [],
    kinds: [],
    ids: [],
  }
  const ops: (RowOp & { w: number })[] = []
  const events: {
    writes: number[]
    ids: string[]
    types: string[]
    payloads: string[]
    times: string[]
  } = { writes: [], ids: [], types: [], payloads: [], times: [] }
  for (const [i, r] of records.entries()) {
    const w = i + 1
    keys.push(r.keyId ?? null)
    for (const u of r.updates) {
      updates.writes.push(w)
      updates.docs.push(u.doc)
      updates.data.push(base64(u.update))
    }
    for (const c of r.changes) {
      changes.writes.push(w)
      changes.kinds.push(c.kind)
      changes.ids.push(c.entityId)
    }
    for (const op of r.ops) ops.push({ ...op, w })
    // As text: a Date array would be sent as one timestamptz.
    const at = r.events?.createdAt.toISOString()
    for (const e of r.events?.rows ?? []) {
      events.writes.push(w)
      events.ids.push(e.id)
      events.types.push(e.type)
      events.payloads.push(e.payload)
      events.times.push(at as string)
    }
  }
  const rows = await q.query<{ stored: number; delivery_id: string | null }>(RECORD, [
    target.orgId,
    target.allOrNothing,
    keys,
    updates.writes,
    updates.docs,
    updates.data,
    changes.writes,
    changes.kinds,
    changes.ids,
    ops.length === 0 ? null : JSON.stringify(ops),
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
