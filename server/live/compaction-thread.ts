import { type ChildProcess, fork } from 'node:child_process'
import { Worker } from 'node:worker_threads'
import type { CarriedEdit } from '../../shared/rebase.ts'
import {
  type CompactionJob,
  type CompactionReply,
  NORMAL_PRIORITY,
  ONE_JOB,
} from './compaction.worker.ts'
import type { Encoded } from './doc-store.ts'

type Job = CompactionJob extends infer J
  ? J extends { id: number }
    ? Omit<J, 'id'>
    : never
  : never
type Done<Op> = Extract<CompactionReply, { op: Op }>

/**
 * Merges documents' stored updates, or replays them into snapshots, on a worker thread.
 * Compacting a big board replays all of it (tens to hundreds of milliseconds); on the
 * event loop that would stall every request and broadcast of the process meanwhile. The
 * thread starts with the first compaction, does not keep the process alive, and ends
 * IDLE_MS after its last job: a replay grows its heap to a few times the document, and a
 * thread left idle would keep that memory for ever.
 */
const IDLE_MS = 3_000

/**
 * The thread's young generation. A replay builds objects that all live until the document
 * is encoded, so a large young generation only adds pages the process keeps: replaying a
 * 10,000-card board took the process's RSS +226 MB (1.5 s) with V8's default, +129 MB (1.25 s)
 * with this.
 * Old space is left uncapped: a document of any size must replay.
 */
const YOUNG_MB = 8

/**
 * A snapshot of a document this large (its stored updates' bytes) is replayed in a process
 * of its own, which ends with the job. Memory a thread used stays with the server for good
 * (docs/operations.md, "Memory"): a 10,000-card board's replay on the thread left the server
 * +115 MB for ever; a process gives it back when it ends, and costs ~0.2 s to start.
 */
export const OWN_PROCESS_FROM_BYTES = 1024 * 1024

const WORKER = new URL('./compaction.worker.ts', import.meta.url)

export class Compactor {
  /** The thread runs at the lowest priority unless told otherwise (tests that wait on it). */
  private readonly lowPriority: boolean
  private worker: Worker | undefined
  private idleTimer: NodeJS.Timeout | undefined
  private nextId = 0
  /** Next generations the thread keeps (the thread stays while any is kept). */
  private readonly held = new Set<number>()
  /** Processes running one job each (closed with the compactor). */
  private readonly processes = new Set<ChildProcess>()
  /** One such process at a time, as on the thread: each may take a few times its document. */
  private processTurn: Promise<unknown> = Promise.resolve()
  private closed = false
  private readonly waiting = new Map<
    number,
    { resolve: (reply: CompactionReply) => void; reject: (error: Error) => void }
  >()

  constructor(options: { lowPriority?: boolean } = {}) {
    this.lowPriority = options.lowPriority !== false
  }

  /**
   * One snapshot replayed from a document's updates (deleted content dropped), and the size
   * it would have as a new generation (re-based: none of its tombstones).
   */
  async snapshot(updates: Encoded[], name: string): Promise<Done<'snapshot'>> {
    const job: Job = { op: 'snapshot', updates: updates.map(encoded), name }
    const bytes = updates.reduce((sum, u) => sum + u.data.length, 0)
    const reply = bytes >= OWN_PROCESS_FROM_BYTES ? await this.inProcess(job) : await this.run(job)
    return reply as Done<'snapshot'>
  }

  /** Runs one job in a process of its own, which ends with it, once the one before ended. */
  private inProcess(job: Job): Promise<CompactionReply> {
    const turn = this.processTurn.then(() => this.spawned(job))
    this.processTurn = turn.catch(() => {})
    return turn
  }

  private spawned(job: Job): Promise<CompactionReply> {
    if (this.closed) return Promise.reject(new Error('compactor closed'))
    const child = fork(WORKER, [ONE_JOB, ...(this.lowPriority ? [] : [NORMAL_PRIORITY])], {
      execArgv: [`--scavenger-max-new-space-capacity-mb=${YOUNG_MB}`],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    })
    this.processes.add(child)
    return new Promise<CompactionReply>((resolve, reject) => {
      let answered = false
      child.once('message', (reply: CompactionReply) => {
        answered = true
        if (reply.op === 'failed') reject(new Error(`compaction failed: ${reply.error}`))
        else resolve(reply)
      })
      child.once('error', reject)
      child.once('exit', (code, signal) => {
        this.processes.delete(child)
        if (!answered) reject(new Error(`compaction process exited with ${signal ?? code}`))
      })
      child.send({ ...job, id: -1 })
    })
  }

  /** One update merged from the updates, without a replay. */
  async merge(updates: Uint8Array[]): Promise<Uint8Array> {
    return ((await this.run({ op: 'merge', updates })) as Done<'merge'>).update
  }

  /**
   * The next generation of a document from its updates (shared/rebase.ts), kept on the
   * thread under `handle` until released: edits are carried onto it there (carry).
   */
  async rebuild(updates: Encoded[], name: string): Promise<Done<'rebuild'> & { handle: number }> {
    const job: Job = { op: 'rebuild', updates: updates.map(encoded), name }
    const reply = (await this.run(job)) as Done<'rebuild'>
    this.held.add(reply.id)
    return { ...reply, handle: reply.id }
  }

  /**
   * Edits made again on a kept next generation: its whole state after them (in update
   * format 2), or (`whole` false) only what they added (format 1).
   */
  async carry(handle: number, edits: CarriedEdit[], whole: true): Promise<Encoded & { v2: true }>
  async carry(handle: number, edits: CarriedEdit[], whole: false): Promise<Encoded & { v2: false }>
  async carry(handle: number, edits: CarriedEdit[], whole: boolean): Promise<Encoded> {
    const reply = (await this.run({ op: 'carry', handle, edits, whole })) as Done<'carry'>
    return { data: reply.update, v2: whole }
  }

  /** Lets a kept next generation go. */
  async release(handle: number): Promise<void> {
    if (!this.held.delete(handle)) return
    if (this.worker) await this.run({ op: 'release', handle }).catch(() => {})
    else this.idle()
  }

  private run(job: Job): Promise<CompactionReply> {
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = undefined
    const worker = this.start()
    const id = this.nextId++
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      worker.ref()
      worker.postMessage({ ...job, id })
    })
  }

  async close(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer)
    const worker = this.worker
    this.worker = undefined
    this.held.clear()
    this.failAll(new Error('compactor closed'))
    this.closed = true
    // A replay in a process of its own is abandoned too (its job fails as the process ends).
    for (const child of this.processes) child.kill()
    await worker?.terminate()
  }

  private start(): Worker {
    if (this.worker) return this.worker
    const worker = new Worker(WORKER, {
      workerData: { lowPriority: this.lowPriority },
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_MB },
    })
    worker.unref()
    worker.on('message', (reply: CompactionReply) => {
      const job = this.waiting.get(reply.id)
      if (!job) return
      this.waiting.delete(reply.id)
      if (this.waiting.size === 0) {
        worker.unref()
        this.idle()
      }
      if (reply.op === 'failed') job.reject(new Error(`compaction failed: ${reply.error}`))
      else job.resolve(reply)
    })
    const lost = (error: Error) => {
      if (this.worker !== worker) return
      this.worker = undefined
      this.held.clear()
      this.failAll(error)
    }
    worker.on('error', lost)
    worker.on('exit', (code) => lost(new Error(`compactor thread exited with ${code}`)))
    this.worker = worker
    return worker
  }

  /** Ends the thread IDLE_MS after its last job, unless it keeps a next generation. */
  private idle(): void {
    const worker = this.worker
    if (!worker || this.held.size > 0 || this.waiting.size > 0) return
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = setTimeout(() => {
      if (this.worker !== worker || this.waiting.size > 0 || this.held.size > 0) return
      this.worker = undefined
      void worker.terminate()
    }, IDLE_MS)
    this.idleTimer.unref()
  }

  private failAll(error: Error): void {
    for (const job of this.waiting.values()) job.reject(error)
    this.waiting.clear()
  }
}

/** Only the bytes and their format go to the thread (stored rows carry their ids too). */
const encoded = (u: Encoded): Encoded => ({ data: u.data, v2: u.v2 })
