import { Redis } from '@hocuspocus/extension-redis'
import {
  type DirectConnection,
  type Document,
  type Extension,
  Hocuspocus,
  isTransactionOrigin,
  type onAuthenticatePayload,
  type onLoadDocumentPayload,
} from '@hocuspocus/server'
import * as Y from 'yjs'
import type { Db, Queryable, Transaction } from '../../persistence/db.ts'
import { BoardView } from '../actions/board-view.ts'
import { ApiError } from '../api-error.ts'
import { invalidKeyError, keyRevoked, revokedKeyError } from '../auth/api-keys.ts'
import type { Logger } from '../http/json.ts'
import { BoardGuard, GUARD_ORIGIN, type GuardReport } from './board-guard.ts'
import { Compactor } from './compactor.ts'
import { type CloseTarget, ConnectionControl } from './connection-control.ts'
import { compact, loadInto } from './doc-store.ts'
import { MapGuard } from './map-guard.ts'
import { Mutex } from './mutex.ts'
import type {
  ChangeKind,
  DomainEvent,
  EventSink,
  ServerTransactionOrigin,
  WriteOrigin,
} from './origin.ts'
import { type Recorded, recordsNothing, recordWrites, type WriteRecord } from './write-record.ts'

/** What a live connection carries once authenticated. */
export interface ConnectionContext {
  orgId: string
  userId?: string
  keyId?: string
  email: string
}

export type Authenticate = (token: string, documentName: string) => Promise<ConnectionContext>

/** What a write's callback works with. Everything in it commits together or not at all. */
export interface WriteScope {
  /** The organisation's document as of this write; read it to validate before mutating. */
  readonly doc: Y.Doc
  /** The write's Postgres transaction. */
  readonly tx: Queryable
  readonly origin: WriteOrigin
  /** The write's timestamp, ISO 8601 UTC. */
  readonly now: string
  /** Records a change-log row (get_changes reads these). */
  changed(kind: ChangeKind, entityId: string): void
  /** Records an event for webhooks, committed with the write (the outbox). */
  emit(event: DomainEvent): void
  /** Applies document changes; synchronous, so nothing interleaves with them. */
  mutate<T>(fn: (doc: Y.Doc) => T): T
  /** Runs once the transaction committed and the live document has the change. */
  afterCommit(fn: () => void): void
}

interface Entry {
  name: string
  connection: DirectConnection
  live: Document
  /**
   * A replica of `live` that writes are computed on. Only committed update bytes reach
   * `live` (and so the people watching it): a write whose commit fails leaves nothing
   * visible anywhere, and the shadow is rebuilt from `live`.
   */
  shadow: Y.Doc
  mirror: (update: Uint8Array, origin: unknown) => void
  mutex: Mutex
  /**
   * Settles once every write staged so far has committed (true) or once one of them failed
   * (false). A write waits for it before its own COMMIT, so writes commit and reach the live
   * document in the order they were computed, while the next write may already be computed.
   */
  committed: Promise<boolean>
  /** Bumped by each shadow rebuild: writes staged on an older shadow cannot commit. */
  generation: number
  /** The batch that writes computed now join (group commit); undefined once it is sent. */
  batch: Batch | undefined
  refs: number
  idleTimer: NodeJS.Timeout | undefined
}

/** A transaction's last statement, as a Queryable (see Transaction.final). */
const last = (tx: Transaction): Queryable => ({ query: (text, params) => tx.final(text, params) })

/** Writes stored together by their first one's transaction (see runWrite). */
interface Batch {
  records: WriteRecord[]
  /** Each record's transaction origin, for applying its update to the live document. */
  markers: ServerTransactionOrigin[]
  /** The opener's record statement, issued once the earlier writes committed. */
  recorded: Promise<Recorded> | undefined
  /** How many records were stored, once the opener's transaction committed. */
  stored: Promise<number>
  settle(stored: number): void
  fail(error: unknown): void
}

function newBatch(first: WriteRecord, marker: ServerTransactionOrigin): Batch {
  let settle!: (stored: number) => void
  let fail!: (error: unknown) => void
  const stored = new Promise<number>((resolve, reject) => {
    settle = resolve
    fail = reject
  })
  stored.catch(() => {})
  return { records: [first], markers: [marker], recorded: undefined, stored, settle, fail }
}

/** People's edits waiting to be appended: their bytes, and what they changed (per editor). */
interface PendingPeople {
  updates: Uint8Array[]
  reports: {
    origin: WriteOrigin
    changes: { kind: ChangeKind; entityId: string }[]
    events: DomainEvent[]
    /** A map people edited: it moves up list_maps; new nodes and edges are indexed. */
    map?: { mapId: string; created: { id: string; kind: 'node' | 'edge' }[] }
  }[]
  timer: NodeJS.Timeout | undefined
  flushing: Promise<void> | undefined
}

const DOC_NAME = /^[0-9a-f-]{36}\/(board|maps\/[0-9a-f-]{36})$/
/** Appended rows after which a document is compacted: each compaction replays the whole document, so amortise it. */
const COMPACT_AFTER = 1000
/**
 * ...and once their bytes reach this share of the last snapshot: a compaction costs the
 * whole document, so a bigger document compacts less often (amortised, each appended byte
 * is replayed a bounded number of times).
 */
const COMPACT_GROWTH = 1
/** Rows at load time above which a document is compacted: loading many small rows is slow. */
const COMPACT_ON_LOAD = 100
/** People's updates are appended in batches this often. */
const PEOPLE_FLUSH_MS = 50

export function isWriteOrigin(origin: unknown): origin is ServerTransactionOrigin {
  return (
    isTransactionOrigin(origin) &&
    origin.source === 'local' &&
    typeof origin.context === 'object' &&
    origin.context !== null &&
    'write' in origin.context
  )
}

/**
 * Every live document of this process: Hocuspocus for the people's connections, plus the
 * single path through which the server writes to a document.
 */
export class LiveDocs {
  readonly hocuspocus: Hocuspocus<ConnectionContext>
  private readonly entries = new Map<string, Promise<Entry>>()
  private readonly pending = new Map<string, PendingPeople>()
  /** Per document: rows and bytes appended since the last compaction, and its snapshot's size. */
  private readonly appended = new Map<string, { rows: number; bytes: number; snapshot: number }>()
  private readonly compactions = new Set<Promise<void>>()
  private readonly compactor = new Compactor()
  private readonly control: ConnectionControl
  private readonly db: Db
  private readonly idleMs: number
  private readonly log: Logger
  /** Where writes' events go; set by the webhooks module. Without it events are dropped. */
  eventSink: EventSink | undefined

  constructor(options: {
    db: Db
    idleMs: number
    log: Logger
    authenticate: Authenticate
    /** With Redis, several server processes share live documents (each change is published). */
    redis?: { url: string; prefix: string } | undefined
  }) {
    this.db = options.db
    this.idleMs = options.idleMs
    this.log = options.log
    const extension: Extension = {
      onAuthenticate: async ({ token, documentName }: onAuthenticatePayload) => {
        if (!DOC_NAME.test(documentName)) throw new Error('Unknown document')
        return options.authenticate(token, documentName)
      },
      onLoadDocument: async ({ document, documentName }: onLoadDocumentPayload) => {
        const { rows, bytes } = await loadInto(this.db, documentName, document)
        this.appended.set(documentName, { rows: 0, bytes: 0, snapshot: bytes })
        if (rows > COMPACT_ON_LOAD) this.scheduleCompaction(documentName)
        this.watchPeople(document, documentName)
      },
      onStoreDocument: async ({ documentName }) => this.flushPeople(documentName),
      beforeUnloadDocument: async ({ documentName }) => this.flushPeople(documentName),
    }
    const extensions: Extension[] = [extension]
    if (options.redis) {
      const url = new URL(options.redis.url)
      extensions.push(
        new Redis({
          host: url.hostname,
          port: Number(url.port || 6379),
          prefix: options.redis.prefix,
          options: {
            ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
            ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
            ...(url.pathname.length > 1 ? { db: Number(url.pathname.slice(1)) } : {}),
          },
        }),
      )
    }
    this.hocuspocus = new Hocuspocus<ConnectionContext>({ quiet: true, extensions })
    this.control = new ConnectionControl({
      closeHere: (target) => this.closeHere(target),
      redis: options.redis,
      log: this.log,
    })
  }

  /** Reads the live document (loading it on demand). `fn` must not keep references. */
  async read<T>(docName: string, fn: (doc: Y.Doc) => T): Promise<T> {
    const entry = await this.acquire(docName)
    try {
      return fn(entry.live)
    } finally {
      this.release(entry)
    }
  }

  /**
   * The one write path: under the document's mutex, runs `fn` inside one Postgres
   * transaction (holding the agent's key FOR SHARE so a revocation waits for it), appends
   * the exact update bytes and the change rows in that transaction, and only after commit
   * applies the bytes to the live document, which broadcasts them to every provider.
   */
  async write<T>(
    docName: string,
    origin: WriteOrigin,
    fn: (scope: WriteScope) => Promise<T>,
  ): Promise<T> {
    const entry = await this.acquire(docName)
    try {
      return await this.runWrite(entry, origin, fn)
    } finally {
      this.release(entry)
    }
  }

  /**
   * The document's mutex is held while the write is computed on the shadow, and released
   * before it is stored, so the next write's computing overlaps this one's commit.
   * Ordering and atomicity still hold: a write is stored only after every earlier write
   * committed (`entry.committed`), and if an earlier one failed, every write computed on
   * top of it fails too and the shadow is rebuilt from the live document, which only ever
   * holds committed bytes.
   *
   * Group commit: a write that issued no statements of its own only has its record to
   * store (write-record.ts). The first such write opens a batch and waits for the earlier
   * writes; the ones computed meanwhile join the batch, and its opener stores them all in
   * one statement and one commit. They succeed or fail together, except that a write made
   * with a key revoked meanwhile is refused with every write after it (each was computed
   * on top of it), while the ones before it are stored. A write that did query (a claim
   * check, say) stores its record in its own transaction, with its COMMIT, and closes the
   * open batch: nothing computed after it may be stored before it.
   */
  private async runWrite<T>(
    entry: Entry,
    origin: WriteOrigin,
    fn: (scope: WriteScope) => Promise<T>,
  ): Promise<T> {
    const marker: ServerTransactionOrigin = {
      source: 'local',
      skipStoreHooks: true,
      context: { write: origin },
    }
    const updates: Uint8Array[] = []
    const changes: { kind: ChangeKind; entityId: string }[] = []
    const events: DomainEvent[] = []
    const after: (() => void)[] = []
    const release = await entry.mutex.acquire()
    let locked = true
    const unlock = () => {
      if (locked) {
        locked = false
        release()
      }
    }
    const shadow = entry.shadow
    const generation = entry.generation
    const previous = entry.committed
    let settle!: (ok: boolean) => void
    entry.committed = new Promise<boolean>((resolve) => {
      settle = resolve
    })
    const collect = (update: Uint8Array, o: unknown) => {
      if (o === marker) updates.push(update)
    }
    shadow.on('update', collect)
    const earlierCommitted = async () => {
      if (!(await previous)) {
        throw new Error(
          `an earlier write to ${entry.name} failed to commit; this one was built on it`,
        )
      }
    }
    const target = { docName: entry.name, orgId: origin.orgId }
    let merged: Uint8Array | undefined
    /** This write's place in a batch (it opened it when its index is 0). */
    let member: { batch: Batch; index: number } | undefined
    try {
      const result = await this.db.transaction(async (tx) => {
        let queried = false
        const scope: WriteScope = {
          doc: shadow,
          tx: {
            query: (text, params) => {
              queried = true
              return tx.query(text, params)
            },
          },
          origin,
          now: new Date().toISOString(),
          changed: (kind, entityId) => {
            changes.push({ kind, entityId })
          },
          emit: (event) => {
            events.push(event)
          },
          mutate: (mutation) => {
            let out: ReturnType<typeof mutation> | undefined
            shadow.transact(() => {
              out = mutation(shadow)
            }, marker)
            return out as ReturnType<typeof mutation>
          },
          afterCommit: (f) => {
            after.push(f)
          },
        }
        const value = await fn(scope)
        shadow.off('update', collect)
        merged =
          updates.length === 0
            ? undefined
            : updates.length === 1
              ? updates[0]
              : Y.mergeUpdates(updates)
        const sink = events.length > 0 ? this.eventSink : undefined
        const staged = sink?.stage(origin, events)
        const record: WriteRecord = {
          update: merged,
          keyId: origin.type === 'agent' ? origin.keyId : undefined,
          changes,
          events: staged,
        }
        if (queried || (sink && !staged)) {
          entry.batch = undefined
          unlock()
          await earlierCommitted()
          if (sink && !staged) await sink.store(tx, origin, events)
          // Not awaited: it leaves in one write with the COMMIT, and a failure (CB401 for
          // a revoked key) surfaces from the commit (TrackedTx.settle).
          void recordWrites(last(tx), { ...target, allOrNothing: true }, [record])
            .then((r) => this.eventSink?.stored(r.deliveryIds))
            .catch(() => {})
          return value
        }
        if (recordsNothing(record)) {
          unlock()
          await earlierCommitted()
          return value
        }
        const open = entry.batch
        if (open) {
          member = { batch: open, index: open.records.length }
          open.records.push(record)
          open.markers.push(marker)
          unlock()
          return value
        }
        const batch = newBatch(record, marker)
        entry.batch = batch
        member = { batch, index: 0 }
        unlock()
        try {
          await earlierCommitted()
        } finally {
          if (entry.batch === batch) entry.batch = undefined
        }
        // Not awaited: the transaction's only statement, it leaves alone (no BEGIN, COMMIT).
        batch.recorded = recordWrites(last(tx), { ...target, allOrNothing: false }, batch.records)
        batch.recorded.catch(() => {})
        return value
      })
      if (member) {
        const { batch, index } = member
        if (index === 0) {
          // The opener's transaction committed (or threw, below): tell the members.
          const recorded = await batch.recorded
          if (!recorded) throw new Error('a batch was committed without its records')
          // The stored writes reach the live document in the order they were computed:
          // each was built on the ones before it.
          for (let i = 0; i < recorded.stored; i++) {
            const update = batch.records[i]?.update
            if (!update) continue
            Y.applyUpdate(entry.live, update, batch.markers[i])
            this.countAppend(entry.name, update.length)
          }
          batch.settle(recorded.stored)
          this.eventSink?.stored(recorded.deliveryIds)
        }
        const stored = await batch.stored
        if (index === stored) throw invalidKeyError()
        if (index > stored) {
          throw new Error(`an earlier write to ${entry.name} was refused; this one was built on it`)
        }
      } else if (merged) {
        Y.applyUpdate(entry.live, merged, marker)
        this.countAppend(entry.name, merged.length)
      }
      settle(true)
      for (const f of after) f()
      return result
    } catch (error) {
      shadow.off('update', collect)
      unlock()
      if (member?.index === 0) member.batch.fail(error)
      if (updates.length === 0) {
        // Nothing of this write is in the shadow: later writes depend only on earlier ones.
        void previous.then(settle)
      } else {
        settle(false)
        // The first failure of a shadow generation rebuilds it from the live document (under
        // the mutex, so no write is being computed); writes computed on the failed shadow
        // fail through `committed` (or their batch) and find the generation moved on.
        await entry.mutex.run(async () => {
          if (entry.generation !== generation) return
          this.rebuildShadow(entry)
          entry.generation += 1
          entry.committed = Promise.resolve(true)
          entry.batch = undefined
        })
      }
      throw (await this.refusedKey(origin, error)) ?? error
    }
  }

  /**
   * The 401 of a failed agent write whose key is revoked: a write refused for its key, or
   * one that failed because an earlier write failed while its own key was revoked too.
   */
  private async refusedKey(origin: WriteOrigin, error: unknown): Promise<ApiError | undefined> {
    const refused = revokedKeyError(error)
    if (refused || error instanceof ApiError || origin.type !== 'agent') return refused
    return (await keyRevoked(this.db, origin.keyId).catch(() => false))
      ? invalidKeyError()
      : undefined
  }

  private rebuildShadow(entry: Entry): void {
    entry.live.off('update', entry.mirror)
    const shadow = new Y.Doc({ gc: true })
    Y.applyUpdate(shadow, Y.encodeStateAsUpdate(entry.live))
    entry.shadow = shadow
    entry.mirror = (update, origin) => {
      if (!isWriteOrigin(origin)) Y.applyUpdate(shadow, update, 'mirror')
    }
    entry.live.on('update', entry.mirror)
  }

  private acquire(docName: string): Promise<Entry> {
    let promise = this.entries.get(docName)
    if (!promise) {
      promise = this.open(docName)
      this.entries.set(docName, promise)
      promise.catch(() => this.entries.delete(docName))
    }
    return promise.then((entry) => {
      entry.refs += 1
      if (entry.idleTimer) {
        clearTimeout(entry.idleTimer)
        entry.idleTimer = undefined
      }
      return entry
    })
  }

  private async open(docName: string): Promise<Entry> {
    const connection = await this.hocuspocus.openDirectConnection(docName, {
      orgId: docName.slice(0, 36),
      email: 'server',
    })
    const live = connection.document
    if (!live) throw new Error(`document ${docName} closed while opening`)
    const entry: Entry = {
      name: docName,
      connection,
      live,
      shadow: new Y.Doc(),
      mirror: () => {},
      mutex: new Mutex(),
      committed: Promise.resolve(true),
      generation: 0,
      batch: undefined,
      refs: 0,
      idleTimer: undefined,
    }
    this.rebuildShadow(entry)
    return entry
  }

  private release(entry: Entry): void {
    entry.refs -= 1
    if (entry.refs > 0) return
    entry.idleTimer = setTimeout(() => void this.unload(entry), this.idleMs)
    entry.idleTimer.unref()
  }

  /** Drops the server's hold; Hocuspocus unloads the document once no person has it open. */
  private async unload(entry: Entry): Promise<void> {
    if (entry.refs > 0) return
    this.entries.delete(entry.name)
    entry.live.off('update', entry.mirror)
    entry.shadow.destroy()
    await entry.connection.disconnect()
  }

  /**
   * People's edits: each transaction from a connection is reviewed by the document's guard
   * synchronously (so a compensating revert goes out in the same broadcast), its bytes and
   * the guard's are queued for storage, and what it changed becomes change rows and events.
   */
  private watchPeople(document: Document, docName: string): void {
    const orgId = docName.slice(0, 36)
    document.on('update', (update: Uint8Array, origin: unknown) => {
      if (
        origin === GUARD_ORIGIN ||
        (isTransactionOrigin(origin) && origin.source === 'connection')
      ) {
        this.queuePeople(docName, update)
      }
    })
    const editorOrigin = (context: ConnectionContext): WriteOrigin =>
      context.keyId
        ? { type: 'agent', orgId, keyId: context.keyId, email: context.email, identity: {} }
        : { type: 'person', orgId, userId: context.userId ?? '', email: context.email }
    const tell = (
      connection: { sendStateless(payload: string): void },
      reverts: { reason: string; taskId?: string }[],
    ) => {
      if (reverts.length === 0) return
      const first = reverts[0]
      connection.sendStateless(
        JSON.stringify({ type: 'reverted', reason: first?.reason, taskId: first?.taskId, reverts }),
      )
    }
    if (!docName.endsWith('/board')) {
      const mapGuard = new MapGuard(document)
      const mapId = docName.slice(docName.lastIndexOf('/') + 1)
      document.on('afterTransaction', (tr: Y.Transaction) => {
        const origin = tr.origin
        if (!isTransactionOrigin(origin) || origin.source !== 'connection') {
          mapGuard.remember(tr)
          return
        }
        const report = mapGuard.review(tr)
        tell(origin.connection, report.reverts)
        if (report.touched) {
          this.queuePeople(docName, undefined, {
            origin: editorOrigin(origin.connection.context as ConnectionContext),
            changes: [],
            events: [],
            map: { mapId, created: report.created },
          })
        }
      })
      return
    }
    const guard = new BoardGuard(document)
    document.on('afterTransaction', (tr: Y.Transaction) => {
      const origin = tr.origin
      if (!isTransactionOrigin(origin) || origin.source !== 'connection') {
        guard.remember(tr)
        return
      }
      const context = origin.connection.context as ConnectionContext
      const report = guard.review(tr, { email: context.email, keyId: context.keyId })
      tell(origin.connection, report.reverts)
      if (report.changes.length > 0 || report.events.length > 0) {
        this.queuePeople(docName, undefined, {
          origin: editorOrigin(context),
          changes: report.changes,
          events: presentEvents(document, report),
        })
      }
    })
  }

  private queuePeople(
    docName: string,
    update?: Uint8Array,
    report?: PendingPeople['reports'][number],
  ): void {
    let p = this.pending.get(docName)
    if (!p) {
      p = { updates: [], reports: [], timer: undefined, flushing: undefined }
      this.pending.set(docName, p)
    }
    if (update) p.updates.push(update)
    if (report) p.reports.push(report)
    if (!p.timer) {
      p.timer = setTimeout(() => void this.flushPeople(docName), PEOPLE_FLUSH_MS)
      p.timer.unref()
    }
  }

  /** Appends the people's updates received since the last flush, as one row. */
  async flushPeople(docName: string): Promise<void> {
    const p = this.pending.get(docName)
    if (!p) return
    if (p.timer) {
      clearTimeout(p.timer)
      p.timer = undefined
    }
    await p.flushing
    if (p.updates.length === 0 && p.reports.length === 0) return
    const batch = p.updates
    const reports = p.reports
    p.updates = []
    p.reports = []
    const merged =
      batch.length === 0 ? undefined : batch.length === 1 ? batch[0] : Y.mergeUpdates(batch)
    // One transaction: the edits' bytes, their change rows and their events commit together.
    p.flushing = this.db
      .transaction(async (tx) => {
        const maps = new Map<
          string,
          { orgId: string; created: { id: string; kind: 'node' | 'edge' }[] }
        >()
        // The edits' bytes, then each editor's change rows and events: one statement.
        const records: WriteRecord[] = [
          { update: merged, keyId: undefined, changes: [], events: undefined },
        ]
        for (const r of reports) {
          if (r.map) {
            const m = maps.get(r.map.mapId) ?? { orgId: r.origin.orgId, created: [] }
            m.created.push(...r.map.created)
            maps.set(r.map.mapId, m)
          }
          const sink = r.events.length > 0 ? this.eventSink : undefined
          const staged = sink?.stage(r.origin, r.events)
          if (sink && !staged) await sink.store(tx, r.origin, r.events)
          records.push({ update: undefined, keyId: undefined, changes: r.changes, events: staged })
        }
        const target = { docName, orgId: docName.slice(0, 36), allOrNothing: true }
        const stored = records.filter((r) => !recordsNothing(r))
        if (stored.length > 0) {
          recordWrites(tx, target, stored)
            .then((r) => this.eventSink?.stored(r.deliveryIds))
            .catch(() => {})
        }
        for (const [mapId, m] of maps) {
          tx.query('update maps set updated_at = now() where id = $1 and org_id = $2', [
            mapId,
            m.orgId,
          ]).catch(() => {})
          for (const item of m.created) {
            tx.query(
              'insert into map_items (id, org_id, map_id, kind) values ($1, $2, $3, $4) on conflict (id) do nothing',
              [item.id, m.orgId, mapId, item.kind],
            ).catch(() => {})
          }
        }
      })
      .then(() => {
        if (merged) this.countAppend(docName, merged.length)
      })
      .catch((error: unknown) => {
        // Keep everything and try again: losing a person's edit is worse than a retry.
        this.log.error('storing people updates failed; retrying', error)
        if (merged) p.updates.unshift(merged)
        p.reports.unshift(...reports)
        if (!p.timer) {
          p.timer = setTimeout(() => void this.flushPeople(docName), 1000)
          p.timer.unref()
        }
      })
      .finally(() => {
        p.flushing = undefined
      })
    await p.flushing
  }

  /** What `docName` appended since its last compaction (kept from here on). */
  private appendState(docName: string) {
    let n = this.appended.get(docName)
    if (!n) {
      n = { rows: 0, bytes: 0, snapshot: 0 }
      this.appended.set(docName, n)
    }
    return n
  }

  private countAppend(docName: string, bytes: number): void {
    const n = this.appendState(docName)
    n.rows += 1
    n.bytes += bytes
    if (n.rows >= COMPACT_AFTER && n.bytes >= n.snapshot * COMPACT_GROWTH) {
      this.scheduleCompaction(docName)
    }
  }

  private scheduleCompaction(docName: string): void {
    const n = this.appendState(docName)
    n.rows = 0
    n.bytes = 0
    const job = compact(this.db, docName, (updates) => this.compactor.snapshot(updates))
      .then((snapshot) => {
        if (snapshot !== undefined) this.appendState(docName).snapshot = snapshot
      })
      .catch((error: unknown) => this.log.error(`compacting ${docName} failed`, error))
      .finally(() => this.compactions.delete(job))
    this.compactions.add(job)
  }

  /**
   * Closes the live connections a target names, on every server process: a revoked key or
   * a person removed from the organisation loses its open documents at once, not at its
   * next reconnect; a deleted map's document closes for everyone.
   */
  closeConnections(target: CloseTarget): void {
    this.control.close(target)
  }

  /** Closes this process's connections that `target` names. */
  private closeHere(target: CloseTarget): void {
    const deleted = 'documentName' in target
    for (const document of this.hocuspocus.documents.values()) {
      if (deleted && document.name !== target.documentName) continue
      for (const connection of document.getConnections()) {
        const c = connection.context as ConnectionContext
        if (deleted) {
          connection.close({ code: 4404, reason: 'This map was deleted' })
        } else if (
          'keyId' in target
            ? c.keyId === target.keyId
            : c.orgId === target.orgId && c.userId === target.userId
        ) {
          connection.close({ code: 4403, reason: 'Access revoked' })
        }
      }
    }
  }

  /** Flushes everything and unloads every document (graceful shutdown). */
  async close(): Promise<void> {
    for (const promise of this.entries.values()) {
      const entry = await promise.catch(() => undefined)
      if (entry?.idleTimer) clearTimeout(entry.idleTimer)
    }
    this.hocuspocus.closeConnections()
    await Promise.all([...this.pending.keys()].map((name) => this.flushPeople(name)))
    for (const promise of [...this.entries.values()]) {
      const entry = await promise.catch(() => undefined)
      if (entry) {
        entry.refs = 0
        await this.unload(entry)
      }
    }
    await Promise.all([...this.pending.keys()].map((name) => this.flushPeople(name)))
    await Promise.all(this.compactions)
    await this.compactor.close()
    await this.control.stop()
    // Lets extensions release what they hold (the Redis extension's connections).
    await this.hocuspocus.hooks('onDestroy', { instance: this.hocuspocus })
  }
}

/** Fills a guard's events with the records webhooks carry, as the agent path does. */
function presentEvents(doc: Y.Doc, report: GuardReport): DomainEvent[] {
  if (report.events.length === 0) return []
  const view = new BoardView(doc)
  return report.events.map((event) => {
    const taskId = String(event.data.taskId)
    const stored = view.storedTask(taskId)
    const task = stored ? view.present(stored) : undefined
    switch (event.type) {
      case 'card.created':
        return { type: event.type, data: { task } }
      case 'card.moved':
        return { type: event.type, data: { ...event.data, task } }
      case 'comment.added': {
        const comment = view.storedComments().find((c) => c.id === event.data.commentId)
        return { type: event.type, data: { comment, taskId, authorIsHuman: true } }
      }
      default:
        return event
    }
  })
}
