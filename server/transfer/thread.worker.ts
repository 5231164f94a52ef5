import { Readable } from 'node:stream'
import { parentPort } from 'node:worker_threads'
import { createGzip } from 'node:zlib'
import { openDb } from '../../persistence/db.ts'
import type { Db } from '../../persistence/types.ts'
import { ApiError } from '../errors.ts'
import { ChunkCredit, ChunkQueue } from './chunks.ts'
import { type BoardJson, type ExportLive, exportOrganization, type MapJson } from './export.ts'
import {
  type Ask,
  errorOf,
  type FromThread,
  type Job,
  type ThreadError,
  type ToThread,
  thrown,
} from './threads.ts'

/**
 * A transfer thread (threads.ts): runs one export or import at a time, each over a
 * connection of its own, and answers once, with the report or the error. The request's
 * thread holds the organisation's lane meanwhile (an import), and answers what an export
 * asks of the live documents.
 */

const port = parentPort
if (!port) throw new Error('thread.worker.ts runs as a worker thread')
const send = (message: FromThread, transfer?: ArrayBuffer[]) => port.postMessage(message, transfer)

/** The transfer under way: the bytes that arrive (an import's), the reader's pace (an export's). */
interface Current {
  job: number
  bytes: ChunkQueue
  credit: ChunkCredit
  /** Why the request's thread stopped the transfer, once it did. */
  aborted: string | undefined
  asks: Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>
}
let current: Current | undefined

port.on('message', (message: ToThread) => {
  if (message.type === 'start') {
    current = {
      job: message.job,
      bytes: new ChunkQueue(),
      credit: new ChunkCredit(),
      aborted: undefined,
      asks: new Map(),
    }
    void run(current, message.run)
    return
  }
  // What was sent for a transfer already ended is dropped.
  const c = current
  if (message.job !== c?.job) return
  if (message.type === 'chunk') c.bytes.push(message.data)
  else if (message.type === 'end') c.bytes.finish()
  else if (message.type === 'abort') {
    c.aborted = message.message
    c.bytes.finish(
      new ApiError(
        400,
        `The archive's upload stopped before its end (${message.message}); nothing was written`,
      ),
    )
    c.credit.close()
    for (const ask of c.asks.values()) ask.reject(new Error(message.message))
  } else if (message.type === 'read') c.credit.read()
  else if (message.type === 'answer') {
    const ask = c.asks.get(message.ask)
    c.asks.delete(message.ask)
    if (message.error) ask?.reject(thrown(message.error as ThreadError))
    else ask?.resolve(message.value)
  }
})

/** An import's bytes, in order; each chunk read asks for one more. */
const body = (c: Current) => c.bytes.chunks(() => send({ type: 'read', job: c.job }))

/** What an export reads of the live documents, asked of the request's thread. */
function asking(c: Current): ExportLive {
  let asks = 0
  const ask = <T>(question: Ask) =>
    new Promise<T>((resolve, reject) => {
      if (c.aborted !== undefined) {
        reject(new Error(c.aborted))
        return
      }
      asks += 1
      c.asks.set(asks, { resolve: resolve as (value: unknown) => void, reject })
      send({ type: 'ask', job: c.job, ask: asks, question })
    })
  return {
    flushPeople: (orgId) => ask<void>({ what: 'flushPeople', orgId }),
    board: (orgId) => ask<BoardJson>({ what: 'board', orgId }),
    map: (orgId, mapId) => ask<MapJson>({ what: 'map', orgId, mapId }),
  }
}

/** An export, gzipped, sent a chunk at a time as the reader takes them. */
async function exported(c: Current, db: Db, orgId: string, now: Date): Promise<void> {
  const tar = Readable.from(exportOrganization({ db, live: asking(c) }, orgId, now), {
    objectMode: false,
    highWaterMark: 64 * 1024,
  })
  const gzip = createGzip()
  tar.on('error', (error) => gzip.destroy(error))
  tar.pipe(gzip)
  try {
    for await (const chunk of gzip as AsyncIterable<Buffer>) {
      if (!(await c.credit.take())) return
      const data = new Uint8Array(chunk)
      send({ type: 'chunk', job: c.job, data }, [data.buffer])
    }
  } finally {
    tar.destroy()
  }
}

async function run(c: Current, job: Job): Promise<void> {
  let answer: FromThread
  try {
    // One connection: an import is one transaction, an export one page after another.
    const db = await openDb({ databaseUrl: job.databaseUrl, limits: job.limits, maxConnections: 1 })
    try {
      if (job.kind === 'import') {
        // Loaded when first needed: a thread that only exports never loads the importer
        // (Yjs, the schemas): a thread starts in 48 MB where it took 64.
        const { importInto } = await import('./import.ts')
        answer = {
          type: 'done',
          job: c.job,
          report: await importInto(db, job.target, body(c), job.options),
        }
      } else {
        await exported(c, db, job.orgId, new Date(job.now))
        answer = { type: 'done', job: c.job }
      }
    } finally {
      await db.close().catch(() => {})
    }
  } catch (error) {
    answer = { type: 'failed', job: c.job, error: errorOf(error) }
  }
  if (current === c) current = undefined
  send(answer)
}
