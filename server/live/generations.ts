import { promisify } from 'node:util'
import { gunzip, gzip } from 'node:zlib'
import * as Y from 'yjs'
import type { Queryable } from '../../persistence/types.ts'
import { applyToJson, type CarriedEdit, type DocJson } from '../../shared/rebase.ts'

/**
 * The generations of live documents in Postgres (docs/design.md, "Re-basing a document";
 * persistence/migrations/020_board_v3.sql): one row per generation that ended, with its
 * final state vector and its final state as JSON (the base replicas carry their edits
 * across with). A document's current generation is one more than its last ended one.
 */

const gzipAsync = promisify(gzip)
const gunzipAsync = promisify(gunzip)

/** How long an ended generation's base is kept: a replica offline longer starts afresh. */
export const BASE_KEPT_DAYS = 30

export interface EndedGeneration {
  generation: number
  stateVector: Uint8Array
  /** Undefined once expired. */
  base: DocJson | undefined
  endedAt: Date
}

/** The clients of every ended generation: a replica naming one holds an old generation. */
export async function endedClients(q: Queryable, docName: string): Promise<Set<number>> {
  const rows = await q.query<{ final_state_vector: Uint8Array }>(
    'select final_state_vector from doc_generations where doc_name = $1',
    [docName],
  )
  const clients = new Set<number>()
  for (const r of rows)
    for (const c of Y.decodeStateVector(r.final_state_vector).keys()) clients.add(c)
  return clients
}

/** The document's current generation as storage has it. */
export async function storedGeneration(q: Queryable, docName: string): Promise<number> {
  const [row] = await q.query<{ generation: number }>(
    'select generation from doc_generations where doc_name = $1 order by generation desc limit 1',
    [docName],
  )
  return row ? row.generation + 1 : 0
}

/** A base as stored: its JSON, gzipped. */
export function packBase(base: DocJson): Promise<Buffer> {
  return gzipAsync(JSON.stringify(base))
}

/**
 * Records that `generation` of a document ended, with its final state: `base` (packed
 * ahead of time when it is big) and the edits `carried` onto it after it was taken.
 */
export async function endGeneration(
  q: Queryable,
  docName: string,
  ended: {
    generation: number
    stateVector: Uint8Array
    base: DocJson | Buffer
    carried?: readonly CarriedEdit[]
  },
): Promise<void> {
  await q.query(
    `insert into doc_generations (doc_name, generation, final_state_vector, base, carried)
     values ($1, $2, $3, $4, $5)`,
    [
      docName,
      ended.generation,
      Buffer.from(ended.stateVector),
      Buffer.isBuffer(ended.base) ? ended.base : await packBase(ended.base),
      ended.carried?.length ? JSON.stringify(ended.carried) : null,
    ],
  )
}

/** An ended generation of a document, with its base unless it expired. */
export async function endedGeneration(
  q: Queryable,
  docName: string,
  generation: number,
): Promise<EndedGeneration | undefined> {
  const [row] = await q.query<{
    final_state_vector: Uint8Array
    base: Uint8Array | null
    carried: string | null
    ended_at: Date
  }>(
    `select final_state_vector, base, carried, ended_at from doc_generations
      where doc_name = $1 and generation = $2`,
    [docName, generation],
  )
  if (!row) return undefined
  return {
    generation,
    stateVector: row.final_state_vector,
    base: row.base ? await unpackBase(row.base, row.carried) : undefined,
    endedAt: row.ended_at,
  }
}

async function unpackBase(packed: Uint8Array, carried: string | null): Promise<DocJson> {
  const base = JSON.parse((await gunzipAsync(packed)).toString('utf8')) as DocJson
  return carried ? applyToJson(base, JSON.parse(carried) as CarriedEdit[]) : base
}

/** Drops the bases of generations that ended more than BASE_KEPT_DAYS ago (the sweeper). */
export async function expireBases(q: Queryable, now: Date): Promise<number> {
  const rows = await q.query(
    `update doc_generations set base = null, carried = null
      where base is not null and ended_at < $1 returning doc_name`,
    [new Date(now.getTime() - BASE_KEPT_DAYS * 86_400_000)],
  )
  return rows.length
}
