import { setPriority } from 'node:os'
import { parentPort, workerData } from 'node:worker_threads'
import * as Y from 'yjs'
import { parseDocName } from '../../shared/doc-names.ts'
import {
  type CarriedEdit,
  CLEARLY_LIVE,
  carry,
  type DocKind,
  docJson,
  generationOf,
  liveItemBytes,
  liveState,
  rebuilt,
  rebuiltFrom,
} from '../../shared/rebase.ts'
import { collectAll } from '../collector.ts'
import { type Encoded, mergedOf, replay } from './doc-store.ts'

/**
 * Started as a process of its own for one large snapshot (compaction-thread.ts), with this
 * argument; `NORMAL_PRIORITY` as well unless it runs at the lowest.
 */
export const ONE_JOB = '--compaction-job'
export const NORMAL_PRIORITY = '--normal-priority'
const oneJob = process.argv.includes(ONE_JOB) && process.send !== undefined

// The lowest priority, for this thread only (Linux applies it per thread): on a busy
// machine a compaction waits rather than slowing requests. Nothing to do where refused.
// Imported by the request's thread for its constants, the module leaves that thread alone.
const lowPriority = oneJob
  ? !process.argv.includes(NORMAL_PRIORITY)
  : parentPort !== null && (workerData as { lowPriority?: boolean } | null)?.lowPriority !== false
if (lowPriority) {
  try {
    setPriority(19)
  } catch {}
}

export type CompactionJob =
  | { id: number; op: 'merge'; updates: Uint8Array[] }
  /** A snapshot, and the size the document would have re-based (how much is tombstones). */
  | { id: number; op: 'snapshot'; updates: Encoded[]; name: string }
  /**
   * The next generation of a document (shared/rebase.ts), and its state as it ends. The
   * thread keeps the next generation (its handle is the job's id) until it is released, so
   * what changes meanwhile is carried onto it here, off the event loop.
   */
  | { id: number; op: 'rebuild'; updates: Encoded[]; name: string }
  /**
   * Edits made again on a next generation the thread keeps; the answer is its whole state
   * (`whole`, in update format 2: it is stored as the snapshot) or only what the edits
   * added (format 1: it is stored as an appended update).
   */
  | { id: number; op: 'carry'; handle: number; edits: CarriedEdit[]; whole: boolean }
  | { id: number; op: 'release'; handle: number }

export type CompactionReply = { id: number } & (
  | { op: 'merge'; update: Uint8Array }
  | {
      op: 'snapshot'
      /** The snapshot, in update format 2 (as stored), and its size in format 1. */
      update: Uint8Array
      v1Bytes: number
      /** Its size re-based, in format 1. */
      rebasedBytes: number
    }
  | {
      op: 'rebuild'
      /** The next generation's whole state. */
      update: Uint8Array
      generation: number
      /** The replayed document's state vector and state as JSON (the base). */
      stateVector: Uint8Array
      base: string
    }
  | { op: 'carry'; update: Uint8Array }
  | { op: 'release' }
  | { op: 'failed'; error: string }
)

/** A replayed document this large (its state's bytes) is collected before the next is built. */
const COLLECT_FROM_BYTES = 1024 * 1024

/** Next generations kept for their re-base, by handle. */
const held = new Map<number, Y.Doc>()

function run(job: CompactionJob): CompactionReply {
  if (job.op === 'merge') return { id: job.id, op: 'merge', update: mergedOf(job.updates) }
  if (job.op === 'release') {
    held.get(job.handle)?.destroy()
    held.delete(job.handle)
    return { id: job.id, op: 'release' }
  }
  if (job.op === 'carry') {
    const next = held.get(job.handle)
    if (!next) throw new Error(`no next generation ${job.handle}`)
    const before = Y.encodeStateVector(next)
    carry(next, job.edits)
    const update = job.whole ? Y.encodeStateAsUpdateV2(next) : Y.encodeStateAsUpdate(next, before)
    return { id: job.id, op: 'carry', update }
  }
  const kind = parseDocName(job.name)?.kind
  if (!kind) throw new Error(`${job.name} is not a document name`)
  if (job.op === 'snapshot') {
    const { update, v1Bytes, liveBytes, state, generation } = replayed(kind, job.updates)
    // Clearly not dominated by tombstones: the live items' bytes stand for the next
    // generation's, which is not built (a 10,000-card board's snapshot job: the process's
    // RSS +129 MB and 1.25 s building it, +115 MB and 1.03 s not).
    if (!state) return { id: job.id, op: 'snapshot', update, v1Bytes, rebasedBytes: liveBytes }
    // The replayed document is let go, and collected, before the new generation is built
    // to be measured: holding both, a 10,000-card board's snapshot took this thread's heap
    // to 193 MB (165 used); letting go alone changed nothing (the collector had not run).
    // Now 134 MB (88 used). A small document is not worth a collection.
    if (update.length >= COLLECT_FROM_BYTES) collectAll()
    const next = rebuiltFrom(kind, state, generation + 1)
    try {
      return {
        id: job.id,
        op: 'snapshot',
        update,
        v1Bytes,
        rebasedBytes: Y.encodeStateAsUpdate(next).length,
      }
    } finally {
      next.destroy()
    }
  }
  const doc = new Y.Doc()
  replay(doc, job.updates)
  try {
    const generation = generationOf(doc)
    const next = rebuilt(kind, doc, generation + 1)
    held.set(job.id, next)
    return {
      id: job.id,
      op: 'rebuild',
      update: Y.encodeStateAsUpdate(next),
      generation,
      stateVector: Y.encodeStateVector(doc),
      base: JSON.stringify(docJson(kind, doc)),
    }
  } finally {
    doc.destroy()
  }
}

/**
 * A document's stored updates replayed: its state as an update in format 2 and its size in
 * format 1 (what the live items' bytes and a re-based size are measured in), its live items'
 * bytes, and, unless it is clearly not dominated by tombstones, its state as plain values.
 */
function replayed(kind: DocKind, updates: Encoded[]) {
  const doc = new Y.Doc()
  try {
    replay(doc, updates)
    const v1Bytes = Y.encodeStateAsUpdate(doc).length
    const live = liveItemBytes(doc)
    return {
      update: Y.encodeStateAsUpdateV2(doc),
      v1Bytes,
      liveBytes: live,
      state: v1Bytes < CLEARLY_LIVE * live ? undefined : liveState(kind, doc),
      generation: generationOf(doc),
    }
  } finally {
    doc.destroy()
  }
}

/** A process started for one job: answers it, then ends. */
if (oneJob) {
  process.once('message', (job: CompactionJob) => {
    let reply: CompactionReply
    try {
      reply = run(job)
    } catch (error) {
      reply = { id: job.id, op: 'failed', error: String(error) }
    }
    process.send?.(reply, undefined, {}, () => process.exit(0))
  })
}

/** The compactor's thread: merges a document's stored updates, replays or rebuilds them. */
parentPort?.on('message', (job: CompactionJob) => {
  try {
    const reply = run(job)
    const transfer = 'update' in reply ? [reply.update.buffer as ArrayBuffer] : []
    parentPort?.postMessage(reply, transfer)
  } catch (error) {
    parentPort?.postMessage({ id: job.id, op: 'failed', error: String(error) })
  }
})
