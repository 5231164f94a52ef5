import { setPriority } from 'node:os'
import { parentPort } from 'node:worker_threads'
import { mergedOf, snapshotOf } from './doc-store.ts'

// The lowest priority, for this thread only (Linux applies it per thread): on a busy
// machine a compaction waits rather than slowing requests. Nothing to do where refused.
try {
  setPriority(19)
} catch {}

/** The compactor's thread: merges a document's stored updates, or replays them into a snapshot. */
parentPort?.on(
  'message',
  (job: { id: number; op: 'snapshot' | 'merge'; updates: Uint8Array[] }) => {
    try {
      const snapshot = job.op === 'merge' ? mergedOf(job.updates) : snapshotOf(job.updates)
      parentPort?.postMessage({ id: job.id, snapshot }, [snapshot.buffer as ArrayBuffer])
    } catch (error) {
      parentPort?.postMessage({ id: job.id, error: String(error) })
    }
  },
)
