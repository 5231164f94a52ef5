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
}

export async function loadInto(db: Queryable, docName: string, doc: Y.Doc): Promise<LoadedDoc> {
  const rows = await db.query<{ id: number; data: Uint8Array }>(
    'select id, data from doc_updates where doc_name = $1 order by id',
    [docName],
  )
  for (let i = 0; i < rows.length; i += MERGE_CHUNK) {
    const chunk = rows.slice(i, i + MERGE_CHUNK).map((r) => r.data)
    Y.applyUpdate(doc, chunk.length === 1 ? (chunk[0] as Uint8Array) : Y.mergeUpdates(chunk))
  }
  return { maxId: rows.at(-1)?.id ?? 0, rows: rows.length }
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
 * one document from doing the work twice.
 */
export async function compact(db: Db, docName: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(hashtext($1))', [docName])
    const doc = new Y.Doc()
    const { maxId, rows } = await loadInto(tx, docName, doc)
    if (rows < 2) return
    const snapshot = Y.encodeStateAsUpdate(doc)
    doc.destroy()
    await tx.query('delete from doc_updates where doc_name = $1 and id <= $2', [docName, maxId])
    await appendUpdate(tx, docName, snapshot)
  })
}

export async function deleteDoc(db: Queryable, docName: string): Promise<void> {
  await db.query('delete from doc_updates where doc_name = $1', [docName])
}
