import { Worker } from 'node:worker_threads'
import type { PostgresLimits } from '../../persistence/types.ts'
import { collectingEvery } from '../collector.ts'
import { ApiError } from '../errors.ts'
import { ChunkCredit, ChunkQueue } from './chunks.ts'
import type { ExportLive } from './export.ts'
import type { ImportOptions, ImportReport, ImportTarget, ImportThread } from './import.ts'

/**
 * Exports and imports on worker threads of their own, each over a Postgres connection of
 * its own (thread.worker.ts). Either moves hundreds of megabytes through JSON, hashes,
 * gzip and the database driver's hex: on the event loop that serves everyone, that work
 * delayed every other request, and its garbage grew the server's heap, whose collector
 * lets a large heap grow further before collecting (+190–230 MB of RSS per import, up to
 * +250 MB per export). A thread's heap holds one transfer and is capped, so it collects
 * early and stays small.
 *
 * One thread is kept KEEP_MS after its transfer ends, for the next (the app's preview of
 * an import and the import itself, an export and the one after): a thread costs ~48 MB to
 * start (its heap, the modules, the type stripper). Transfers running at once each get
 * one; those beyond the kept one end with their transfer.
 *
 * Bytes cross in chunks, a few ahead of what the other side has taken: an import reads
 * the request no faster than it writes, an export reads storage no faster than the
 * client downloads.
 */

/** The threads' own database settings: where, and the bounds of every wait. */
export interface ThreadSettings {
  databaseUrl: string
  limits: Omit<PostgresLimits, 'onAvailability'>
}

/** A transfer. */
export type Transfer =
  | { kind: 'import'; target: ImportTarget; options: ImportOptions }
  | { kind: 'export'; orgId: string; now: string }

/** A transfer, as a thread is asked to run it. */
export type Job = ThreadSettings & Transfer

/** What an export asks the request's thread, which holds the live documents. */
export type Ask =
  | { what: 'flushPeople'; orgId: string }
  | { what: 'board'; orgId: string }
  | { what: 'map'; orgId: string; mapId: string }

/**
 * To a thread: a transfer's start, then its bytes (an import's) or its reader's pace (an
 * export's), and the answers to what it asked. Every message names its transfer: a thread
 * that ended one already (a refused archive) ignores what was sent for it after.
 */
export type ToThread = { job: number } & (
  | { type: 'start'; run: Job }
  | { type: 'chunk'; data: Uint8Array }
  | { type: 'end' }
  | { type: 'abort'; message: string }
  | { type: 'read' }
  | { type: 'answer'; ask: number; value?: unknown; error?: ThreadError }
)

/** From a thread. */
export type FromThread = { job: number } & (
  | { type: 'read' }
  | { type: 'ring'; ring: SharedArrayBuffer }
  | { type: 'slot'; offset: number; length: number }
  | { type: 'ask'; ask: number; question: Ask }
  | { type: 'done'; report?: ImportReport }
  | { type: 'failed'; error: ThreadError }
)

/** An export's bytes: chunks to write, and `written` to call as each has gone. */
export interface ExportChunks {
  chunks: AsyncIterable<Buffer>
  written: () => void
}

/** An error as it crosses threads: an ApiError's answer, or a cause with its code. */
export interface ThreadError {
  message: string
  status?: number | undefined
  extra?: Record<string, unknown> | undefined
  code?: string | undefined
}

/** How long a thread is kept after its transfer, for the next one. */
const KEEP_MS = 60_000

/**
 * A thread's heap. Its live set is one batch of cards, one record or one page being read (a
 * few MB); capped, its collector runs before garbage piles up.
 */
const HEAP = { maxOldGenerationSizeMb: 128, maxYoungGenerationSizeMb: 8 }

/** How much of an import's body passes before this thread's young generation is collected. */
const MAIN_COLLECT_YOUNG_EVERY = 4 * 1024 * 1024

const WORKER = new URL('./thread.worker.ts', import.meta.url)

/**
 * Loads the thread's module on this thread, where it serves nothing: main.ts does it once
 * at start so that the compile cache holds it before a thread starts.
 */
export function loadThreadModule(): Promise<unknown> {
  return import(WORKER.href)
}

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

export function thrown(error: ThreadError): Error {
  if (error.status !== undefined) return new ApiError(error.status, error.message, error.extra)
  return Object.assign(new Error(error.message), error.code ? { code: error.code } : {})
}

/** An import's thread failing: out of memory, the archive holds a record too large to read. */
function importFailure(error: Error): Error {
  return (error as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY'
    ? new ApiError(
        413,
        `The archive holds a record larger than an import can read (its memory, ${HEAP.maxOldGenerationSizeMb} MB, ran out); nothing was written`,
      )
    : error
}

/** One transfer's use of a thread: its messages, and how it ends. */
interface Use {
  job: number
  send(message: ToThread, transfer?: ArrayBuffer[]): void
  /** Ends the use: the thread is kept for the next transfer when it is still sound. */
  end(reusable: boolean): void
}

export class TransferThreads implements ImportThread {
  private readonly settings: ThreadSettings
  private idle: { worker: Worker; timer: NodeJS.Timeout } | undefined
  private readonly busy = new Set<Worker>()
  private jobs = 0

  constructor(settings: ThreadSettings) {
    this.settings = settings
  }

  /** An import (import.ts importInto) on a thread: same arguments, answer and errors. */
  run(
    target: ImportTarget,
    body: AsyncIterable<Buffer> | Iterable<Buffer>,
    options: ImportOptions,
  ): Promise<ImportReport> {
    return new Promise<ImportReport>((resolve, reject) => {
      let settled = false
      const credit = new ChunkCredit()
      const settle = (fn: () => void, reusable: boolean) => {
        if (settled) return
        settled = true
        credit.close()
        use.end(reusable)
        fn()
      }
      const use = this.use(
        { kind: 'import', target, options },
        (message) => {
          if (message.type === 'read') credit.read()
          else if (message.type === 'done') {
            settle(() => resolve(message.report as ImportReport), true)
          } else if (message.type === 'failed') {
            settle(() => reject(thrown(message.error)), true)
          }
        },
        (error) => settle(() => reject(importFailure(error)), false),
      )
      // The socket's reads a request's chunks were parsed from die here, young: collected
      // every few MB, or they pile up (38 MB of them over a full-scale import's files).
      const passed = collectingEvery(MAIN_COLLECT_YOUNG_EVERY, 0)
      void (async () => {
        try {
          for await (const chunk of body) {
            passed(chunk.length)
            if (!(await credit.take())) return
            // Moved to the thread, not copied: a chunk left here would be freed only when
            // this thread's collector gets to it, and this thread, whose heap is large,
            // collects seldom (an import's files grew its memory +50 MB that way). A
            // request's chunk has memory of its own (the HTTP parser copies each); one that
            // shares its memory with others is copied first.
            const data =
              chunk.byteOffset === 0 && chunk.byteLength === chunk.buffer.byteLength
                ? chunk
                : new Uint8Array(chunk)
            use.send({ type: 'chunk', job: use.job, data }, [data.buffer as ArrayBuffer])
          }
          if (!settled) use.send({ type: 'end', job: use.job })
        } catch (error) {
          // The request failed (the client went away, its body was cut): the thread's
          // transaction rolls back, and its answer is this error.
          if (!settled) {
            use.send({
              type: 'abort',
              job: use.job,
              message: error instanceof Error ? error.message : String(error),
            })
          }
        }
      })()
    })
  }

  /**
   * An export (export.ts exportOrganization, gzipped) on a thread: the archive's bytes as
   * the thread makes them; what it reads of the live documents it asks `live` for here.
   * Stopping early (the client went away) stops the thread's export.
   *
   * The chunks are views of a ring the thread shares (CHUNKS_AHEAD slots): `written` must
   * be called as each has gone to the connection, in order, which gives its slot back.
   * Nothing is allocated per chunk on either side: chunks sent as memory of their own
   * would be freed only when this thread's collector ran, and with its large heap that is
   * seldom (40-55 MB of them piled up during a full-scale export, and the allocator kept
   * that memory after).
   */
  export(orgId: string, now: Date, live: ExportLive): ExportChunks {
    let use: Use | undefined
    let used = false
    const written = () => {
      if (use && !used) use.send({ type: 'read', job: use.job })
    }
    const start = async function* (this: TransferThreads): AsyncGenerator<Buffer> {
      const queue = new ChunkQueue()
      let ring: SharedArrayBuffer | undefined
      const finish = (reusable: boolean, error?: Error) => {
        if (used) return
        used = true
        queue.finish(error)
        use?.end(reusable)
      }
      const current = this.use(
        { kind: 'export', orgId, now: now.toISOString() },
        (message) => {
          if (message.type === 'ring') ring = message.ring
          else if (message.type === 'slot' && ring) {
            queue.push(new Uint8Array(ring, message.offset, message.length))
          } else if (message.type === 'ask') {
            void answer(live, message.question).then(
              (value) =>
                current.send({ type: 'answer', job: current.job, ask: message.ask, value }),
              (error: unknown) =>
                current.send({
                  type: 'answer',
                  job: current.job,
                  ask: message.ask,
                  error: errorOf(error),
                }),
            )
          } else if (message.type === 'done') finish(true)
          else if (message.type === 'failed') finish(true, thrown(message.error))
        },
        (error) => finish(false, error),
      )
      use = current
      try {
        yield* queue.chunks(() => {})
      } finally {
        if (!used) {
          // The reader stopped (the download was cut): the thread stops too.
          current.send({ type: 'abort', job: current.job, message: 'the download stopped' })
          finish(true)
        }
      }
    }
    return { chunks: start.call(this), written }
  }

  /** Ends every thread (the server closing): transfers under way fail, and roll back. */
  async close(): Promise<void> {
    const workers = [...this.busy, ...(this.idle ? [this.idle.worker] : [])]
    if (this.idle) clearTimeout(this.idle.timer)
    this.idle = undefined
    this.busy.clear()
    await Promise.all(workers.map((w) => w.terminate()))
  }

  /** A thread for one transfer, started on `run`. */
  private use(
    run: Transfer,
    onMessage: (message: FromThread) => void,
    onFailure: (error: Error) => void,
  ): Use {
    const worker = this.take()
    this.jobs += 1
    const job = this.jobs
    const message = (m: FromThread) => {
      if (m.job === job) onMessage(m)
    }
    const exit = (code: number) =>
      onFailure(new Error(`The transfer's thread stopped (exit code ${code})`))
    worker.on('message', message)
    worker.on('error', onFailure)
    worker.on('exit', exit)
    const use: Use = {
      job,
      send: (m, transfer) => worker.postMessage(m, transfer),
      end: (reusable) => {
        worker.off('message', message)
        worker.off('error', onFailure)
        worker.off('exit', exit)
        this.busy.delete(worker)
        if (reusable) this.giveBack(worker)
        else void worker.terminate()
      },
    }
    use.send({ type: 'start', job, run: { ...this.settings, ...run } })
    return use
  }

  private take(): Worker {
    let worker: Worker
    if (this.idle) {
      clearTimeout(this.idle.timer)
      worker = this.idle.worker
      this.idle = undefined
    } else {
      worker = new Worker(WORKER, { resourceLimits: HEAP })
      // Its failures reach the transfer that uses it; between transfers there are none.
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

/** What an export's thread asked of the live documents. */
function answer(live: ExportLive, question: Ask): Promise<unknown> {
  if (question.what === 'flushPeople') return live.flushPeople(question.orgId)
  if (question.what === 'board') return live.board(question.orgId)
  return live.map(question.orgId, question.mapId)
}
