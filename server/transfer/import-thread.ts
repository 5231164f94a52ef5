import { Worker } from 'node:worker_threads'
import type { PostgresLimits } from '../../persistence/types.ts'
import { ApiError } from '../errors.ts'
import type { ImportOptions, ImportReport, ImportTarget, ImportThread } from './import.ts'

/**
 * Imports on a worker thread of their own, over a Postgres connection of their own
 * (import-worker.ts). An import parses, validates and packs hundreds of megabytes: on the
 * event loop that serves everyone, that work delayed every other request, and its garbage
 * grew the server's heap, whose collector lets a large heap grow further before collecting
 * (+190–230 MB of RSS per import). The thread's heap holds only the import, so it stays
 * small, and it is gone when the import ends.
 *
 * The archive's bytes reach the thread as they arrive, a few chunks ahead of what it has
 * read: the request is read no faster than the import writes.
 */

/** The thread's own database settings: where, and the bounds of every wait. */
export interface ImportThreadOptions {
  databaseUrl: string
  limits: Omit<PostgresLimits, 'onAvailability'>
}

/** An import, as the thread is asked to run it. */
export interface ImportJob extends ImportThreadOptions {
  target: ImportTarget
  options: ImportOptions
}

/**
 * From the request to the thread: an import's start, then its bytes. Every message names
 * its import: a thread that answered one already (a refused archive) ignores what was sent
 * for it after.
 */
export type ToThread = { job: number } & (
  | ({ type: 'start' } & ImportJob)
  | { type: 'chunk'; data: Uint8Array }
  | { type: 'end' }
  | { type: 'abort'; message: string }
)

/** From the thread. */
export type FromThread = { job: number } & (
  | { type: 'read' }
  | { type: 'done'; report: ImportReport }
  | { type: 'failed'; error: ThreadError }
)

/** An error as it crosses to the request's thread: an ApiError's answer, or a cause with its code. */
export interface ThreadError {
  message: string
  status?: number | undefined
  extra?: Record<string, unknown> | undefined
  code?: string | undefined
}

/** How many chunks of the request may wait in the thread's queue, not yet read. */
export const CHUNKS_AHEAD = 8

/** How long a thread is kept after its import, for the next one. */
const KEEP_MS = 60_000

/**
 * The thread's heap. Its live set is one batch of cards and one record being read (a few
 * MB); capped, its collector runs before garbage piles up, where the server's own heap,
 * sized for everything it serves, let an import grow it by ~200 MB (measured,
 * `npm run bench -- export`: +209 MB uncapped, +63 MB so, 20 % slower).
 */
const HEAP = { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 8 }

const WORKER = new URL('./import-worker.ts', import.meta.url)

export function errorOf(error: unknown): ThreadError {
  if (error instanceof ApiError) {
    return { message: error.message, status: error.status, extra: error.extra }
  }
  const code = (error as { code?: unknown } | null)?.code
  return {
    message: error instanceof Error ? error.message : String(error),
    code: typeof code === 'string' ? code : undefined,
  }
}

function thrown(error: ThreadError): Error {
  if (error.status !== undefined) return new ApiError(error.status, error.message, error.extra)
  return Object.assign(new Error(error.message), error.code ? { code: error.code } : {})
}

/**
 * Imports on threads of their own. One thread is kept for KEEP_MS after its import ends, so
 * a preview and the import that follows it (the app's Settings → Data sends both) share
 * it: a thread costs ~40 MB to start (its heap, the modules, the type stripper); imports
 * running at once each get one, and those beyond the kept one end with their import.
 */
export class ImportThreads implements ImportThread {
  private readonly settings: ImportThreadOptions
  private idle: { worker: Worker; timer: NodeJS.Timeout } | undefined
  private readonly busy = new Set<Worker>()
  private jobs = 0

  constructor(settings: ImportThreadOptions) {
    this.settings = settings
  }

  run(
    target: ImportTarget,
    body: AsyncIterable<Buffer> | Iterable<Buffer>,
    options: ImportOptions,
  ): Promise<ImportReport> {
    const worker = this.take()
    this.jobs += 1
    const job = this.jobs
    return new Promise<ImportReport>((resolve, reject) => {
      let settled = false
      let credit = CHUNKS_AHEAD
      let wake: (() => void) | undefined
      const send = (message: ToThread, transfer?: ArrayBuffer[]) =>
        worker.postMessage(message, transfer)
      const settle = (fn: () => void, reusable: boolean) => {
        if (settled) return
        settled = true
        wake?.()
        worker.off('message', onMessage)
        worker.off('error', onError)
        worker.off('exit', onExit)
        this.busy.delete(worker)
        if (reusable) this.giveBack(worker)
        else void worker.terminate()
        fn()
      }
      const onMessage = (message: FromThread) => {
        if (message.job !== job) return
        if (message.type === 'read') {
          credit += 1
          wake?.()
        } else if (message.type === 'done') {
          settle(() => resolve(message.report), true)
        } else {
          settle(() => reject(thrown(message.error)), true)
        }
      }
      const onError = (error: Error) =>
        settle(
          () =>
            reject(
              (error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY'
                ? new ApiError(
                    413,
                    `The archive holds a record larger than an import can read (its memory, ${HEAP.maxOldGenerationSizeMb} MB, ran out); nothing was written`,
                  )
                : error,
            ),
          false,
        )
      const onExit = (code: number) =>
        settle(() => reject(new Error(`The import's thread stopped (exit code ${code})`)), false)
      worker.on('message', onMessage)
      worker.on('error', onError)
      worker.on('exit', onExit)
      send({ type: 'start', job, ...this.settings, target, options })
      void (async () => {
        try {
          for await (const chunk of body) {
            while (credit === 0 && !settled) {
              await new Promise<void>((r) => {
                wake = r
              })
            }
            if (settled) return
            credit -= 1
            // A copy of its own, moved rather than copied again: a request's chunk may
            // share its memory with others.
            const data = new Uint8Array(chunk)
            send({ type: 'chunk', job, data }, [data.buffer])
          }
          if (!settled) send({ type: 'end', job })
        } catch (error) {
          // The request failed (the client went away, its body was cut): the thread's
          // transaction rolls back, and its answer is this error.
          if (!settled) {
            send({
              type: 'abort',
              job,
              message: error instanceof Error ? error.message : String(error),
            })
          }
        }
      })()
    })
  }

  /** Ends every thread (the server closing): imports under way fail, and roll back. */
  async close(): Promise<void> {
    const workers = [...this.busy, ...(this.idle ? [this.idle.worker] : [])]
    if (this.idle) clearTimeout(this.idle.timer)
    this.idle = undefined
    this.busy.clear()
    await Promise.all(workers.map((w) => w.terminate()))
  }

  private take(): Worker {
    let worker: Worker
    if (this.idle) {
      clearTimeout(this.idle.timer)
      worker = this.idle.worker
      this.idle = undefined
    } else {
      worker = new Worker(WORKER, { resourceLimits: HEAP })
      // Its failures reach the import that uses it; between imports there are none to see.
      worker.on('error', () => {})
    }
    worker.ref()
    this.busy.add(worker)
    return worker
  }

  private giveBack(worker: Worker): void {
    if (this.idle) {
      void worker.terminate()
      return
    }
    // An idle thread keeps no process alive.
    worker.unref()
    const timer = setTimeout(() => {
      if (this.idle?.worker !== worker) return
      this.idle = undefined
      void worker.terminate()
    }, KEEP_MS)
    timer.unref()
    this.idle = { worker, timer }
  }
}
