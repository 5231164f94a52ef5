import type { Db } from '../../persistence/types.ts'
import type { Logger } from '../http/json.ts'
import { Compactor } from './compaction-thread.ts'
import { asV1, compact, type Encoded, LEVEL } from './doc-store.ts'

/**
 * When to compact a document's stored rows (doc-store.ts), so that a cold load reads at
 * most about MERGE_AFTER + MERGED_MAX + 1 rows however long the document has lived:
 * - every MERGE_AFTER appended rows are merged into one (a merge costs what it merges);
 * - when MERGED_MAX merged rows pile up, or the bytes appended since the last snapshot reach
 *   the snapshot's (at least REPLAY_FROM_BYTES), everything is replayed into a new snapshot.
 *   Merged rows keep what their updates created and deleted (only a replay drops it), so a
 *   few large writes (an import, a bulk archive) would otherwise leave a cold load replaying
 *   several times the document's content and tombstones: 41 rows of 3.7 MB for a board whose
 *   state is 0.87 MB, loading ×2.4 slower than the same board without that history. A
 *   replay costs the whole document, so a bigger document replays less often: amortised,
 *   each appended byte is replayed a bounded number of times.
 * Counters follow this process's appends; rows other processes append are counted when a
 * document loads.
 */
export const MERGE_AFTER = 128
export const MERGED_MAX = 16
/** Below this many appended bytes a replay is not worth it, however small the snapshot. */
export const REPLAY_FROM_BYTES = 256 * 1024

interface DocRows {
  updates: number
  merged: number
  mergedBytes: number
  snapshotBytes: number
  /** Bytes appended since the last snapshot (level-0 and merged rows). */
  sinceSnapshot: number
  running: Promise<void> | undefined
  /** More rows arrived while a compaction ran: look again when it ends. */
  again: boolean
  /** After a failure (storage away), the next attempt waits until then. */
  retryAt: number
}

/** How long compaction leaves a document alone after a failed attempt. */
const RETRY_MS = 5_000
/** How long a compaction that found the document being compacted elsewhere waits (ms). */
const BUSY_RETRY_MS = 2_000

/**
 * A document's stored form is dominated by tombstones when its snapshot is at least twice
 * what the same state re-based would weigh, and the difference worth a re-base (small
 * documents load fast whatever they carry).
 */
export function dominated(snapshotBytes: number, rebasedBytes: number): boolean {
  return snapshotBytes >= 2 * rebasedBytes && snapshotBytes - rebasedBytes >= DOMINATED_MIN_BYTES
}
const DOMINATED_MIN_BYTES = 16 * 1024

export class Compaction {
  private readonly db: Db
  private readonly log: Logger
  readonly compactor: Compactor
  /** Told when a snapshot finds a document dominated by tombstones: re-base it. */
  onDominated: ((docName: string) => void) | undefined
  private readonly docs = new Map<string, DocRows>()
  private readonly running = new Set<Promise<void>>()
  private closed = false

  constructor(db: Db, log: Logger, options: { lowPriority?: boolean } = {}) {
    this.db = db
    this.log = log
    this.compactor = new Compactor(options)
  }

  private state(docName: string): DocRows {
    let s = this.docs.get(docName)
    if (!s) {
      s = {
        updates: 0,
        merged: 0,
        mergedBytes: 0,
        snapshotBytes: 0,
        sinceSnapshot: 0,
        running: undefined,
        again: false,
        retryAt: 0,
      }
      this.docs.set(docName, s)
    }
    return s
  }

  /** A document was loaded with these rows. */
  loaded(docName: string, rows: readonly { level: number; bytes: number }[]): void {
    const s = this.state(docName)
    const updates = rows.filter((r) => r.level === LEVEL.update)
    s.updates = updates.length
    const merged = rows.filter((r) => r.level === LEVEL.merged)
    s.merged = merged.length
    s.mergedBytes = merged.reduce((sum, r) => sum + r.bytes, 0)
    s.snapshotBytes = rows
      .filter((r) => r.level === LEVEL.snapshot)
      .reduce((sum, r) => sum + r.bytes, 0)
    s.sinceSnapshot = s.mergedBytes + updates.reduce((sum, r) => sum + r.bytes, 0)
    this.check(docName, s)
  }

  /** A row of `bytes` was appended to the document. */
  appended(docName: string, bytes: number): void {
    const s = this.state(docName)
    s.updates += 1
    s.sinceSnapshot += bytes
    this.check(docName, s)
  }

  /** The document was re-based: one snapshot row of `bytes` is all it has now. */
  rebased(docName: string, bytes: number): void {
    const s = this.state(docName)
    s.updates = 0
    s.merged = 0
    s.mergedBytes = 0
    s.snapshotBytes = bytes
    s.sinceSnapshot = 0
  }

  /** The document left memory: its counters are read again at its next load. */
  forget(docName: string): void {
    const s = this.docs.get(docName)
    if (s && !s.running) this.docs.delete(docName)
  }

  private check(docName: string, s: DocRows): void {
    if (this.closed) return
    if (s.running) {
      s.again = true
      return
    }
    if (Date.now() < s.retryAt) return
    // Merged rows keep what their updates created and deleted (only a replay drops it):
    // once they, or all that was appended since the snapshot, weigh as much as it, replay.
    const full =
      s.merged >= MERGED_MAX ||
      (s.merged >= 1 && s.mergedBytes >= s.snapshotBytes) ||
      s.sinceSnapshot >= Math.max(s.snapshotBytes, REPLAY_FROM_BYTES)
    if (full) this.run(docName, s, 2)
    else if (s.updates >= MERGE_AFTER) this.run(docName, s, 1)
  }

  private run(docName: string, s: DocRows, level: 1 | 2): void {
    let heavy = false
    const make =
      level === 1
        ? async (u: Encoded[]) => ({ data: await this.compactor.merge(u.map(asV1)), v2: false })
        : async (u: Encoded[]) => {
            const made = await this.compactor.snapshot(u, docName)
            heavy = dominated(made.v1Bytes, made.rebasedBytes)
            return { data: made.update, v2: true }
          }
    const job = compact(this.db, docName, level, make)
      .then((done) => {
        if (done === 'busy') {
          // Another process is compacting it (or it is being re-based): looked at again later.
          s.retryAt = Date.now() + BUSY_RETRY_MS
          return
        }
        if (!done) return
        if (heavy) this.onDominated?.(docName)
        if (level === 1) {
          s.updates = Math.max(0, s.updates - done.replaced)
          s.merged += 1
          s.mergedBytes += done.bytes
        } else {
          s.updates = 0
          s.merged = 0
          s.mergedBytes = 0
          s.snapshotBytes = done.bytes
          s.sinceSnapshot = 0
        }
      })
      .catch((error: unknown) => {
        s.retryAt = Date.now() + RETRY_MS
        if (!this.closed) this.log.error(`compacting ${docName} failed`, error)
      })
      .finally(() => {
        this.running.delete(job)
        s.running = undefined
        if (s.again || level === 1) {
          s.again = false
          this.check(docName, s)
        }
      })
    s.running = job
    this.running.add(job)
  }

  /** Waits for the compactions under way. */
  async settle(): Promise<void> {
    while (this.running.size > 0) await Promise.all(this.running)
  }

  /**
   * Shutdown: compactions still replaying are abandoned (their transactions roll back and
   * the rows stay as they were), so a busy machine starving the low-priority thread never
   * holds a shutdown up; those already writing finish.
   */
  async close(): Promise<void> {
    this.closed = true
    await this.compactor.close()
    await this.settle()
  }
}
