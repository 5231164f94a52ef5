import { AsyncLocalStorage } from 'node:async_hooks'
import type { Document } from '@hocuspocus/server'
import * as Y from 'yjs'
import { isConnectionError, StorageUnavailable } from '../../persistence/availability.ts'
import type { Db, Queryable, Transaction } from '../../persistence/types.ts'
import { invalidKeyError, keyRevoked, revokedKeyError } from '../auth/api-keys.ts'
import { ApiError } from '../errors.ts'
import type { Logger } from '../http/json.ts'
import type { Compaction } from './compaction.ts'
import { type DocEntry, type DocRegistry, gone } from './doc-registry.ts'
import { drop, heldUpdates, hold, release } from './hold.ts'
import { Gate } from './lane-gate.ts'
import type {
  ChangeKind,
  DomainEvent,
  EventSink,
  ServerTransactionOrigin,
  WriteOrigin,
} from './origins.ts'
import { type PendingArchived, PeoplePending, type TakenPeople } from './pending-edits.ts'
import {
  IdempotencyTakenOver,
  type IdempotentWrite,
  type Recorded,
  type RowOp,
  recordsNothing,
  recordWrites,
  type WriteRecord,
} from './write-record.ts'

/** What a write's callback works with. Everything in it commits together or not at all. */
export interface WriteScope {
  /** The write's document (the board, or a map), as of this write; read it to validate. */
  readonly doc: Y.Doc
  /** The write's Postgres transaction. */
  readonly tx: Queryable
  readonly origin: WriteOrigin
  /** The write's timestamp, ISO 8601 UTC. */
  readonly now: string
  /**
   * Another document of the organisation (a card's), named when the write was started:
   * documents are loaded before its transaction begins (a load waits on storage, and on
   * PGlite's one connection it would wait for this very transaction).
   */
  open(name: string): Y.Doc
  /** Records a change-log row (get_changes reads these). */
  changed(kind: ChangeKind, entityId: string): void
  /** Records an event for webhooks, committed with the write (the outbox). */
  emit(event: DomainEvent): void
  /** Puts or removes a row of the history tables, committed with the write. */
  row(op: RowOp): void
  /** Changes the write's document; synchronous, so nothing interleaves with it. */
  mutate<T>(fn: (doc: Y.Doc) => T): T
  /** Changes another document this write opened. */
  mutateDoc<T>(doc: Y.Doc, fn: (doc: Y.Doc) => T): T
  /** Runs once the transaction committed and the documents show the change. */
  afterCommit(fn: () => void): void
  /**
   * What people's edits not yet stored do to an archived card's row (a person archived the
   * card, or commented on it since): they are stored ahead of this write but after it
   * reads, so a row read from storage is read through this (board/history.ts lockArchived).
   */
  pendingArchived(taskId: string): PendingArchived
  /**
   * Marks an Idempotency-Key done with this write's answer as the write is stored, in its
   * record statement: the answer commits with the write, and the write still joins group
   * commit. If a retry took the key over meanwhile, the write is refused
   * (IdempotencyTakenOver) and nothing of it is stored. The answer is usually the write's
   * result, so this may be called as the callback returns; a later call replaces an earlier.
   */
  idempotent(entry: IdempotentWrite): void
}

export interface LaneServices {
  db: Db
  registry: DocRegistry
  compaction: Compaction
  log: Logger
  /** Where writes' events go (the webhooks module); without it events are dropped. */
  eventSink(): EventSink | undefined
}

/** A transaction's last statement, as a Queryable (see Transaction.final). */
const last = (tx: Transaction): Queryable => ({ query: (text, params) => tx.final(text, params) })

/** Writes stored together by their first one's transaction (group commit). */
interface Batch {
  records: WriteRecord[]
  /** The writes in the batch, in order: their transaction origin and their own record's index. */
  members: { marker: ServerTransactionOrigin; index: number }[]
  /** The opener's record statement, issued once the earlier writes committed. */
  recorded: Promise<Recorded> | undefined
  /** Once the opener's transaction committed: how many records were stored, why not the next. */
  stored: Promise<Stored>
  settle(stored: Stored): void
  fail(error: unknown): void
}

type Stored = Pick<Recorded, 'stored' | 'refused'>

function newBatch(): Batch {
  let settle!: (stored: Stored) => void
  let fail!: (error: unknown) => void
  const stored = new Promise<Stored>((resolve, reject) => {
    settle = resolve
    fail = reject
  })
  stored.catch(() => {})
  return { records: [], members: [], recorded: undefined, stored, settle, fail }
}

/** How long people's edits wait to be stored together when no write comes to take them. */
const PEOPLE_FLUSH_MS = 50
/** How long a failed attempt to store people's edits waits before the next. */
const PEOPLE_RETRY_MS = 1_000

/** The lanes whose write the current async context is computing (a read there would wait for itself). */
const insideWrite = new AsyncLocalStorage<OrgLane>()

export function isWriteOrigin(origin: unknown): origin is ServerTransactionOrigin {
  return (
    typeof origin === 'object' &&
    origin !== null &&
    (origin as { source?: unknown }).source === 'local' &&
    typeof (origin as { context?: unknown }).context === 'object' &&
    (origin as { context: object | null }).context !== null &&
    'write' in (origin as { context: object }).context
  )
}

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
  readonly gate = new Gate()
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
      return await this.compute(primary, names, origin, entries, acquire, fn)
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
  ): Promise<T> {
    const { db, log } = this.services
    const marker: ServerTransactionOrigin = {
      source: 'local',
      skipStoreHooks: true,
      context: { write: origin },
    }
    const changes: { kind: ChangeKind; entityId: string }[] = []
    const events: DomainEvent[] = []
    const ops: RowOp[] = []
    const after: (() => void)[] = []
    let idempotency: IdempotentWrite | undefined
    const docs = new Set<string>()
    await this.gate.write()
    let computing = true
    const computed = () => {
      if (!computing) return
      computing = false
      for (const h of heldUpdates(marker)) docs.add(h.doc.name)
      for (const name of docs) this.dirty.set(name, (this.dirty.get(name) ?? 0) + 1)
      this.gate.computed(docs.size > 0)
    }
    hold(marker)
    const generation = this.generation
    const previous = this.committed
    let settle!: (ok: boolean) => void
    this.committed = new Promise<boolean>((resolve) => {
      settle = resolve
    })
    const earlierCommitted = async () => {
      if (await previous) return
      // Built on a write that did not commit: it fails the same way (a 503 when the
      // database was away, which says nothing was written).
      const cause = this.lastFailure
      if (isConnectionError(cause)) throw new StorageUnavailable(cause)
      throw new Error(
        `an earlier write of ${this.orgId} failed to commit; this one was built on it`,
        { cause },
      )
    }
    let people: TakenPeople | undefined
    let peopleSettled = false
    const settlePeople = (stored: boolean) => {
      if (!people || peopleSettled) return
      peopleSettled = true
      if (stored) people.done()
      else {
        people.restore()
        this.schedulePeopleFlush(PEOPLE_RETRY_MS)
      }
    }
    /** This write's place in a batch, and where its people's records start. */
    let member: { batch: Batch; index: number; peopleAt: number; opener: boolean } | undefined
    try {
      // Documents evicted while this write waited are loaded again, still outside its
      // transaction.
      for (const name of names) await acquire(name)
      const main = primary ? entries.get(primary) : undefined
      const result = await db.transaction(async (tx) => {
        let queried = false
        const mutateDoc = <R>(doc: Y.Doc, mutation: (d: Y.Doc) => R): R => {
          // A destroyed Y.Doc has dropped its listeners: the change would be neither held,
          // stored nor shown. Documents are acquired again after the gate (above), so this
          // cannot happen; if it ever does, the write fails rather than vanish.
          if (doc.isDestroyed) throw new Error('a write reached a document after it was unloaded')
          let out: R | undefined
          doc.transact(() => {
            out = mutation(doc)
          }, marker)
          return out as R
        }
        const scope: WriteScope = {
          get doc() {
            if (!main) throw new Error('this write has no document of its own')
            return main.doc
          },
          tx: {
            query: (text, params) => {
              queried = true
              return tx.query(text, params)
            },
          },
          origin,
          now: new Date().toISOString(),
          open: (name) => {
            const entry = entries.get(name)
            if (!entry) throw new Error(`${name} was not named when this write started`)
            return entry.doc
          },
          changed: (kind, entityId) => {
            changes.push({ kind, entityId })
          },
          emit: (event) => {
            events.push(event)
          },
          row: (op) => {
            ops.push(op)
          },
          mutate: (mutation) => {
            if (!main) throw new Error('this write has no document of its own')
            return mutateDoc(main.doc, mutation)
          },
          mutateDoc,
          afterCommit: (f) => {
            after.push(f)
          },
          pendingArchived: (taskId) => this.people.archived(taskId),
          idempotent: (entry) => {
            idempotency = entry
          },
        }
        const value = await insideWrite.run(this, () => fn(scope))
        const sink = this.services.eventSink()
        const staged = events.length > 0 ? sink?.stage(origin, events) : undefined
        const record: WriteRecord = {
          updates: mergedByDoc(heldUpdates(marker)),
          keyId: origin.type === 'agent' ? origin.keyId : undefined,
          idempotency,
          changes,
          ops,
          events: staged,
        }
        // People's edits made before this write are stored ahead of it (it may build on them).
        people = this.people.take()
        const before = people
          ? await this.peopleRecords(tx, people)
          : { records: [], stored: false }
        const records = [...before.records, record]
        const storeEvents = events.length > 0 && sink !== undefined && staged === undefined
        if (queried || before.stored || storeEvents) {
          this.batch = undefined
          computed()
          await earlierCommitted()
          if (storeEvents) await sink.store(tx, origin, events)
          // Not awaited: it leaves in one write with the COMMIT, and a failure (CB401 for
          // a revoked key, CB409 for a taken-over Idempotency-Key) surfaces from the commit
          // (TrackedTx.settle).
          void recordWrites(last(tx), { orgId: this.orgId, allOrNothing: true }, records)
            .then((r) => this.services.eventSink()?.stored(r.deliveryIds))
            .catch(() => {})
          return value
        }
        if (records.every(recordsNothing)) {
          computed()
          await earlierCommitted()
          return value
        }
        const open = this.batch
        const batch = open ?? newBatch()
        const peopleAt = batch.records.length
        batch.records.push(...before.records)
        member = { batch, index: batch.records.length, peopleAt, opener: !open }
        batch.records.push(record)
        batch.members.push({ marker, index: member.index })
        if (open) {
          computed()
          return value
        }
        this.batch = batch
        computed()
        try {
          await earlierCommitted()
        } finally {
          if (this.batch === batch) this.batch = undefined
        }
        // Not awaited: the transaction's only statement, it leaves alone (no BEGIN, COMMIT).
        batch.recorded = recordWrites(
          last(tx),
          { orgId: this.orgId, allOrNothing: false },
          batch.records,
        )
        batch.recorded.catch(() => {})
        return value
      })
      if (member) {
        const { batch, index, peopleAt, opener } = member
        if (opener) {
          // The opener's transaction committed (or threw, below): show the stored writes, in
          // the order they were computed (each was built on the ones before it).
          const recorded = await batch.recorded
          if (!recorded) throw new Error('a batch was committed without its records')
          for (const r of batch.records.slice(0, recorded.stored))
            for (const u of r.updates) this.services.compaction.appended(u.doc)
          for (const m of batch.members) if (m.index < recorded.stored) release(m.marker)
          batch.settle(recorded)
          this.services.eventSink()?.stored(recorded.deliveryIds)
        }
        const { stored, refused } = await batch.stored
        settlePeople(peopleAt < stored)
        if (index === stored)
          throw refused === 'idempotency' ? new IdempotencyTakenOver() : invalidKeyError()
        if (index > stored) {
          throw new Error(`an earlier write of ${this.orgId} was refused; this one was built on it`)
        }
      } else {
        release(marker)
        settlePeople(true)
        for (const name of docs) this.services.compaction.appended(name)
        for (const u of people?.updates ?? []) this.services.compaction.appended(u.doc)
      }
      settle(true)
      this.clean(docs, generation)
      for (const f of after) f()
      return result
    } catch (error) {
      computed()
      if (member?.opener) member.batch.fail(error)
      settlePeople(false)
      const poisoned = docs.size > 0 || people !== undefined
      if (!poisoned) {
        // Nothing of this write is in the documents or storage's order: later writes
        // depend only on earlier ones.
        drop(marker)
        void previous.then(settle)
      } else {
        this.lastFailure = error
        settle(false)
        await this.recover(generation)
        drop(marker)
        if (docs.size > 0) this.gate.settled()
      }
      const refused = await this.refusedKey(origin, error)
      if (!refused && !(error instanceof ApiError))
        log.error(`a write of ${this.orgId} failed`, error)
      throw refused ?? error
    }
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
      const staged = r.events.length > 0 ? sink?.stage(r.origin, r.events) : undefined
      if (r.events.length > 0 && sink && !staged) {
        stored = true
        await sink.store(tx, r.origin, r.events)
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
   * The 401 of a failed agent write whose key is revoked: a write refused for its key, or
   * one that failed because an earlier write failed while its own key was revoked too.
   */
  private async refusedKey(origin: WriteOrigin, error: unknown): Promise<ApiError | undefined> {
    const refused = revokedKeyError(error)
    if (refused || error instanceof ApiError || origin.type !== 'agent') return refused
    return (await keyRevoked(this.services.db, origin.keyId).catch(() => false))
      ? invalidKeyError()
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

  /** People's edits arrived: store them soon, with the next write or on their own. */
  schedulePeopleFlush(delay = PEOPLE_FLUSH_MS): void {
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

/** Each document's updates merged into one, in the order the documents were first changed. */
function mergedByDoc(
  held: readonly { doc: Document; update: Uint8Array }[],
): { doc: string; update: Uint8Array }[] {
  const perDoc = new Map<string, Uint8Array[]>()
  for (const h of held) {
    const list = perDoc.get(h.doc.name) ?? []
    list.push(h.update)
    perDoc.set(h.doc.name, list)
  }
  return [...perDoc].map(([doc, list]) => ({
    doc,
    update: list.length === 1 ? (list[0] as Uint8Array) : Y.mergeUpdates(list),
  }))
}
