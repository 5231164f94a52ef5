import { setPriority } from 'node:os'
import { parentPort } from 'node:worker_threads'
import { snapshotOf } from './doc-store.ts'

// The lowest priority, for this thread only (Linux applies it per thread): on a busy
// machine a compaction waits rather than slowing requests. Nothing to do where refused.
try {
  setPriority(19)
} catch {}

/** The compactor's thread: replays a document's stored updates into one snapshot. */
parentPort?.on('message', (job: { id: number; updates: Uint8Array[] }) => {
  try {
    const snapshot = snapshotOf(job.updates)
    parentPort?.postMessage({ id: job.id, snapshot }, [snapshot.buffer as ArrayBuffer])
  } catch (error) {
    parentPort?.postMessage({ id: job.id, error: String(error) })
  }
})
