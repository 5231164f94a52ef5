import * as Y from 'yjs'
import type { Db, Queryable } from '../../persistence/types.ts'
import { storedGeneration } from './generations.ts'

/**
 * Yjs documents in Postgres: every write appends one row of update bytes (level 0).
 * Compaction keeps a cold load to a bounded number of rows, in two steps (compaction.ts):
 * runs of level-0 rows are merged into one level-1 row (cheap: Y.mergeUpdates, no replay),
 * and now and then every row is replayed into one level-2 snapshot (which also drops what
 * deleted content left behind). Updates commute, so rows may be merged in any grouping.
 */

/** Merging thousands of updates in one call is quadratic-ish (docs/design.md); chunk it. */
const MERGE_CHUNK = 256

export const LEVEL = { update: 0, merged: 1, snapshot: 2 } as const

/**
 * A stored row's bytes: a Yjs update in format 1, or in format 2 where `v2` (migration 027).
 * Snapshots are stored in format 2 (a 10,000-card board: 22 % smaller, applied as fast);
 * appended updates in format 1, as providers send them.
 */
export interface Encoded {
  data: Uint8Array
  v2: boolean
}

export interface StoredRow extends Encoded {
  id: number
  level: number
}

/** A row's bytes as the driver reads them, with their `encoding` column. */
export const encodedOf = (row: { data: Uint8Array; encoding: number }): Encoded => ({
  data: row.data,
  v2: row.encoding === 2,
})

/** The update in format 1 (what Yjs merges, diffs and sends). */
export function asV1(update: Uint8Array | Encoded): Uint8Array {
  if (update instanceof Uint8Array) return update
  return update.v2 ? Y.convertUpdateFormatV2ToV1(update.data) : update.data
}

/** Applies one update, in its own format. */
export function apply(doc: Y.Doc, update: Uint8Array | Encoded, origin?: unknown): void {
  if (update instanceof Uint8Array) Y.applyUpdate(doc, update, origin)
  else if (update.v2) Y.applyUpdateV2(doc, update.data, origin)
  else Y.applyUpdate(doc, update.data, origin)
}

export interface LoadedDoc {
  /** Rows read, per level. */
  rows: { level: number; bytes: number }[]
  /** Items the rows refer to and none of them holds (missingItems): a gap in the history. */
  missing: [client: number, clock: number][]
}

/**
 * Applies stored updates, in order, to a document, in one transaction. Each is applied as
 * it is: merging them first would decode and encode the snapshot row once more (a cold
 * load of a 10,000-card board: 1.2 s merged, 0.4 s applied one by one).
 */
export function replay(
  doc: Y.Doc,
  updates: readonly (Uint8Array | Encoded)[],
  origin?: unknown,
): void {
  if (updates.length === 0) return
  doc.transact(() => {
    for (const [i, update] of updates.entries()) {
      apply(doc, update, origin)
      // An update that refers to items the document lacks waits in Yjs's pending structs,
      // and Yjs merges every later update into them, one at a time: quadratic, minutes of a
      // blocked thread for a long history (a process that neither answered nor stopped).
      // The rest is merged once and applied once instead.
      if (doc.store.pendingStructs !== null && i + 1 < updates.length) {
        Y.applyUpdate(doc, mergedOf(updates.slice(i + 1).map(asV1)), origin)
        return
      }
    }
  }, origin)
}

/**
 * The items a document's updates refer to and it lacks (client, first missing clock):
 * empty unless what was applied to it has a gap.
 */
export function missingItems(doc: Y.Doc): [client: number, clock: number][] {
  return [...(doc.store.pendingStructs?.missing.entries() ?? [])]
}

/**
 * One snapshot holding exactly what the updates hold (replayed, so deleted content is gone),
 * in format 2.
 */
export function snapshotOf(updates: readonly (Uint8Array | Encoded)[]): Encoded {
  const doc = new Y.Doc()
  replay(doc, updates)
  const snapshot = Y.encodeStateAsUpdateV2(doc)
  doc.destroy()
  return { data: snapshot, v2: true }
}

/** One update holding what the updates hold, merged without a replay. */
export function mergedOf(updates: readonly Uint8Array[]): Uint8Array {
  let merged: Uint8Array[] = [...updates]
  while (merged.length > 1) {
    const next: Uint8Array[] = []
    for (let i = 0; i < merged.length; i += MERGE_CHUNK) {
      const chunk = merged.slice(i, i + MERGE_CHUNK)
      next.push(chunk.length === 1 ? (chunk[0] as Uint8Array) : Y.mergeUpdates(chunk))
    }
    merged = next
  }
  return merged[0] ?? Y.encodeStateAsUpdate(new Y.Doc())
}

/**
 * Rows' data is read as base64 and written from base64: a third more than the bytes on the
 * wire and in memory, where the driver's bytea text (hex) is twice as many, read into a
 * string twice the bytes and a buffer as large again. A 10,000-card board's compaction
 * (a 6.5 MB snapshot and its merged rows read, the new snapshot written) took the request
 * thread's native memory from 64 to 172 MB that way.
 */
type RawRow = { id: number; level: number; encoding: number; data: string | null } & Record<
  string,
  unknown
>

const bytesOf = (row: RawRow): StoredRow => ({
  id: row.id,
  level: row.level,
  ...encodedOf({ data: Buffer.from(row.data ?? '', 'base64'), encoding: row.encoding }),
})

/**
 * The order rows are applied in: the snapshot, then merged rows, then appended ones, each
 * level by id. A compaction replaces the rows it read with one row of a new id, so rows
 * appended while it ran have lower ids than what they build on; applied first, their items
 * wait on missing ones and Yjs merges what is pending again at every later row (a cold load
 * of a 10,000-card board: 270 ms of merging and the garbage it makes, out of 1.7 s).
 * Within a level, ids follow the order rows were written; every row of a higher level holds
 * only what was written before the rows of lower levels left beside it.
 */
const APPLY_ORDER = 'order by level desc, id'

async function storedRows(db: Queryable, docName: string, maxLevel = 2): Promise<StoredRow[]> {
  const rows = await db.query<RawRow>(
    `select id, level, encoding, encode(data, 'base64') as data from doc_updates
      where doc_name = $1 and level <= $2 ${APPLY_ORDER}`,
    [docName, maxLevel],
  )
  return rows.map(bytesOf)
}

/**
 * Rows this process stored itself and still holds, a re-base's new generation: the next
 * load of the document starts from them instead of reading them back (on PGlite, reading a
 * megabyte's snapshot back took most of the reload every write after a re-base waits for).
 */
export interface Stored {
  rows: ({ id: string; level: number } & Encoded)[]
}

/**
 * The document's stored rows, with those `held` taken from memory: only rows stored after
 * them are read. Undefined when storage no longer holds exactly them (compacted or re-based
 * since): the caller reads everything.
 */
async function storedFrom(
  db: Queryable,
  docName: string,
  held: Stored,
): Promise<StoredRow[] | undefined> {
  const last = held.rows.at(-1)
  if (!last) return undefined
  const rows = await db.query<RawRow>(
    `select id, level, encoding, case when id <= $2 then null else encode(data, 'base64') end as data
       from doc_updates where doc_name = $1 and level <= 2 order by id`,
    [docName, last.id],
  )
  const kept = rows.filter((r) => r.data === null)
  if (kept.length !== held.rows.length || kept.some((r, i) => String(r.id) !== held.rows[i]?.id)) {
    return undefined
  }
  return [
    ...held.rows.map((r) => ({ id: Number(r.id), level: r.level, data: r.data, v2: r.v2 })),
    ...rows.filter((r) => r.data !== null).map(bytesOf),
  ]
}

/**
 * Loads a document from its stored rows. Its 'update' listeners are held back meanwhile:
 * a document being loaded has nobody to tell (no connection yet, nothing new to store),
 * and while anyone listens Yjs encodes the whole load once more as an update message (a
 * 10,000-card board: 160 ms of a 520 ms load). They are back once the rows are in.
 */
export async function loadInto(
  db: Queryable,
  docName: string,
  doc: Y.Doc,
  origin?: unknown,
  stored?: Stored,
): Promise<LoadedDoc> {
  const rows =
    (stored ? await storedFrom(db, docName, stored) : undefined) ?? (await storedRows(db, docName))
  // lib0's Observable keeps its listeners per event name in `_observers`.
  const observers = (doc as unknown as { _observers: Map<string, unknown> })._observers
  const held = ['update', 'updateV2'].flatMap((name) => {
    const listeners = observers.get(name)
    observers.delete(name)
    return listeners ? [[name, listeners] as const] : []
  })
  try {
    replay(doc, rows, origin)
  } finally {
    for (const [name, listeners] of held) observers.set(name, listeners)
  }
  return {
    rows: rows.map((r) => ({ level: r.level, bytes: r.data.length })),
    missing: missingItems(doc),
  }
}

/**
 * What storage holds of the document beyond `doc`'s state, as one update (with every stored
 * deletion: applying those `doc` knows changes nothing). Undefined when nothing is stored, or
 * when storage holds another generation than `generation` (a re-base replaced the rows: the
 * copy is reloaded by that path, never patched across generations).
 */
export async function storedBeyond(
  db: Queryable,
  docName: string,
  doc: Y.Doc,
  generation: number,
): Promise<Uint8Array | undefined> {
  if ((await storedGeneration(db, docName)) !== generation) return undefined
  const rows = await storedRows(db, docName)
  if (rows.length === 0 || (await storedGeneration(db, docName)) !== generation) return undefined
  // Each row on its own, then the (small) differences merged: merging a 10,000-card board's
  // snapshot with its rows first took 250-300 ms of the request thread, this ~85. A row in
  // format 2 is diffed in it, and only its difference converted.
  const known = Y.encodeStateVector(doc)
  return Y.mergeUpdates(
    rows.map((r) =>
      r.v2
        ? Y.convertUpdateFormatV2ToV1(Y.diffUpdateV2(r.data, known))
        : Y.diffUpdate(r.data, known),
    ),
  )
}

export async function appendUpdate(
  db: Queryable,
  docName: string,
  update: Uint8Array | Encoded,
  level: number = LEVEL.update,
): Promise<void> {
  const { data, v2 } = update instanceof Uint8Array ? { data: update, v2: false } : update
  await db.query(
    `insert into doc_updates (doc_name, data, level, encoding)
     values ($1, decode($2, 'base64'), $3, $4)`,
    [
      docName,
      Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64'),
      level,
      v2 ? 2 : 1,
    ],
  )
}

export interface Compacted {
  /** Rows replaced. */
  replaced: number
  /** The new row's size. */
  bytes: number
}

/**
 * Replaces rows of a document by one row made from exactly those rows, in one
 * transaction: a reader sees the rows or their replacement, never neither. Working from
 * the stored rows (not a live copy) keeps it safe when other processes append
 * concurrently: rows committed after the read are untouched. An advisory lock keeps two
 * compactions of one document from doing the work twice: one that finds it held (another
 * process compacting, a re-base, a deletion) does nothing and answers 'busy', rather than
 * wait for a replay that may take seconds. `make` does the merging or replaying: the
 * server hands it to a worker thread (compactor.ts), so a big document never stalls the
 * event loop.
 *
 * `level` 1 merges the level-0 rows; level 2 replays every row into a snapshot.
 */
export async function compact(
  db: Db,
  docName: string,
  level: 1 | 2,
  make: (updates: Encoded[]) => Promise<Encoded>,
): Promise<Compacted | 'busy' | undefined> {
  return db.transaction(async (tx) => {
    const [lock] = await tx.query<{ held: boolean }>(
      'select pg_try_advisory_xact_lock(hashtext($1)) as held',
      [docName],
    )
    if (!lock?.held) return 'busy'
    const rows = await storedRows(tx, docName, level === 1 ? LEVEL.update : LEVEL.snapshot)
    if (rows.length < 2) return undefined
    const made = await make(rows)
    await tx.query('delete from doc_updates where doc_name = $1 and id = any($2::bigint[])', [
      docName,
      rows.map((r) => r.id),
    ])
    await appendUpdate(tx, docName, made, level)
    return { replaced: rows.length, bytes: made.data.length }
  })
}

/** A deleted document's rows, and its generations' (generations.ts). */
export async function deleteDoc(db: Queryable, docName: string): Promise<void> {
  await db.query('delete from doc_updates where doc_name = $1', [docName])
  await db.query('delete from doc_generations where doc_name = $1', [docName])
}
