import { Worker } from 'node:worker_threads'

interface Reply {
  id: number
  snapshot?: Uint8Array
  error?: string
}

/**
 * Merges documents' stored updates, or replays them into snapshots, on a worker thread.
 * Compacting a big board replays all of it (tens to hundreds of milliseconds); on the
 * event loop that would stall every request and broadcast of the process meanwhile. The
 * thread starts with the first compaction, does not keep the process alive, and ends
 * IDLE_MS after its last job: a replay grows its heap to a few times the document, and a
 * thread left idle would keep that memory for ever.
 */
const IDLE_MS = 3_000

export class Compactor {
  private worker: Worker | undefined
  private idleTimer: NodeJS.Timeout | undefined
  private nextId = 0
  private readonly waiting = new Map<
    number,
    { resolve: (snapshot: Uint8Array) => void; reject: (error: Error) => void }
  >()

  /** One snapshot replayed from the updates (deleted content dropped). */
  snapshot(updates: Uint8Array[]): Promise<Uint8Array> {
    return this.run('snapshot', updates)
  }

  /** One update merged from the updates, without a replay. */
  merge(updates: Uint8Array[]): Promise<Uint8Array> {
    return this.run('merge', updates)
  }

  private run(op: 'snapshot' | 'merge', updates: Uint8Array[]): Promise<Uint8Array> {
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = undefined
    const worker = this.start()
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      worker.ref()
      worker.postMessage({ id, op, updates })
    })
  }

  async close(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer)
    const worker = this.worker
    this.worker = undefined
    this.failAll(new Error('compactor closed'))
    await worker?.terminate()
  }

  private start(): Worker {
    if (this.worker) return this.worker
    const worker = new Worker(new URL('./compaction.worker.ts', import.meta.url))
    worker.unref()
    worker.on('message', (reply: Reply) => {
      const job = this.waiting.get(reply.id)
      if (!job) return
      this.waiting.delete(reply.id)
      if (this.waiting.size === 0) {
        worker.unref()
        this.idleTimer = setTimeout(() => {
          if (this.worker !== worker || this.waiting.size > 0) return
          this.worker = undefined
          void worker.terminate()
        }, IDLE_MS)
        this.idleTimer.unref()
      }
      if (reply.snapshot) job.resolve(reply.snapshot)
      else job.reject(new Error(`compaction failed: ${reply.error}`))
    })
    const lost = (error: Error) => {
      if (this.worker !== worker) return
      this.worker = undefined
      this.failAll(error)
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`compactor thread exited with ${code}`)))
    this.worker = worker
    return worker
  }

  private failAll(error: Error): void {
    for (const job of this.waiting.values()) job.reject(error)
    this.waiting.clear()
  }
}
