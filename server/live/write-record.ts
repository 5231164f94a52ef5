import type { Queryable } from '../../persistence/types.ts'
import type { StoredAttachment, StoredComment } from '../../shared/card-doc.ts'
import type { TaskStats } from '../../shared/records.ts'
import { ApiError } from '../errors.ts'
import type { HistoryOp } from './card-history.ts'
import type { ChangeKind, StagedEvents } from './events.ts'

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
  /**
   * A card's words and whether it is archived (task_texts; rec null: the card is gone; a null
   * title or archived: as stored).
   */
  | {
      t: 'text'
      id: string
      rec: { title: string | null; description: string; archived: boolean | null } | null
    }
  /** A map people drew on: it moves to the top of list_maps. */
  | { t: 'map_touch'; id: string; rec: null }
  /** A node or edge people drew, for the index agents find its map by. */
  | { t: 'map_item'; id: string; rec: { mapId: string; kind: 'node' | 'edge' } }
  /** One event of a card's history (card_history; id: the card), card-history.ts. */
  | HistoryOp

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

/**
 * An Idempotency-Key a write marks done with its answer as it is stored (see
 * server/agent/idempotency.ts): the answer commits with the write or not at all.
 */
export interface IdempotentWrite {
  /** The API key the Idempotency-Key belongs to. */
  keyId: string
  /** The Idempotency-Key as sent (unquoted). */
  key: string
  /** The request holding the key; if a retry took the key over, the write is refused. */
  attempt: string
  /**
   * The answer to replay (the write's result as JSON), or null when the request gives
   * another answer and stores it itself: the key then stays running with status 200.
   */
  response: string | null
}

/**
 * A claim decision a write made from the board document in memory (server/claims/batch.ts),
 * checked under the card's claim lock by the statement that stores the write
 * (persistence/migrations/019_claims_batch.sql): the card's claim is as the decision saw it
 * (a live claim of `key` started at `started`, or none live at `now`), else the write is
 * refused (ClaimMoved) and computed again. `row` is the claim row it stores.
 */
export interface ClaimCheck {
  id: string
  now: string
  live: boolean
  key?: string | undefined
  started?: string | undefined
  row?: Record<string, unknown> | undefined
}

/** What one live write records besides its callback's own statements. */
export interface WriteRecord {
  /** The write's update bytes, per document it changed. */
  updates: readonly {
    doc: string
    update: Uint8Array
    /** The generation of the document the update was made on (0: never re-based). */
    generation: number
    /** Bytes for a document nobody has loaded (WriteScope.append): no compaction to count. */
    unloaded?: boolean
  }[]
  /** The agent key the write is made with: held FOR SHARE until the commit. */
  keyId: string | undefined
  /** The Idempotency-Key the write is made under, marked done with it. */
  idempotency?: IdempotentWrite | undefined
  changes: readonly { kind: ChangeKind; entityId: string }[]
  ops: readonly RowOp[]
  events: StagedEvents | undefined
  /** Its claim decisions, checked and stored with it. */
  claims?: readonly ClaimCheck[] | undefined
}

/** True when there is nothing to store (a write that found nothing to change). */
export function recordsNothing(r: WriteRecord): boolean {
  return (
    r.updates.length === 0 &&
    r.changes.length === 0 &&
    r.ops.length === 0 &&
    (r.events?.rows.length ?? 0) === 0 &&
    r.idempotency === undefined
  )
}

const RECORD = `select stored, refused, delivery_id from record_writes(
  $1::uuid, $2::boolean, $3::uuid[], $4::uuid[], $5::text[], $6::uuid[], $7::text[],
  $8::integer[], $9::text[], $10::text[], $11::integer[], $12::text[], $13::uuid[], $14::text,
  $15::integer[], $16::uuid[], $17::text[], $18::text[], $19::timestamptz[], $20::text[],
  $21::integer[])`

/** The same, for records with claim decisions: checked, then stored by record_writes. */
const RECORD_CLAIMED = `select stored, refused, delivery_id from record_claimed_writes(
  $22::text, $1::uuid, $2::boolean, $3::uuid[], $4::uuid[], $5::text[], $6::uuid[], $7::text[],
  $8::integer[], $9::text[], $10::text[], $11::integer[], $12::text[], $13::uuid[], $14::text,
  $15::integer[], $16::uuid[], $17::text[], $18::text[], $19::timestamptz[], $20::text[],
  $21::integer[])`

/**
 * Why record_writes refused a record: its agent key is revoked, or a retry took its
 * Idempotency-Key over.
 */
export type Refusal = 'key' | 'idempotency' | 'claim'

export interface Recorded {
  /** How many of the records were stored: all but those from the first refused one on. */
  stored: number
  /** Why the record at index `stored` was refused; undefined when all were stored. */
  refused: Refusal | undefined
  /** The webhook deliveries queued. */
  deliveryIds: string[]
}

/**
 * A write refused because a retry took its Idempotency-Key over while it ran: nothing of it
 * was stored. Its code is the errcode record_writes raises for the same refusal when the
 * write commits alone (all or nothing), so both read alike.
 */
export class IdempotencyTakenOver extends Error {
  readonly code = 'CB409'
  constructor() {
    super('Idempotency-Key taken over by a retry')
  }
}

/**
 * A write refused because its API key was revoked while it ran: record_writes raising CB401
 * (a write committing alone), or a refusal in a batch. Nothing of it was stored.
 */
export class KeyRefused extends Error {
  readonly code = 'CB401'
  constructor() {
    super('API key revoked while the write ran')
  }
}

/**
 * A write computed on a generation of a document that a re-base ended meanwhile (another
 * process re-based it): record_writes raises CB410 naming the document. Nothing of the
 * write was stored; its lane drops the document and its people's pending updates of it.
 */
export function rebasedDocOf(error: unknown): string | undefined {
  const e = error as { code?: unknown; message?: unknown } | null
  if (e?.code !== 'CB410' || typeof e.message !== 'string') return undefined
  return /^document (\S+) was re-based/.exec(e.message)?.[1]
}

/** The refusal a failed write's error carries (record_writes raises CB401), if it is one. */
export function asKeyRefused(error: unknown): KeyRefused | undefined {
  if (error instanceof KeyRefused) return error
  return (error as { code?: unknown } | null)?.code === 'CB401' ? new KeyRefused() : undefined
}

/**
 * A write whose claim decision no longer held when it was stored (another process changed
 * the card's claim a moment before), or one computed on top of it: nothing of it was
 * stored, and the lane computes it again (deciding in Postgres). A 503 to retry if it
 * ever escapes.
 */
export class ClaimMoved extends ApiError {
  constructor() {
    super(
      503,
      'a claim changed while this write was stored; nothing was written, retry',
      undefined,
      {
        'Retry-After': '1',
      },
    )
  }
}

/** Whether a failure is a claim decision that no longer held (CB423 when stored alone). */
export function isClaimMoved(error: unknown): boolean {
  return error instanceof ClaimMoved || (error as { code?: unknown } | null)?.code === 'CB423'
}

/** Whether the key is revoked now (or gone). */
export async function keyRevoked(q: Queryable, keyId: string): Promise<boolean> {
  const rows = await q.query('select 1 from api_keys where id = $1 and revoked_at is null', [keyId])
  return rows.length === 0
}

function refusal(value: unknown): Refusal | undefined {
  if (value === null || value === undefined) return undefined
  if (value === 'key' || value === 'idempotency' || value === 'claim') return value
  throw new Error(`record_writes gave an unknown refusal: ${String(value)}`)
}

const base64 = (u: Uint8Array) => Buffer.from(u.buffer, u.byteOffset, u.length).toString('base64')

/**
 * Stores the records of writes to one organisation's documents, in order, in one
 * statement (persistence/migrations/017_event_request_ids.sql). Records are stored
 * up to the first refused: its agent key revoked, or its Idempotency-Key taken over. With
 * `allOrNothing` that raises instead (CB401, see revokedKeyError; CB409, see
 * IdempotencyTakenOver), failing the transaction. On its own, outside a transaction, the
 * statement is the writes' whole transaction.
 */
export async function recordWrites(
  q: Queryable,
  target: { orgId: string; allOrNothing: boolean },
  records: readonly WriteRecord[],
): Promise<Recorded> {
  const keys: (string | null)[] = []
  const idem: {
    keyIds: (string | null)[]
    keys: (string | null)[]
    attempts: (string | null)[]
    responses: (string | null)[]
  } = { keyIds: [], keys: [], attempts: [], responses: [] }
  const updates: { writes: number[]; docs: string[]; data: string[]; generations: number[] } = {
    writes: [],
    docs: [],
    data: [],
    generations: [],
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
    requestIds: (string | null)[]
  } = { writes: [], ids: [], types: [], payloads: [], times: [], requestIds: [] }
  const claims: (ClaimCheck & { w: number })[] = []
  for (const [i, r] of records.entries()) {
    const w = i + 1
    for (const c of r.claims ?? []) claims.push({ ...c, w })
    keys.push(r.keyId ?? null)
    idem.keyIds.push(r.idempotency?.keyId ?? null)
    idem.keys.push(r.idempotency?.key ?? null)
    idem.attempts.push(r.idempotency?.attempt ?? null)
    idem.responses.push(r.idempotency?.response ?? null)
    for (const u of r.updates) {
      updates.writes.push(w)
      updates.docs.push(u.doc)
      updates.data.push(base64(u.update))
      updates.generations.push(u.generation)
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
      events.requestIds.push(r.events?.requestId ?? null)
    }
  }
  const rows = await q.query<{
    stored: number
    refused: string | null
    delivery_id: string | null
  }>(claims.length > 0 ? RECORD_CLAIMED : RECORD, [
    target.orgId,
    target.allOrNothing,
    keys,
    idem.keyIds,
    idem.keys,
    idem.attempts,
    idem.responses,
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
    events.requestIds,
    updates.generations,
    ...(claims.length > 0 ? [JSON.stringify(claims)] : []),
  ])
  return {
    stored: rows[0]?.stored ?? 0,
    refused: refusal(rows[0]?.refused),
    deliveryIds: rows.flatMap((r) => (r.delivery_id ? [r.delivery_id] : [])),
  }
}
