import { AsyncLocalStorage } from 'node:async_hooks'
import type { Document } from '@hocuspocus/server'
import * as Y from 'yjs'
import {
  isBusyError,
  isConnectionError,
  StorageUnavailable,
} from '../../persistence/availability.ts'
import type { Db, Queryable, Transaction } from '../../persistence/types.ts'
import { CLOSE } from '../../shared/live-protocol.ts'
import { generationOf } from '../../shared/rebase.ts'
import { ApiError } from '../errors.ts'
import type { Logger } from '../http/json.ts'
import { currentRequest } from '../http/request-context.ts'
import type { Metrics } from '../metrics/metrics.ts'
import { historyActor } from './card-history.ts'
import type { Compaction } from './compaction.ts'
import { type DocEntry, type DocRegistry, gone } from './doc-registry.ts'
import type { EventSink } from './events.ts'
import { type Batch, type BatchMember, lastStatement, newBatch } from './group-commit.ts'
import { drop, heldUpdates, hold, release } from './hold.ts'
import { LaneGate } from './lane-gate.ts'
import { type WriteOrigin, type WriteTransactionOrigin, writeTransaction } from './origins.ts'
import { PeoplePending, type TakenPeople } from './pending-edits.ts'
import {
  asKeyRefused,
  ClaimMoved,
  IdempotencyTakenOver,
  isClaimMoved,
  KeyRefused,
  keyRevoked,
  rebasedDocOf,
  recordsNothing,
  recordWrites,
  type WriteRecord,
} from './write-record.ts'
import { WriteCollector, type WriteScope } from './write-scope.ts'

export interface LaneServices {
  db: Db
  registry: DocRegistry
  compaction: Compaction
  log: Logger
  /** Where writes' events go (the webhooks module); without it events are dropped. */
  eventSink(): EventSink | undefined
  metrics?: Metrics | undefined
  /** How long people's edits wait to be stored together when no write takes them (ms). */
  peopleFlushMs?: number | undefined
  /**
   * Whether writes decide claims of cards on the board from the board document now, checked
   * by the batch (claims/batch.ts): when no other process shares the organisation (no
   * Redis), or scaled out while this process serves its agents (owners.ts). Otherwise claims
   * are decided in Postgres inside each write's transaction. Always so when absent.
   */
  claimsInMemory?: (() => boolean) | undefined
}

/** One write in flight in its lane, from the gate to its commit. */
interface LaneWrite {
  origin: WriteOrigin
  marker: WriteTransactionOrigin
  /** The lane's generation when it began (a recovery in between means it cannot commit). */
  generation: number
  /** Settles once every write computed before it has committed (true) or one failed (false). */
  previous: Promise<boolean>
  /** Settles this write's link of the chain. */
  settle(ok: boolean): void
  /** The documents its updates are held in (dirty until it is stored). */
  docs: Set<string>
  computing: boolean
  scope: WriteCollector | undefined
  /** The people's edits it took, stored ahead of it. */
  people: TakenPeople | undefined
  peopleSettled: boolean
  /** Its place in a batch, when it joined one. */
  member: BatchMember | undefined
  /** What it stores in a transaction of its own, when it joined no batch. */
  storedAlone: WriteRecord[] | undefined
  /** When it sent the commit statement of its batch, or its own (performance.now()). */
  commitAt: number | undefined
}

/** How many times a write refused for a claim decision (ClaimMoved) is computed again. */
const CLAIM_RETRIES = 10
/** How long a lane's writes decide claims in Postgres after one was refused (ms). */
const CLAIMS_IN_STORAGE_MS = 1_000
/** How long people's edits wait to be stored together when no write comes to take them. */
const PEOPLE_FLUSH_MS = 50
/** How long a failed attempt to store people's edits waits before the next. */
const PEOPLE_RETRY_MS = 1_000

/** The lanes whose write the current async context is computing (a read there would wait for itself). */
const insideWrite = new AsyncLocalStorage<OrgLane>()

/**
 * One organisation's write path: every server write to the organisation's documents (the
 * board, its cards', its maps), and the storing of people's edits, go through here, in one
 * order.
 *
 * A write is computed on the live documents under the gate (gate.ts) and its updates are
 * held from everyone (hold.ts) until its transaction committed; then they reach the
 * documents' connections, in the order the writes were computed. Writes computed while an
 * earlier one commits are stored together in one statement and one commit (group commit).
 * If a commit fails, every write computed on top of it fails too, and the documents that
 * held their updates are evicted and reloaded from storage: an uncommitted change is never
 * seen, and none stays in memory.
 */
export class OrgLane {
  readonly orgId: string
  readonly gate = new LaneGate()
  readonly people = new PeoplePending()
  private readonly services: LaneServices
  /**
   * Settles once every write computed so far has committed (true) or once one of them
   * failed (false). A write waits for it before its own commit.
   */
  private committed: Promise<boolean> = Promise.resolve(true)
  /** Bumped by each recovery: writes computed before it cannot commit. */
  private generation = 0
  /** The batch that writes computed now join; undefined once it is sent. */
  private batch: Batch | undefined
  /** Per document, how many writes of this generation hold updates in it. */
  private dirty = new Map<string, number>()
  private flushTimer: NodeJS.Timeout | undefined
  /** Why the last write that broke the chain failed (the writes built on it fail alike). */
  private lastFailure: unknown

  constructor(orgId: string, services: LaneServices) {
    this.orgId = orgId
    this.services = services
  }

  /** Writes and reads under way, from their first step (loading documents, before the gate). */
  private active = 0
  /** Until when (performance.now()) writes decide claims in Postgres, after a ClaimMoved. */
  private claimsInStorageUntil = 0

  /** True when nothing is pending, running or waiting: the lane can be forgotten. */
  get idle(): boolean {
    return (
      this.active === 0 && this.gate.idle && this.people.size === 0 && this.flushTimer === undefined
    )
  }

  /**
   * Runs `fn` as one write: inside one Postgres transaction (holding the agent's key FOR
   * SHARE so a revocation waits for it), with the exact update bytes, change rows, history
   * rows and events of the write (and people's edits pending before it) stored in that
   * transaction, and the updates shown to anyone only after the commit.
   */
  async write<T>(
    primary: string | undefined,
    origin: WriteOrigin,
    fn: (scope: WriteScope) => Promise<T>,
    opens: readonly string[] = [],
  ): Promise<T> {
    const entries = new Map<string, DocEntry>()
    const acquire = async (name: string): Promise<DocEntry> => {
      const held = entries.get(name)
      if (held && !gone(held)) return held
      const entry = await this.services.registry.acquire(name)
      if (held) this.services.registry.release(held)
      entries.set(name, entry)
      return entry
    }
    const names = [...new Set([...(primary ? [primary] : []), ...opens])]
    this.active += 1
    try {
      // Loaded before the gate: a load waits on storage, and nobody should wait meanwhile.
      for (const name of names) await acquire(name)
      // A write refused because a claim decision of its batch no longer held (or built on
      // one) stored nothing: it is computed again on the stored state, deciding claims in
      // Postgres this time. Another process is then changing the same claims: the lane's
      // writes decide them in Postgres for a while, rather than be refused again.
      for (let attempt = 0; ; attempt++) {
        try {
          const inStorage =
            this.services.claimsInMemory?.() === false ||
            attempt > 0 ||
            performance.now() < this.claimsInStorageUntil
          return await this.compute(primary, names, origin, entries, acquire, fn, inStorage)
        } catch (error) {
          if (!(error instanceof ClaimMoved) || attempt >= CLAIM_RETRIES) throw error
          if (performance.now() >= this.claimsInStorageUntil) {
            this.services.log.info(
              `a claim of ${this.orgId} changed on another process: its writes decide claims in Postgres for ${CLAIMS_IN_STORAGE_MS} ms`,
            )
          }
          this.claimsInStorageUntil = performance.now() + CLAIMS_IN_STORAGE_MS
        }
      }
    } finally {
      this.active -= 1
      for (const entry of entries.values()) this.services.registry.release(entry)
    }
  }

  private async compute<T>(
    primary: string | undefined,
    names: readonly string[],
    origin: WriteOrigin,
    entries: ReadonlyMap<string, DocEntry>,
    acquire: (name: string) => Promise<DocEntry>,
    fn: (scope: WriteScope) => Promise<T>,
    claimsInStorage = false,
  ): Promise<T> {
    await this.gate.write()
    const write = this.begin(origin)
    try {
      // Documents evicted while this write waited are loaded again, still outside its
      // transaction.
      for (const name of names) await acquire(name)
      const docs = new Map([...entries].map(([name, e]) => [name, e.doc as Y.Doc]))
      const result = await this.services.db.transaction(async (tx) => {
        const scope = new WriteCollector({
          tx,
          origin,
          main: primary ? docs.get(primary) : undefined,
          docs,
          marker: write.marker,
          pendingArchived: () => this.people.archivedAll(),
          earlierCommitted: () => this.earlierCommitted(write),
          claimsInStorage,
        })
        write.scope = scope
        const value = await insideWrite.run(this, () => fn(scope))
        await this.store(tx, write, scope)
        return value
      })
      this.observeCommit(write, 'committed')
      await this.stored(write)
      write.settle(true)
      this.clean(write.docs, write.generation)
      for (const f of write.scope?.after ?? []) f()
      return result
    } catch (error) {
      throw await this.failed(write, error)
    }
  }

  /** Starts a write that may now compute: its transaction origin held, its place in the chain. */
  private begin(origin: WriteOrigin): LaneWrite {
    const marker = writeTransaction(origin)
    hold(marker)
    const previous = this.committed
    let settle!: (ok: boolean) => void
    this.committed = new Promise<boolean>((resolve) => {
      settle = resolve
    })
    const write: LaneWrite = {
      origin,
      marker,
      generation: this.generation,
      previous,
      settle,
      docs: new Set(),
      computing: true,
      scope: undefined,
      people: undefined,
      peopleSettled: false,
      member: undefined,
      storedAlone: undefined,
      commitAt: undefined,
    }
    return write
  }

  /** The write has computed: the documents it changed are dirty until it is stored. */
  private computed(write: LaneWrite): void {
    if (!write.computing) return
    write.computing = false
    for (const h of heldUpdates(write.marker)) write.docs.add(h.doc.name)
    for (const name of write.docs) this.dirty.set(name, (this.dirty.get(name) ?? 0) + 1)
    this.gate.computed(write.docs.size > 0)
  }

  /** Waits for the writes computed before this one; built on one that failed, it fails alike. */
  private async earlierCommitted(write: LaneWrite): Promise<void> {
    if (await write.previous) return
    // A 503 when the database was away, which says nothing was written.
    const cause = this.lastFailure
    if (isClaimMoved(cause)) throw new ClaimMoved()
    if (isConnectionError(cause)) throw new StorageUnavailable(cause)
    // The database was busy (a lock or a statement timed out): a 503 as well, nothing written.
    if (isBusyError(cause)) throw cause
    const rebased = rebasedDocOf(cause)
    if (rebased) throw documentRebased(rebased)
    // Built on a write refused as one to send again (503: nothing was written), it is too.
    if (cause instanceof ApiError && cause.status === 503) throw cause
    throw new Error(
      `an earlier write of ${this.orgId} failed to commit; this one was built on it`,
      { cause },
    )
  }

  /** The people's edits a write took: stored with it, or put back for the next attempt. */
  private settlePeople(write: LaneWrite, stored: boolean): void {
    const { people } = write
    if (!people || write.peopleSettled) return
    write.peopleSettled = true
    if (stored) people.done()
    else {
      people.restore()
      this.schedulePeopleFlush(PEOPLE_RETRY_MS)
    }
  }

  /**
   * Inside the write's transaction, once its callback returned: stores its record (and the
   * people's edits before it) alone when it queried the transaction, or joins the batch the
   * writes computed now share (group commit), opening it if none is open.
   */
  private async store(tx: Transaction, write: LaneWrite, scope: WriteCollector): Promise<void> {
    const { origin } = write
    const sink = this.services.eventSink()
    const { events } = scope
    // The request that raised the events is named with them (docs/operations.md, "Logs").
    const requestId = currentRequest()?.id
    const staged = events.length > 0 ? sink?.stage(origin, events, requestId) : undefined
    const record: WriteRecord = {
      updates: [...mergedByDoc(heldUpdates(write.marker)), ...scope.appended],
      keyId: origin.type === 'agent' ? origin.keyId : undefined,
      idempotency: scope.idempotency,
      changes: scope.changes,
      ops: [...scope.ops, ...scope.history.ops(historyActor(origin), scope.now, scope.ops)],
      events: staged,
      claims: scope.claims,
    }
    // People's edits made before this write are stored ahead of it (it may build on them).
    write.people = this.people.take()
    const before = write.people
      ? await this.peopleRecords(tx, write.people)
      : { records: [], stored: false }
    const records = [...before.records, record]
    const storeEvents = events.length > 0 && sink !== undefined && staged === undefined
    if (scope.queried || before.stored || storeEvents) {
      this.batch = undefined
      write.storedAlone = records
      this.computed(write)
      await this.earlierCommitted(write)
      if (storeEvents) await sink.store(tx, origin, events, requestId)
      this.sendingCommit(write, 1)
      // Not awaited: it leaves in one write with the COMMIT, and a failure (CB401 for a
      // revoked key, CB409 for a taken-over Idempotency-Key) surfaces from the commit
      // (TrackedTx.settle).
      void recordWrites(lastStatement(tx), { orgId: this.orgId, allOrNothing: true }, records)
        .then((r) => this.services.eventSink()?.stored(r.deliveryIds))
        .catch(() => {})
      return
    }
    if (records.every(recordsNothing)) {
      this.computed(write)
      await this.earlierCommitted(write)
      return
    }
    const open = this.batch
    const batch = open ?? newBatch()
    const peopleAt = batch.records.length
    batch.records.push(...before.records)
    write.member = { batch, index: batch.records.length, peopleAt, opener: !open }
    batch.records.push(record)
    batch.members.push({ marker: write.marker, index: write.member.index })
    if (open) {
      this.computed(write)
      return
    }
    this.batch = batch
    this.computed(write)
    try {
      await this.earlierCommitted(write)
    } finally {
      if (this.batch === batch) this.batch = undefined
    }
    // Not awaited: the transaction's only statement, it leaves alone (no BEGIN, COMMIT).
    this.sendingCommit(write, batch.members.length)
    batch.recorded = recordWrites(
      lastStatement(tx),
      { orgId: this.orgId, allOrNothing: false },
      batch.records,
    )
    batch.recorded.catch(() => {})
  }

  /**
   * After the write's transaction committed: its updates are shown. A batch's opener shows
   * the stored writes of the batch, in the order they were computed (each was built on the
   * ones before it); every member learns whether its own record was stored.
   */
  private async stored(write: LaneWrite): Promise<void> {
    const { compaction } = this.services
    const { member } = write
    if (!member) {
      release(write.marker)
      this.settlePeople(write, true)
      for (const r of write.storedAlone ?? [])
        for (const u of r.updates) if (!u.unloaded) compaction.appended(u.doc, u.update.length)
      return
    }
    const { batch, index, peopleAt, opener } = member
    if (opener) {
      const recorded = await batch.recorded
      if (!recorded) throw new Error('a batch was committed without its records')
      for (const r of batch.records.slice(0, recorded.stored))
        for (const u of r.updates) if (!u.unloaded) compaction.appended(u.doc, u.update.length)
      for (const m of batch.members) if (m.index < recorded.stored) release(m.marker)
      batch.settle(recorded)
      this.services.eventSink()?.stored(recorded.deliveryIds)
    }
    const { stored, refused } = await batch.stored
    this.settlePeople(write, peopleAt < stored)
    if (index >= stored && refused === 'claim') throw new ClaimMoved()
    if (index === stored)
      throw refused === 'idempotency' ? new IdempotencyTakenOver() : new KeyRefused()
    if (index > stored) {
      throw new Error(`an earlier write of ${this.orgId} was refused; this one was built on it`)
    }
  }

  /**
   * A write that failed: nothing of it is shown. If its updates reached the documents or it
   * took people's edits, the writes built on it fail too and the documents are recovered
   * (evicted, reloaded from storage). Returns what to throw.
   */
  private async failed(write: LaneWrite, failure: unknown): Promise<unknown> {
    // Stored alone, a claim decision that no longer held raised CB423.
    const error = isClaimMoved(failure) ? new ClaimMoved() : failure
    this.observeCommit(write, 'failed')
    for (const f of write.scope?.failure.reverse() ?? []) f()
    const rebased = rebasedDocOf(error)
    if (rebased) {
      // Another process re-based it: this copy and people's edits of it are of a
      // generation that is gone (their apps carry them across).
      this.people.forgetDoc(rebased)
      this.services.registry.evict([rebased], CLOSE.rebased)
    }
    this.computed(write)
    if (write.member?.opener) write.member.batch.fail(error)
    this.settlePeople(write, false)
    const poisoned = write.docs.size > 0 || write.people !== undefined
    if (!poisoned) {
      // Nothing of this write is in the documents or storage's order: later writes depend
      // only on earlier ones.
      drop(write.marker)
      void write.previous.then(write.settle)
    } else {
      this.lastFailure = error
      write.settle(false)
      await this.recover(write.generation)
      drop(write.marker)
      if (write.docs.size > 0) this.gate.settled()
    }
    const refused = await this.refusedKey(write.origin, error)
    if (rebased) return documentRebased(rebased)
    if (!refused && !(error instanceof ApiError)) {
      // A busy database (a lock or a statement timed out) is answered 503 and sent again:
      // worth a warning, not a fault.
      this.services.log[isBusyError(error) ? 'warn' : 'error'](
        `a write of ${this.orgId} failed`,
        error,
      )
    }
    return refused ?? error
  }

  /** The write sends the commit statement of `writes` writes (metrics). */
  private sendingCommit(write: LaneWrite, writes: number): void {
    write.commitAt = performance.now()
    this.services.metrics?.laneBatchSize.observe(writes)
  }

  /** Its commit, if it sent one, is over (metrics). */
  private observeCommit(write: LaneWrite, outcome: 'committed' | 'failed'): void {
    if (write.commitAt === undefined) return
    const seconds = (performance.now() - write.commitAt) / 1000
    write.commitAt = undefined
    this.services.metrics?.laneCommit.observe({ outcome }, seconds)
  }

  /** A successful write's held updates are out: its documents are clean of it. */
  private clean(docs: ReadonlySet<string>, generation: number): void {
    if (docs.size === 0) return
    if (generation === this.generation) {
      for (const name of docs) {
        const n = (this.dirty.get(name) ?? 0) - 1
        if (n > 0) this.dirty.set(name, n)
        else this.dirty.delete(name)
      }
    }
    this.gate.settled()
  }

  /**
   * After a failed commit: once no write computes, the documents holding uncommitted
   * updates are evicted (they reload from storage, plus people's pending edits), and a new
   * generation starts with an empty chain. Writes computed on the failed one fail through
   * `committed` and find the generation moved on.
   */
  private async recover(generation: number): Promise<void> {
    const done = await this.gate.urgent()
    try {
      if (this.generation !== generation) return
      this.generation += 1
      this.committed = Promise.resolve(true)
      this.batch = undefined
      const names = [...this.dirty.keys()]
      this.dirty = new Map()
      this.services.registry.evict(names)
      this.services.metrics?.laneRecoveries.inc()
    } finally {
      done()
    }
  }

  /**
   * The records of people's edits taken by a write: their bytes, then what each editor
   * changed. `stored` when events had to be stored with statements of their own.
   */
  private async peopleRecords(
    tx: Queryable,
    people: TakenPeople,
  ): Promise<{ records: WriteRecord[]; stored: boolean }> {
    const sink = this.services.eventSink()
    const records: WriteRecord[] = [
      { updates: people.updates, keyId: undefined, changes: [], ops: [], events: undefined },
    ]
    let stored = false
    for (const r of people.reports) {
      // People's live edits were raised by no request (whichever write stores them).
      const staged = r.events.length > 0 ? sink?.stage(r.origin, r.events, undefined) : undefined
      if (r.events.length > 0 && sink && !staged) {
        stored = true
        await sink.store(tx, r.origin, r.events, undefined)
      }
      records.push({
        updates: [],
        keyId: undefined,
        changes: r.changes,
        ops: r.ops,
        events: staged,
      })
    }
    return { records: records.filter((r) => !recordsNothing(r)), stored }
  }

  /**
   * The refusal of a failed agent write whose key is revoked: a write refused for its key,
   * or one that failed because an earlier write failed while its own key was revoked too.
   */
  private async refusedKey(origin: WriteOrigin, error: unknown): Promise<KeyRefused | undefined> {
    const refused = asKeyRefused(error)
    if (refused || error instanceof ApiError || origin.type !== 'agent') return refused
    return (await keyRevoked(this.services.db, origin.keyId).catch(() => false))
      ? new KeyRefused()
      : undefined
  }

  /**
   * Reads documents once they are clean (no write computing, no uncommitted update in
   * them). `fn` may query storage; it must not keep references to the documents.
   */
  async read<T>(names: readonly string[], fn: (docs: Document[]) => Promise<T> | T): Promise<T> {
    if (insideWrite.getStore() === this) {
      throw new Error(
        `a read of ${names.join(', ')} inside a write of its organisation would wait for itself`,
      )
    }
    const { registry } = this.services
    const entries: DocEntry[] = []
    this.active += 1
    try {
      for (;;) {
        for (const [i, name] of names.entries()) {
          const held = entries[i]
          if (held && !gone(held)) continue
          entries[i] = await registry.acquire(name)
          if (held) registry.release(held)
        }
        const done = await this.gate.read()
        try {
          if (entries.some(gone)) continue
          return await fn(entries.map((e) => e.doc))
        } finally {
          done()
        }
      }
    } finally {
      this.active -= 1
      for (const e of entries) registry.release(e)
    }
  }

  /**
   * Runs `fn` with the lane to itself: no write computes or commits meanwhile (every write
   * computed before has committed or failed), no person's edit is applied, and the
   * documents hold only what storage holds plus people's pending edits. For a re-base,
   * which must be short: writes and people's edits wait for it.
   */
  async alone<T>(fn: () => Promise<T>): Promise<T> {
    if (insideWrite.getStore() === this)
      throw new Error('a lane cannot be taken alone from its own write')
    this.active += 1
    const done = await this.gate.alone()
    try {
      // A write that failed leaves documents to recover (it waits for this): not now.
      if (!(await this.committed)) throw new Error(`a write of ${this.orgId} failed; try again`)
      return await fn()
    } finally {
      done()
      this.active -= 1
    }
  }

  /** People's edits arrived: store them soon, with the next write or on their own. */
  schedulePeopleFlush(delay = this.services.peopleFlushMs ?? PEOPLE_FLUSH_MS): void {
    if (this.flushTimer) return
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined
      void this.flushPeople()
    }, delay)
    this.flushTimer.unref()
  }

  /**
   * Stores people's pending edits now (a write of nothing of its own that takes them), and
   * waits for those an earlier write took (it commits after them).
   */
  async flushPeople(): Promise<void> {
    if (this.people.size === 0) return
    await this.write(undefined, { type: 'server', orgId: this.orgId }, async () => undefined).catch(
      (error: unknown) => {
        this.services.log.error(`storing people's edits of ${this.orgId} failed; retrying`, error)
      },
    )
  }

  /** Shutdown: stores what is pending (a few attempts) and stops the timer. */
  async close(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer)
    this.flushTimer = undefined
    for (let attempt = 0; attempt < 3 && this.people.waiting; attempt++) await this.flushPeople()
    if (this.flushTimer) clearTimeout(this.flushTimer)
    this.flushTimer = undefined
    if (this.people.size > 0) {
      this.services.log.error(`${this.people.size} people's edits of ${this.orgId} were not stored`)
    }
  }
}

/** A write refused because its document was re-based meanwhile: nothing was written. */
function documentRebased(docName: string): ApiError {
  return new ApiError(
    503,
    `${docName} started over as a new generation a moment ago; nothing was written, retry`,
    undefined,
    { 'Retry-After': '1' },
  )
}

/** Each document's updates merged into one, in the order the documents were first changed. */
function mergedByDoc(
  held: readonly { doc: Document; update: Uint8Array }[],
): { doc: string; update: Uint8Array; generation: number }[] {
  const perDoc = new Map<string, { list: Uint8Array[]; generation: number }>()
  for (const h of held) {
    const entry = perDoc.get(h.doc.name) ?? { list: [], generation: generationOf(h.doc) }
    entry.list.push(h.update)
    perDoc.set(h.doc.name, entry)
  }
  return [...perDoc].map(([doc, { list, generation }]) => ({
    doc,
    update: list.length === 1 ? (list[0] as Uint8Array) : Y.mergeUpdates(list),
    generation,
  }))
}
