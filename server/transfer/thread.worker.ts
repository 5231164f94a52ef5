import { Readable } from 'node:stream'
import { parentPort } from 'node:worker_threads'
import { createGzip } from 'node:zlib'
import { openDb } from '../../persistence/db.ts'
import type { Db } from '../../persistence/types.ts'
import { collectingEvery } from '../collector.ts'
import { ApiError } from '../errors.ts'
import { CHUNKS_AHEAD, ChunkCredit, ChunkQueue, RING_SLOT_BYTES } from './chunks.ts'
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
// Loaded on the request's thread too, once (threads.ts loadThreadModule), only so that the
// compile cache holds it stripped of its types before a thread starts: it serves nothing there.
const send = (message: FromThread, transfer?: ArrayBuffer[]) => port?.postMessage(message, transfer)

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

port?.on('message', (message: ToThread) => {
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

/**
 * What a transfer reads and writes (the database's messages, each stored file's bytes, the
 * archive's pieces) is memory outside this thread's heap, freed only when a collection finds
 * it dead (collector.ts). Measured with smaps over a full-scale export: left alone, glibc's
 * arena for this thread grew +70 MB; with a full collection every 8 MB of archive, +19 to
 * +26 MB, for about a second of collections in a minute's export. A young collection every
 * MB in between frees the pieces that died young before they pile up.
 */
const COLLECT_YOUNG_EVERY = 1024 * 1024
const COLLECT_ALL_EVERY = 8 * 1024 * 1024

/** An archive's pieces as they come (made or read), collected as they pass. */
async function* collected(pieces: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  const passed = collectingEvery(COLLECT_YOUNG_EVERY, COLLECT_ALL_EVERY)
  for await (const piece of pieces) {
    yield piece
    passed(piece.length)
  }
}

/** An export, gzipped, sent a chunk at a time as the reader takes them. */
async function exported(c: Current, db: Db, orgId: string, now: Date): Promise<void> {
  const pieces = collected(exportOrganization({ db, live: asking(c) }, orgId, now))
  const tar = Readable.from(pieces, {
    objectMode: false,
    highWaterMark: 64 * 1024,
  })
  const gzip = createGzip({ chunkSize: RING_SLOT_BYTES })
  tar.on('error', (error) => gzip.destroy(error))
  tar.pipe(gzip)
  // The ring the chunks cross in (threads.ts export): a slot is free again once the
  // request's thread has written what it held ("read").
  const ring = new SharedArrayBuffer(CHUNKS_AHEAD * RING_SLOT_BYTES)
  send({ type: 'ring', job: c.job, ring })
  let slot = 0
  try {
    for await (const chunk of gzip as AsyncIterable<Buffer>) {
      for (let at = 0; at < chunk.length; at += RING_SLOT_BYTES) {
        if (!(await c.credit.take())) return
        const piece = chunk.subarray(at, at + RING_SLOT_BYTES)
        const offset = slot * RING_SLOT_BYTES
        new Uint8Array(ring, offset, piece.length).set(piece)
        send({ type: 'slot', job: c.job, offset, length: piece.length })
        slot = (slot + 1) % CHUNKS_AHEAD
      }
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
          report: await importInto(db, job.target, collected(body(c)), job.options),
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
