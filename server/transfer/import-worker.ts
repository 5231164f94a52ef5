import { parentPort } from 'node:worker_threads'
import { openDb } from '../../persistence/db.ts'
import { ApiError } from '../errors.ts'
import { importInto } from './import.ts'
import { errorOf, type FromThread, type ImportJob, type ToThread } from './import-thread.ts'

/**
 * An import thread (import-thread.ts): runs one import at a time, each over a connection of
 * its own, reading the archive as the request's thread hands it over and answering once
 * with the report or the error. The request's thread holds the organisation's lane
 * meanwhile.
 */

const port = parentPort
if (!port) throw new Error('import-worker.ts runs as a worker thread')
const send = (message: FromThread) => port.postMessage(message)

/** The import under way: its bytes as they arrive. */
interface Current {
  job: number
  queue: Uint8Array[]
  ended: boolean
  aborted: string | undefined
  wake: (() => void) | undefined
}
let current: Current | undefined

port.on('message', (message: ToThread) => {
  if (message.type === 'start') {
    const { job, type: _, ...rest } = message
    current = { job, queue: [], ended: false, aborted: undefined, wake: undefined }
    void run(current, rest)
    return
  }
  // What was sent for an import already answered is dropped.
  if (message.job !== current?.job) return
  if (message.type === 'chunk') current.queue.push(message.data)
  else if (message.type === 'end') current.ended = true
  else current.aborted = message.message
  current.wake?.()
})

/** The request's bytes, in order; each chunk read asks for one more. */
async function* body(c: Current): AsyncGenerator<Buffer> {
  for (;;) {
    const chunk = c.queue.shift()
    if (chunk) {
      send({ type: 'read', job: c.job })
      yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
      continue
    }
    if (c.aborted !== undefined) {
      throw new ApiError(
        400,
        `The archive's upload stopped before its end (${c.aborted}); nothing was written`,
      )
    }
    if (c.ended) return
    await new Promise<void>((r) => {
      c.wake = r
    })
    c.wake = undefined
  }
}

async function run(c: Current, job: ImportJob): Promise<void> {
  let answer: FromThread
  try {
    // One connection: an import is one transaction.
    const db = await openDb({ databaseUrl: job.databaseUrl, limits: job.limits, maxConnections: 1 })
    try {
      answer = {
        type: 'done',
        job: c.job,
        report: await importInto(db, job.target, body(c), job.options),
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
