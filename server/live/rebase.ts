import * as Y from 'yjs'
import type { Db } from '../../persistence/types.ts'
import { orgIdOf, parseDocName } from '../../shared/doc-names.ts'
import {
  applyToJson,
  type CarriedEdit,
  carry,
  type DocJson,
  editsToCarry,
  generationOf,
} from '../../shared/rebase.ts'
import type { Logger } from '../http/json.ts'
import type { Compaction } from './compaction.ts'
import type { DocRegistry } from './doc-registry.ts'
import { LEVEL } from './doc-store.ts'
import { endGeneration, storedGeneration } from './generations.ts'
import type { OrgLane } from './lane.ts'

/** What a re-base did. */
export interface Rebased {
  docName: string
  /** The generation that ended, and the one that began. */
  ended: number
  generation: number
  /** The stored form before and after, in bytes. */
  bytesBefore: number
  bytesAfter: number
  /** Edits made while the next generation was built, carried onto it. */
  carried: number
  /** How long the organisation's writes waited for it (ms). */
  heldMs: number
}

export interface RebaseServices {
  db: Db
  registry: DocRegistry
  compaction: Compaction
  lane(orgId: string): OrgLane
  log: Logger
  /** After the commit: every process drops its copy and closes its connections. */
  rebased(docName: string): void
}

/** The JSON of a root text or map entry, as editsToCarry names it. */
type Rows = { id: string; data: Uint8Array }[]

/**
 * Starts a document over as a new generation (docs/design.md, "Re-basing a document").
 * The heavy part runs off the organisation's lane and off the event loop: the stored rows
 * replayed and rebuilt, with none of their tombstones, on the compactor's thread. Then,
 * with the lane to itself (writes and people's edits wait), what changed since is carried
 * onto the new generation by key (the same code replicas use), and one transaction swaps
 * the stored rows and records the generation that ended (its final state vector and state,
 * for replicas to carry their own edits across). The live copy is then dropped: its
 * connections close with the reason "re-based", everywhere.
 */
export async function rebase(services: RebaseServices, docName: string): Promise<Rebased> {
  const ref = parseDocName(docName)
  if (!ref) throw new Error(`${docName} is not a document name`)
  const { db, registry } = services
  const lane = services.lane(orgIdOf(docName))
  const entry = await registry.acquire(docName)
  try {
    const rows = await db.query<Rows[number]>(
      'select id::text as id, data from doc_updates where doc_name = $1 order by id',
      [docName],
    )
    const lastId = rows.at(-1)?.id ?? '0'
    const built = await services.compaction.compactor.rebuild(
      rows.map((r) => r.data),
      docName,
    )
    const base = JSON.parse(built.base) as DocJson
    const buildSv = Y.decodeStateVector(built.stateVector)
    const bytesBefore = rows.reduce((sum, r) => sum + r.data.length, 0)

    return await lane.alone(async () => {
      const started = performance.now()
      const live = entry.doc
      if (live.isDestroyed) throw new Error(`${docName} was unloaded while it was re-based`)
      if (generationOf(live) !== built.generation) {
        throw new Error(`${docName} changed generation while it was re-based`)
      }
      const stored = await db.transaction(async (tx) => {
        // Compaction of the document, and writes of other processes, wait for this.
        await tx.query('select pg_advisory_xact_lock(hashtext($1))', [docName])
        await tx.query(`select pg_advisory_xact_lock(hashtext('generation:' || $1))`, [docName])
        if ((await storedGeneration(tx, docName)) !== built.generation) {
          throw new Error(`${docName} was re-based by another process`)
        }
        // Rows other processes stored since the build, not yet applied here.
        const since = await tx.query<{ data: Uint8Array }>(
          'select data from doc_updates where doc_name = $1 and id > $2::bigint order by id',
          [docName, lastId],
        )
        for (const r of since) Y.applyUpdate(live, r.data, REBASE_ORIGIN)
        // Everything the live copy holds beyond the build: carried onto the new generation.
        const edits = editsToCarry(docName, base, buildSv, live, { everything: true })
        const update = edits.length > 0 ? withEdits(built.update, edits) : built.update
        await tx.query('delete from doc_updates where doc_name = $1', [docName])
        await tx.query('insert into doc_updates (doc_name, data, level) values ($1, $2, $3)', [
          docName,
          Buffer.from(update),
          LEVEL.snapshot,
        ])
        await endGeneration(tx, docName, {
          generation: built.generation,
          stateVector: Y.encodeStateVector(live),
          base: edits.length > 0 ? applyToJson(base, edits) : base,
        })
        return { update, carried: edits.length }
      })
      services.rebased(docName)
      services.compaction.rebased(docName, stored.update.length)
      return {
        docName,
        ended: built.generation,
        generation: built.generation + 1,
        bytesBefore,
        bytesAfter: stored.update.length,
        carried: stored.carried,
        heldMs: performance.now() - started,
      }
    })
  } finally {
    registry.release(entry)
  }
}

/** The origin of stored rows applied to a live copy about to be re-based. */
const REBASE_ORIGIN = { source: 'local', skipStoreHooks: true, context: { rebase: true } }

/** The next generation's state with edits made on it (edits since the build). */
function withEdits(update: Uint8Array, edits: readonly CarriedEdit[]): Uint8Array {
  const doc = new Y.Doc()
  try {
    Y.applyUpdate(doc, update)
    carry(doc, edits)
    return Y.encodeStateAsUpdate(doc)
  } finally {
    doc.destroy()
  }
}
