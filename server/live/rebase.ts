import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import type { Db, Queryable } from '../../persistence/types.ts'
import { orgIdOf, parseDocName } from '../../shared/doc-names.ts'
import { type DocJson, docJson, editsToCarry, generationOf } from '../../shared/rebase.ts'
import type { Logger } from '../http/json.ts'
import type { Compaction } from './compaction.ts'
import type { DocRegistry } from './doc-registry.ts'
import { appendUpdate, apply, type Encoded, encodedOf, LEVEL, type Stored } from './doc-store.ts'
import { endGeneration, packBase, storedGeneration } from './generations.ts'
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
  /**
   * After the commit: every process drops its copy and closes its connections. `stored` is
   * what this one stored, for its next load of the document to start from (doc-store.ts
   * loadInto) rather than read it back.
   */
  rebased(docName: string, stored: Stored): void
}

/** Stored rows, by id. */
type Rows = ({ id: string } & Encoded)[]

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
  const compactor = services.compaction.compactor
  const lane = services.lane(orgIdOf(docName))
  const entry = await registry.acquire(docName)
  let handle: number | undefined
  /** The next generation's snapshot, stored ahead of the swap (see below). */
  let staged: string | undefined
  try {
    const rows = await storedSince(db, docName, '0')
    let lastId = rows.at(-1)?.id ?? '0'
    const built = await compactor.rebuild(rows, docName)
    handle = built.handle
    const bytesBefore = rows.reduce((sum, r) => sum + r.data.length, 0)
    const live = entry.doc

    // Catching up, still off the lane: what was stored and changed while the build ran is
    // carried onto the next generation on the compactor's thread, and the ended
    // generation's state is taken and packed here, so that with the lane to itself only
    // what changes from now on is left to carry.
    lastId = applyStoredSince(live, await storedSince(db, docName, lastId), lastId)
    const caught = editsToCarry(
      docName,
      JSON.parse(built.base) as DocJson,
      Y.decodeStateVector(built.stateVector),
      live,
      { everything: true },
    )
    // Taken with the edits, before anything awaits: the state they bring the build to.
    const base = docJson(ref.kind, live)
    const caughtSv = Y.decodeStateVector(Y.encodeStateVector(live))
    const snapshot = await compactor.carry(built.handle, caught, true)
    const packed = await packBase(base)
    // The new generation's snapshot is stored now, under a name of its own that nothing
    // loads, and the swap only renames it: with the lane held, a megabyte's insert cost
    // PGlite 120-220 ms. A re-base that fails takes its row away again.
    staged = `${docName}#rebase:${randomUUID()}`
    await appendUpdate(db, staged, snapshot, LEVEL.snapshot)

    const done = await lane.alone(async () => {
      const started = performance.now()
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
        // Rows other processes stored since the catch-up, not yet applied here.
        applyStoredSince(live, await storedSince(tx, docName, lastId), lastId)
        // Everything the live copy holds beyond the catch-up: carried onto the new generation.
        const edits = editsToCarry(docName, base, caughtSv, live, { everything: true })
        const added =
          edits.length > 0 ? await compactor.carry(built.handle, edits, false) : undefined
        await tx.query('delete from doc_updates where doc_name = $1', [docName])
        const renamed = await tx.query(
          'update doc_updates set doc_name = $1 where doc_name = $2 returning id',
          [docName, staged],
        )
        const snapshotId = (renamed[0] as { id: string | number } | undefined)?.id
        if (snapshotId === undefined) throw new Error(`${docName}: its staged snapshot is gone`)
        const rows: Stored['rows'] = [
          { id: String(snapshotId), level: LEVEL.snapshot, ...snapshot },
        ]
        if (added) {
          const [row] = await tx.query<{ id: string | number }>(
            'insert into doc_updates (doc_name, data, level) values ($1, $2, $3) returning id',
            [docName, Buffer.from(added.data), LEVEL.update],
          )
          rows.push({ id: String(row?.id), level: LEVEL.update, ...added })
        }
        await endGeneration(tx, docName, {
          generation: built.generation,
          stateVector: Y.encodeStateVector(live),
          base: packed,
          carried: edits,
        })
        return {
          bytes: snapshot.data.length + (added?.data.length ?? 0),
          carried: edits.length,
          rows,
        }
      })
      services.rebased(docName, { rows: stored.rows })
      services.compaction.rebased(docName, stored.bytes)
      return {
        docName,
        ended: built.generation,
        generation: built.generation + 1,
        bytesBefore,
        bytesAfter: stored.bytes,
        carried: caught.length + stored.carried,
        heldMs: performance.now() - started,
      }
    })
    staged = undefined
    return done
  } finally {
    if (staged !== undefined) {
      await db
        .query('delete from doc_updates where doc_name = $1', [staged])
        .catch((error: unknown) => services.log.error(`removing ${staged} failed`, error))
    }
    if (handle !== undefined) void compactor.release(handle)
    registry.release(entry)
  }
}

/** Rows stored for a document after the row `afterId`. */
async function storedSince(q: Queryable, docName: string, afterId: string): Promise<Rows> {
  const rows = await q.query<{ id: string; data: Uint8Array; encoding: number }>(
    `select id::text as id, data, encoding from doc_updates
      where doc_name = $1 and id > $2::bigint order by id`,
    [docName, afterId],
  )
  return rows.map((r) => ({ id: r.id, ...encodedOf(r) }))
}

/** Applies stored rows to the live copy (those it has already change nothing); the last id. */
function applyStoredSince(live: Y.Doc, rows: Rows, lastId: string): string {
  for (const r of rows) apply(live, r, REBASE_ORIGIN)
  return rows.at(-1)?.id ?? lastId
}

/** How long a staged snapshot may wait for its swap before the sweeper takes it for abandoned. */
export const STAGED_KEPT_MS = 60 * 60 * 1000

/**
 * Deletes the staged snapshots of re-bases that never swapped: a process that died between
 * storing its new generation ahead and renaming it leaves that row behind, and nothing
 * loads it. A re-base takes seconds, so one staged more than STAGED_KEPT_MS ago is
 * abandoned; the database's clock dates both (the sweeper).
 */
export async function dropAbandonedStaging(q: Queryable): Promise<number> {
  const rows = await q.query(
    `delete from doc_updates
      where doc_name like '%#rebase:%' and created_at < now() - $1 * interval '1 millisecond'
      returning id`,
    [STAGED_KEPT_MS],
  )
  return rows.length
}

/** The origin of stored rows applied to a live copy about to be re-based. */
const REBASE_ORIGIN = { source: 'local', skipStoreHooks: true, context: { rebase: true } }
