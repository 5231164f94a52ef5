import {
  type Connection,
  type Document,
  type Extension,
  Hocuspocus,
  type onAuthenticatePayload,
  type onLoadDocumentPayload,
} from '@hocuspocus/server'
import { Redis as IORedis } from 'ioredis'
import * as decoding from 'lib0/decoding'
import * as Y from 'yjs'
import { isConnectionError } from '../../persistence/availability.ts'
import type { Db } from '../../persistence/types.ts'
import { boardDocName } from '../../shared/board-doc.ts'
import { orgIdOf, parseDocName } from '../../shared/doc-names.ts'
import { CLOSE, encodeNotice } from '../../shared/live-protocol.ts'
import { generationOf } from '../../shared/rebase.ts'
import type { Logger } from '../http/json.ts'
import type { Metrics } from '../metrics/metrics.ts'
import { Compaction } from './compaction.ts'
import { type CloseTarget, ConnectionControl, type Notice } from './connection-control.ts'
import { loadInto, replay, type Stored, storedBeyond } from './doc-store.ts'
import { endedClients } from './generations.ts'
import { type Rebased, rebase } from './rebase.ts'
import './hold.ts'
import { type ConnectionContext, type DocEntry, DocRegistry } from './doc-registry.ts'
import type { EventSink } from './events.ts'
import { OrgLane } from './lane.ts'
import { REDIS_ORIGIN, RESTORE_ORIGIN, type WriteOrigin } from './origins.ts'
import { OrgOwners } from './owners.ts'
import type { PendingArchived } from './pending-edits.ts'
import { GatedRedis, watchRedis } from './redis.ts'
import type { EditReviewer, ReviewHost } from './reviewer.ts'
import type { WriteScope } from './write-scope.ts'

export type { ConnectionContext } from './doc-registry.ts'

export type Authenticate = (token: string, documentName: string) => Promise<ConnectionContext>

/** How long a connection's authentication waits for a database that does not answer. */
const AUTH_WAIT_MS = 60_000
/** Map-list notices of one organisation within this long go out as one. */
const MAPS_NOTICE_MS = 100

/** Hocuspocus message types (types.ts in @hocuspocus/server) that carry document content. */
const SYNC = 0
const SYNC_REPLY = 4

/**
 * Every live document of this process, and the one way the server reads and writes them.
 * - Documents (registry.ts): loaded on demand, held once, unloaded when idle.
 * - Writes and reads (lane.ts): per organisation, in order; a write's changes are seen by
 *   nobody until they committed, a read sees only committed state.
 * - People's edits (people.ts): reviewed by the guards as they arrive, stored by the lane.
 * - Compaction (compaction.ts): keeps a cold load to a bounded number of stored rows.
 * - Scale-out: with Redis, several processes share live documents (redis.ts) and close
 *   each other's connections when access is revoked (connection-control.ts).
 */
/** Tries of a re-base compaction asked for, and the wait between them (ms). */
const REBASE_ATTEMPTS = 5
const REBASE_RETRY_MS = 3_000
/** How long what a re-base stored is held for the document's next load. */
const STORED_KEPT_MS = 10_000

export class LiveDocs {
  readonly hocuspocus: Hocuspocus<ConnectionContext>
  private readonly registry: DocRegistry
  private readonly lanes = new Map<string, OrgLane>()
  private readonly compaction: Compaction
  private readonly reviewer: EditReviewer | undefined
  private readonly control: ConnectionControl
  private readonly mapsNoticeDue = new Map<string, NodeJS.Timeout>()
  private readonly db: Db
  private readonly peopleFlushMs: number | undefined
  /**
   * With Redis, which process serves each organisation's agents (owners.ts): only that one
   * decides the organisation's claims in memory (lane.ts). Without, this process does.
   */
  readonly owners: OrgOwners | undefined
  private readonly log: Logger
  /** The board held open while a card's document is loaded (its stats live there). */
  private readonly boards = new Map<string, DocEntry>()
  /** Releases of people's sync messages admitted through a lane's gate, per connection. */
  private readonly admitted = new WeakMap<Connection, () => void>()
  /** The Redis extension, when documents are shared with other processes. */
  private readonly shared: GatedRedis | undefined
  /** Where writes' events go; set by the webhooks module. Without it events are dropped. */
  eventSink: EventSink | undefined
  private readonly metrics: Metrics | undefined
  /** Each loaded document's stored size (rows loaded plus updates since), for the metrics. */
  private readonly storedBytes = new Map<string, number>()
  /**
   * Per loaded document that was ever re-based, the clients of its ended generations: a
   * replica whose state names one holds an ended generation, and is refused.
   */
  private readonly ended = new Map<string, Set<number>>()
  /**
   * What a re-base here just stored, for the document's next load to start from rather than
   * read back: every write after a re-base waits for that load. Kept a few seconds.
   */
  private readonly stored = new Map<string, { rows: Stored; timer: NodeJS.Timeout }>()
  /** Re-bases under way in this process, by document. */
  private readonly rebasing = new Map<string, Promise<Rebased>>()
  /** Re-bases compaction asked for that failed, due again. */
  private readonly rebaseRetries = new Set<NodeJS.Timeout>()
  private closing = false
  /** The catch-up with storage under way, and whether another was asked for meanwhile. */
  private catchingUp: Promise<void> | undefined
  private catchUpAgain = false

  constructor(options: {
    db: Db
    idleMs: number
    log: Logger
    authenticate: Authenticate
    /** Reviews people's edits (server/review/); without one they are stored as they come. */
    reviewer?: (host: ReviewHost) => EditReviewer
    /** With Redis, several server processes share live documents (each change is published). */
    redis?: { url: string; prefix: string } | undefined
    metrics?: Metrics | undefined
    /** How long people's edits wait to be stored when no write takes them (tests widen it). */
    peopleFlushMs?: number | undefined
    /**
     * Told of each board document loaded when documents are shared with other processes
     * (server/claims/follow.ts keeps its claims on Postgres's).
     */
    sharedBoardLoaded?: (document: Y.Doc, orgId: string) => void
    /** Compaction's thread at the lowest priority (the default) or not (tests waiting on it). */
    compactionLowPriority?: boolean
  }) {
    this.db = options.db
    this.peopleFlushMs = options.peopleFlushMs
    this.owners =
      options.redis &&
      new OrgOwners({
        ...options.redis,
        log: options.log,
        taken: () => this.catchUp(),
        keep: (orgId) => this.lanes.has(orgId),
      })
    this.log = options.log
    this.metrics = options.metrics
    this.compaction = new Compaction(this.db, this.log, {
      lowPriority: options.compactionLowPriority,
    })
    const extension: Extension = {
      onAuthenticate: async ({ token, documentName }: onAuthenticatePayload) => {
        const ref = parseDocName(documentName)
        if (!ref) throw new Error('Unknown document')
        // A refusal is final for the provider (it does not ask again on its own socket), so
        // while the database is away the connection waits for it rather than be refused.
        return this.whenStorageAnswers(() => options.authenticate(token, documentName))
      },
      onLoadDocument: async ({ document, documentName }: onLoadDocumentPayload) => {
        const ref = parseDocName(documentName)
        if (!ref) throw new Error('Unknown document')
        const stored = this.stored.get(documentName)
        this.stored.delete(documentName)
        const loaded = await loadInto(this.db, documentName, document, undefined, stored?.rows)
        if (loaded.missing.length > 0) {
          this.log.error(
            `${documentName}: its stored rows refer to items none of them holds (${loaded.missing
              .map(([client, clock]) => `${client}:${clock}`)
              .join(', ')}); what depends on them is not shown`,
          )
        }
        // People's edits not yet stored (a reload after an eviction): already reviewed.
        replay(document, this.lane(ref.orgId).people.updatesOf(documentName), RESTORE_ORIGIN)
        this.compaction.loaded(documentName, loaded.rows)
        if (generationOf(document) > 0)
          this.ended.set(documentName, await endedClients(this.db, documentName))
        // Its stored size: the rows it loaded from, then every update applied since.
        this.storedBytes.set(
          documentName,
          loaded.rows.reduce((sum, r) => sum + r.bytes, 0),
        )
        document.on('update', (update: Uint8Array) => {
          const bytes = this.storedBytes.get(documentName)
          if (bytes !== undefined) this.storedBytes.set(documentName, bytes + update.length)
        })
        this.reviewer?.watch(document)
        if (ref.kind === 'board' && options.redis) options.sharedBoardLoaded?.(document, ref.orgId)
      },
      afterLoadDocument: async ({ documentName }) => {
        const ref = parseDocName(documentName)
        if (ref?.kind !== 'card' || this.boards.has(documentName)) return
        this.boards.set(documentName, await this.registry.acquire(boardDocName(ref.orgId)))
      },
      afterUnloadDocument: async ({ documentName }) => {
        const board = this.boards.get(documentName)
        this.boards.delete(documentName)
        if (board) this.registry.release(board)
        this.compaction.forget(documentName)
        this.storedBytes.delete(documentName)
        if (!this.hocuspocus.documents.has(documentName)) this.ended.delete(documentName)
        this.dropIdleLane(orgIdOf(documentName))
      },
      beforeHandleMessage: async ({ connection, update, document }) => {
        if (!carriesContent(update)) return
        const ended = this.ended.get(document.name)
        if (ended && holdsEndedGeneration(update, ended, document)) {
          // Closes this document's connection with the reason (Hocuspocus logs it).
          throw Object.assign(new Error(CLOSE.rebased.reason), {
            code: CLOSE.rebased.code,
            reason: CLOSE.rebased.reason,
          })
        }
        const done = await this.lane(orgIdOf(document.name)).gate.read()
        if (document.isDestroyed) {
          // Evicted or unloaded under this connection: it reconnects to the live copy.
          done()
          throw Object.assign(new Error(CLOSE.reloaded.reason), { code: CLOSE.reloaded.code })
        }
        this.reviewer?.prepare(document)
        this.admitted.set(connection, done)
      },
      afterHandleMessage: async ({ connection }) => {
        const done = this.admitted.get(connection)
        this.admitted.delete(connection)
        done?.()
      },
    }
    const extensions: Extension[] = [extension]
    if (options.redis) {
      const { url, prefix } = options.redis
      this.shared = new GatedRedis(
        {
          // ioredis reads the whole URL: password, database, and TLS for rediss://.
          createClient: () => watchRedis(new IORedis(url), 'live documents', this.log),
          prefix,
        },
        (name) => this.lane(orgIdOf(name)).gate.read(),
        {
          published: (seconds) => options.metrics?.redisPublish.observe(seconds),
          missed: () => void this.catchUp(),
          stale: (name, message) => {
            const ended = this.ended.get(name)
            const document = this.hocuspocus.documents.get(name)
            return !!ended && !!document && holdsEndedGeneration(message, ended, document)
          },
        },
      )
      extensions.push(this.shared)
    }
    this.hocuspocus = new Hocuspocus<ConnectionContext>({ quiet: true, extensions })
    this.registry = new DocRegistry({
      hocuspocus: this.hocuspocus,
      idleMs: options.idleMs,
      log: this.log,
    })
    this.reviewer = options.reviewer?.({
      pending: (orgId) => ({
        addUpdate: (docName, update, generation) => {
          this.lane(orgId).people.addUpdate(docName, update, generation)
          this.lane(orgId).schedulePeopleFlush()
        },
        addReport: (report) => {
          this.lane(orgId).people.addReport(report)
          this.lane(orgId).schedulePeopleFlush()
        },
      }),
      log: this.log,
      ...(options.metrics ? { observe: peopleCounters(options.metrics) } : {}),
      loaded: (docName) => this.registry.loaded(docName),
      write: (docName, origin, fn, opens) => this.write(docName, origin, fn, opens),
    })
    this.compaction.onDominated = (docName) => this.rebaseDominated(docName, 0)
    this.control = new ConnectionControl({
      closeHere: (target) => this.closeHere(target),
      noticeHere: (notice) => this.noticeHere(notice),
      redis: options.redis,
      log: this.log,
    })
  }

  /** The organisation's lane: its writes, reads and people's edits, in one order. */
  lane(orgId: string): OrgLane {
    let lane = this.lanes.get(orgId)
    if (!lane) {
      lane = new OrgLane(orgId, {
        db: this.db,
        registry: this.registry,
        compaction: this.compaction,
        log: this.log,
        eventSink: () => this.eventSink,
        metrics: this.metrics,
        peopleFlushMs: this.peopleFlushMs,
        claimsInMemory: this.owners && (() => this.owners?.serves(orgId) === true),
      })
      this.lanes.set(orgId, lane)
    }
    return lane
  }

  private dropIdleLane(orgId: string): void {
    const lane = this.lanes.get(orgId)
    if (!lane?.idle) return
    // A document of the organisation loaded or loading keeps its lane: its people's edits
    // and reloads go through it. Read in place, never copied: thousands of documents
    // unloading at once each ask this.
    const { documents, loadingDocuments } = this.hocuspocus
    for (const names of [documents.keys(), loadingDocuments.keys()]) {
      for (const name of names) if (name.startsWith(orgId)) return
    }
    this.lanes.delete(orgId)
  }

  /**
   * Runs `fn`, waiting first while the database does not answer and running it again when
   * it failed for that reason, for up to AUTH_WAIT_MS (the socket is closed sooner if it
   * stays unauthenticated, and the provider reconnects and asks again).
   */
  private async whenStorageAnswers<T>(fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + AUTH_WAIT_MS
    for (;;) {
      while (!this.db.availability.available && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200))
      }
      try {
        return await fn()
      } catch (error) {
        if (!isConnectionError(error) || Date.now() >= deadline) throw error
      }
    }
  }

  /** Reads a live document once it holds only committed state. `fn` must not keep references. */
  async read<T>(docName: string, fn: (doc: Y.Doc) => T | Promise<T>): Promise<T> {
    return this.lane(orgIdOf(docName)).read([docName], ([doc]) => fn(doc as Document))
  }

  /**
   * Starts loading a document that is about to be asked for (a sync token was just handed
   * out: the page's socket follows within moments), so its load overlaps the socket's
   * opening instead of following it. Kept for DOC_IDLE_MS like any other use; a failure
   * is left to the request that really needs the document.
   */
  warm(docName: string): void {
    this.read(docName, () => undefined).catch(() => {})
  }

  /**
   * Starts loading a document not in memory yet while the caller waits on something else
   * (`warm`); nothing when it is loaded or loading already.
   */
  loadAhead(docName: string): void {
    const { documents, loadingDocuments } = this.hocuspocus
    if (!documents.has(docName) && !loadingDocuments.has(docName)) this.warm(docName)
  }

  /**
   * The one write path (lane.ts): `fn` runs on the document named (and any other of the
   * organisation it opens) inside one Postgres transaction; its changes are stored with
   * it and shown to anyone only after the commit.
   */
  write<T>(
    docName: string,
    origin: WriteOrigin,
    fn: (scope: WriteScope) => Promise<T>,
    opens: readonly string[] = [],
  ): Promise<T> {
    return this.lane(origin.orgId).write(docName, origin, fn, opens)
  }

  /**
   * What people's edits not yet stored do to archived cards' rows (a person archived a card,
   * or commented on one, a moment ago): a reader of archived rows reads them through this.
   */
  pendingArchived(orgId: string): ReadonlyMap<string, PendingArchived> {
    return this.lanes.get(orgId)?.people.archivedAll() ?? new Map()
  }

  /** Stores people's pending edits of an organisation (or all) now. */
  async flushPeople(orgId?: string): Promise<void> {
    const lanes = orgId ? [this.lanes.get(orgId)] : [...this.lanes.values()]
    await Promise.all(lanes.map((lane) => lane?.flushPeople()))
  }

  /**
   * A document being deleted: people's edits of it not yet stored never will be. Call it
   * inside the deleting write (before it stores what is pending) and again once it
   * committed, with `close`, so nobody keeps the document open on any process.
   */
  forgetDocument(documentName: string, close?: CloseTarget): void {
    this.lane(orgIdOf(documentName)).people.forgetDoc(documentName)
    if (close) this.closeConnections(close)
  }

  /**
   * Closes the live connections a target names, on every server process: a revoked key or
   * a person removed from the organisation loses its open documents at once, not at its
   * next reconnect; a deleted map's or card's document closes for everyone.
   */
  closeConnections(target: CloseTarget): void {
    this.control.close(target)
  }

  /**
   * Starts a document over as a new generation (rebase.ts; docs/design.md, "Re-basing a
   * document"). Compaction asks for it when tombstones dominate a document's stored form;
   * the upgrade to version 3 and tests ask directly. One at a time per document.
   */
  rebase(docName: string): Promise<Rebased> {
    const running = this.rebasing.get(docName)
    if (running) return running
    const job = rebase(
      {
        db: this.db,
        registry: this.registry,
        compaction: this.compaction,
        lane: (orgId) => this.lane(orgId),
        log: this.log,
        rebased: (name, stored) => {
          this.dropRebased(name)
          this.hold(name, stored)
          this.control.close({ rebased: name })
        },
      },
      docName,
    )
      .then((done) => {
        this.log.info(
          `re-based ${docName} to generation ${done.generation}: ${done.bytesBefore} → ${done.bytesAfter} bytes, writes held ${done.heldMs.toFixed(1)} ms`,
        )
        return done
      })
      .finally(() => this.rebasing.delete(docName))
    this.rebasing.set(docName, job)
    return job
  }

  /**
   * Re-bases a document compaction found dominated by tombstones. A failure (a write of the
   * organisation failing meanwhile, the database away) is tried again a few seconds later,
   * a few times: the next snapshot, which would ask again, may be a long way off when
   * nobody writes.
   */
  private rebaseDominated(docName: string, attempt: number): void {
    this.rebase(docName).catch((error: unknown) => {
      if (this.closing || attempt >= REBASE_ATTEMPTS - 1) {
        this.log.error(`re-basing ${docName} failed; the next snapshot tries again`, error)
        return
      }
      this.log.info(`re-basing ${docName} failed; again in ${REBASE_RETRY_MS} ms`, error)
      const timer = setTimeout(() => {
        this.rebaseRetries.delete(timer)
        this.rebaseDominated(docName, attempt + 1)
      }, REBASE_RETRY_MS)
      timer.unref()
      this.rebaseRetries.add(timer)
    })
  }

  /** Holds `rows` for the next load of `docName` (see `stored`). */
  private hold(docName: string, rows: Stored): void {
    const previous = this.stored.get(docName)
    if (previous) clearTimeout(previous.timer)
    const timer = setTimeout(() => {
      if (this.stored.get(docName)?.timer === timer) this.stored.delete(docName)
    }, STORED_KEPT_MS)
    timer.unref()
    this.stored.set(docName, { rows, timer })
  }

  /**
   * This process's copy of a re-based document is of an ended generation: people's pending
   * edits of it are dropped (their apps carry them across), and its connections close with
   * the reason "re-based".
   */
  private dropRebased(docName: string): void {
    this.lane(orgIdOf(docName)).people.forgetDoc(docName)
    this.ended.delete(docName)
    this.registry.evict([docName], CLOSE.rebased)
  }

  /**
   * The organisation's map list changed: everyone with the board open (the app keeps it
   * open on every page) is told to read the list again, on every process. Notices of one
   * organisation within MAPS_NOTICE_MS go out as one, so a burst of writes to a map costs
   * people one reload, not one per write.
   */
  mapsChanged(orgId: string): void {
    if (this.mapsNoticeDue.has(orgId)) return
    const timer = setTimeout(() => {
      this.mapsNoticeDue.delete(orgId)
      this.control.notify({
        documentName: boardDocName(orgId),
        payload: encodeNotice({ type: 'maps-changed' }),
      })
    }, MAPS_NOTICE_MS)
    timer.unref()
    this.mapsNoticeDue.set(orgId, timer)
  }

  /** Sends a notice to this process's connections to its document. */
  private noticeHere(notice: Notice): void {
    const document = this.registry.loaded(notice.documentName)
    for (const connection of document?.getConnections() ?? []) {
      connection.sendStateless(notice.payload)
    }
  }

  /** Closes this process's connections that `target` names. */
  private closeHere(target: CloseTarget): void {
    if ('rebased' in target) {
      // Another process re-based it (this one did it already when it is the one).
      if (this.rebasing.has(target.rebased)) return
      const lane = this.lane(orgIdOf(target.rebased))
      lane
        .alone(async () => this.dropRebased(target.rebased))
        .catch(() => {
          this.dropRebased(target.rebased)
        })
      return
    }
    const deleted = 'documentName' in target
    for (const document of this.registry.documents()) {
      if (deleted && document.name !== target.documentName) continue
      for (const connection of document.getConnections()) {
        const c = connection.context as ConnectionContext
        if (deleted) {
          const kind = parseDocName(document.name)?.kind
          connection.close(kind === 'card' ? CLOSE.cardDeleted : CLOSE.mapDeleted)
        } else if (
          'keyId' in target
            ? c.keyId === target.keyId
            : c.orgId === target.orgId && c.userId === target.userId
        ) {
          connection.close(CLOSE.accessRevoked)
        }
      }
    }
  }

  /** What the metrics gauges read: documents in memory by kind, and the lanes' backlog. */
  stats() {
    const documents = new Map<string, { count: number; bytes: number }>()
    for (const name of this.hocuspocus.documents.keys()) {
      const kind = parseDocName(name)?.kind
      if (!kind) continue
      const d = documents.get(kind) ?? { count: 0, bytes: 0 }
      d.count += 1
      d.bytes += this.storedBytes.get(name) ?? 0
      documents.set(kind, d)
    }
    const lanes = { waiting: 0, uncommitted: 0, peoplePending: 0 }
    for (const lane of this.lanes.values()) {
      lanes.waiting += lane.gate.waiting
      lanes.uncommitted += lane.gate.holding
      lanes.peoplePending += lane.people.size
    }
    return { documents, lanes }
  }

  /**
   * Brings every loaded document up to what storage holds (GatedRedis says when: a process
   * sharing them went away, or this one's Redis subscription was lost a while). Applied as
   * another process's change: stored already, published by nobody; people connected here
   * receive it as usual. Runs one at a time; asked meanwhile, it runs once more after.
   */
  private catchUp(): Promise<void> {
    if (this.catchingUp) {
      this.catchUpAgain = true
      return this.catchingUp
    }
    this.catchingUp = (async () => {
      do {
        this.catchUpAgain = false
        for (const [name, document] of [...this.hocuspocus.documents]) {
          if (this.closing) return
          if (document.isDestroyed) continue
          try {
            const beyond = await storedBeyond(this.db, name, document, generationOf(document))
            if (!beyond) continue
            const done = await this.lane(orgIdOf(name)).gate.read()
            try {
              if (!document.isDestroyed) Y.applyUpdate(document, beyond, REDIS_ORIGIN)
            } finally {
              done()
            }
          } catch (error) {
            // Storage away: the copy stays as it is until the next catch-up or its reload.
            this.log.error(`catching ${name} up with storage failed`, error)
          }
        }
      } while (this.catchUpAgain && !this.closing)
    })().finally(() => {
      this.catchingUp = undefined
    })
    return this.catchingUp
  }

  /** Whether Redis answers (readiness); undefined when documents are not shared through Redis. */
  redisAnswers(): Promise<boolean | undefined> {
    return this.control.ping()
  }

  /** Stores everything pending and unloads every document (graceful shutdown). */
  async close(): Promise<void> {
    this.closing = true
    // Another process takes this one's organisations at their next agent call.
    await this.owners?.close()
    for (const timer of this.rebaseRetries) clearTimeout(timer)
    this.rebaseRetries.clear()
    for (const { timer } of this.stored.values()) clearTimeout(timer)
    this.stored.clear()
    // Unloading would tell Redis (unsubscribe, locks): nothing it needs (see letGo).
    this.shared?.letGo()
    await this.catchingUp
    this.hocuspocus.closeConnections()
    await Promise.all([...this.lanes.values()].map((lane) => lane.close()))
    for (const board of this.boards.values()) this.registry.release(board)
    this.boards.clear()
    await this.registry.close()
    await Promise.all([...this.lanes.values()].map((lane) => lane.close()))
    await this.compaction.close()
    for (const timer of this.mapsNoticeDue.values()) clearTimeout(timer)
    this.mapsNoticeDue.clear()
    await this.control.stop()
    // Lets extensions release what they hold (the Redis extension's connections).
    await this.hocuspocus.hooks('onDestroy', { instance: this.hocuspocus })
  }
}

function peopleCounters(metrics: Metrics): NonNullable<ReviewHost['observe']> {
  return {
    reviewed: (kind) => metrics.peopleReviewed.inc({ kind }),
    reverted: (kind) => metrics.peopleReverted.inc({ kind }),
  }
}

/** Whether a connection's message carries document content (sync), not awareness or auth. */
function carriesContent(message: Uint8Array): boolean {
  try {
    const decoder = decoding.createDecoder(message)
    decoding.readVarString(decoder)
    const type = decoding.readVarUint(decoder)
    return type === SYNC || type === SYNC_REPLY
  } catch {
    return true
  }
}

/** y-protocols sync message types. */
const SYNC_STEP_1 = 0

/**
 * Whether a sync message comes from a replica of an ended generation: its state vector
 * (step 1) or its update (step 2, update) names a client of an ended generation beyond
 * what the current one holds of it.
 */
function holdsEndedGeneration(message: Uint8Array, ended: Set<number>, doc: Y.Doc): boolean {
  let named: Map<number, number>
  try {
    const decoder = decoding.createDecoder(message)
    decoding.readVarString(decoder)
    decoding.readVarUint(decoder)
    const step = decoding.readVarUint(decoder)
    const payload = decoding.readVarUint8Array(decoder)
    named = Y.decodeStateVector(
      step === SYNC_STEP_1 ? payload : Y.encodeStateVectorFromUpdate(payload),
    )
  } catch {
    return false
  }
  for (const [client, clock] of named) {
    if (clock > 0 && ended.has(client) && Y.getState(doc.store, client) < clock) return true
  }
  return false
}
