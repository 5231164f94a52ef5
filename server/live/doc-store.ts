import * as Y from 'yjs'
import type { Db, Queryable } from '../../persistence/db.ts'

/**
 * Yjs documents in Postgres: every change is appended as one row of update bytes; a
 * background compaction replaces the rows a loaded document already covers with one
 * snapshot. Updates commute, so the snapshot's position in id order does not matter.
 */

/** Merging thousands of updates in one call is quadratic-ish (DESIGN.md); chunk it. */
const MERGE_CHUNK = 256

export interface LoadedDoc {
  /** Highest row id applied: compaction may delete up to here. */
  maxId: number
  rows: number
  /** Their total size. */
  bytes: number
}

/** Applies stored updates, in order, to a document. */
export function replay(doc: Y.Doc, updates: readonly Uint8Array[]): void {
  for (let i = 0; i < updates.length; i += MERGE_CHUNK) {
    const chunk = updates.slice(i, i + MERGE_CHUNK)
    Y.applyUpdate(doc, chunk.length === 1 ? (chunk[0] as Uint8Array) : Y.mergeUpdates(chunk))
  }
}

/** One snapshot holding exactly what the updates hold (replayed, so deleted content is gone). */
export function snapshotOf(updates: readonly Uint8Array[]): Uint8Array {
  const doc = new Y.Doc()
  replay(doc, updates)
  const snapshot = Y.encodeStateAsUpdate(doc)
  doc.destroy()
  return snapshot
}

async function storedRows(db: Queryable, docName: string) {
  return db.query<{ id: number; data: Uint8Array }>(
    'select id, data from doc_updates where doc_name = $1 order by id',
    [docName],
  )
}

export async function loadInto(db: Queryable, docName: string, doc: Y.Doc): Promise<LoadedDoc> {
  const rows = await storedRows(db, docName)
  replay(
    doc,
    rows.map((r) => r.data),
  )
  const bytes = rows.reduce((sum, r) => sum + r.data.length, 0)
  return { maxId: rows.at(-1)?.id ?? 0, rows: rows.length, bytes }
}

export async function appendUpdate(
  db: Queryable,
  docName: string,
  update: Uint8Array,
): Promise<void> {
  await db.query('insert into doc_updates (doc_name, data) values ($1, $2)', [
    docName,
    Buffer.from(update),
  ])
}

/**
 * Replaces a document's rows by one snapshot replayed from exactly those rows, in one
 * transaction: a reader sees the rows or the snapshot, never neither. Working from the
 * stored rows (not a live copy) keeps it safe when other processes append concurrently:
 * rows committed after the read are untouched. An advisory lock keeps two compactions of
 * one document from doing the work twice. `snapshot` does the replaying: the server hands
 * it to a worker thread (compactor.ts), so a big document never stalls the event loop.
 * Resolves with the snapshot's size (undefined when there was nothing to compact).
 */
export async function compact(
  db: Db,
  docName: string,
  snapshot: (updates: Uint8Array[]) => Promise<Uint8Array> = async (u) => snapshotOf(u),
): Promise<number | undefined> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(hashtext($1))', [docName])
    const rows = await storedRows(tx, docName)
    if (rows.length < 2) return undefined
    const maxId = rows.at(-1)?.id ?? 0
    const replayed = await snapshot(rows.map((r) => r.data))
    await tx.query('delete from doc_updates where doc_name = $1 and id <= $2', [docName, maxId])
    await appendUpdate(tx, docName, replayed)
    return replayed.length
  })
}

export async function deleteDoc(db: Queryable, docName: string): Promise<void> {
  await db.query('delete from doc_updates where doc_name = $1', [docName])
}
