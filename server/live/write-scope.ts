import type * as Y from 'yjs'
import type { Queryable } from '../../persistence/types.ts'
import { HistoryCollector } from './card-history.ts'
import type { ChangeKind, DomainEvent } from './events.ts'
import type { WriteOrigin } from './origins.ts'
import type { PendingArchived } from './pending-edits.ts'
import type { ClaimCheck, IdempotentWrite, RowOp } from './write-record.ts'

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
  /** The entities of a kind this write has recorded as changed so far. */
  changedIds(kind: ChangeKind): string[]
  /** Records an event for webhooks, committed with the write (the outbox). */
  emit(event: DomainEvent): void
  /** Puts or removes a row of the history tables, committed with the write. */
  row(op: RowOp): void
  /** Changes the write's document; synchronous, so nothing interleaves with it. */
  mutate<T>(fn: (doc: Y.Doc) => T): T
  /** Changes another document this write opened. */
  mutateDoc<T>(doc: Y.Doc, fn: (doc: Y.Doc) => T): T
  /**
   * Stores an update for a document nobody has loaded, without loading it: the first
   * content of a document made with this write (a new card's description).
   */
  append(docName: string, update: Uint8Array): void
  /**
   * Waits until every write computed before this one has committed. A write that locks rows
   * (FOR UPDATE) calls it first: an earlier write of its lane still committing may change
   * those rows, and would wait for this write's lock while this write waits for its commit.
   */
  earlierCommitted(): Promise<void>
  /** Runs once the transaction committed and the documents show the change. */
  afterCommit(fn: () => void): void
  /**
   * Runs if the write fails (nothing of it committed): undoes what it told a cache as it
   * computed (a description a card presented inside the write reads).
   */
  onFailure(fn: () => void): void
  /**
   * What people's edits not yet stored do to an archived card's row (a person archived the
   * card, or commented on it since): they are stored ahead of this write but after it
   * reads, so a row read from storage is read through this (board/history.ts lockArchived).
   */
  pendingArchived(taskId: string): PendingArchived
  /** The same, for every archived card people's pending edits touch. */
  pendingArchivedAll(): ReadonlyMap<string, PendingArchived>
  /**
   * Marks an Idempotency-Key done with this write's answer as the write is stored, in its
   * record statement: the answer commits with the write, and the write still joins group
   * commit. If a retry took the key over meanwhile, the write is refused
   * (IdempotencyTakenOver) and nothing of it is stored. The answer is usually the write's
   * result, so this may be called as the callback returns; a later call replaces an earlier.
   */
  idempotent(entry: IdempotentWrite): void
  /**
   * A claim decision made from the documents in memory, checked and stored with the write
   * (ClaimCheck): the write keeps its place in group commit, and is computed again if the
   * decision no longer holds when it is stored.
   */
  checkClaim(check: ClaimCheck): void
  /**
   * True when this write is computed again because a claim decision of its batch no longer
   * held: claims are then decided in Postgres, inside the write's transaction.
   */
  readonly claimsInStorage: boolean
  /**
   * Called before the write's transaction takes claim locks itself: waits for the lane's
   * earlier writes, since a batch of them may be holding claim locks (claims decided in
   * memory, which a scaled-out process does while it serves the organisation).
   */
  beforeClaimLocks(): Promise<void>
}

/**
 * The scope a write's callback gets: it changes the documents under the write's
 * transaction origin (held until the commit, hold.ts) and collects what the write's
 * record statement stores with them.
 */
export class WriteCollector implements WriteScope {
  readonly tx: Queryable
  readonly origin: WriteOrigin
  readonly now = new Date().toISOString()
  readonly changes: { kind: ChangeKind; entityId: string }[] = []
  readonly events: DomainEvent[] = []
  readonly ops: RowOp[] = []
  readonly after: (() => void)[] = []
  readonly failure: (() => void)[] = []
  readonly appended: { doc: string; update: Uint8Array; generation: 0; unloaded: true }[] = []
  idempotency: IdempotentWrite | undefined
  /** What the write did to cards, read off its transactions (card-history.ts). */
  readonly history = new HistoryCollector()
  readonly claims: ClaimCheck[] = []
  readonly claimsInStorage: boolean
  /** The callback queried the transaction: it cannot join a batch (group commit). */
  queried = false
  private readonly main: Y.Doc | undefined
  private readonly docs: ReadonlyMap<string, Y.Doc>
  private readonly marker: object
  private readonly pending: () => ReadonlyMap<string, PendingArchived>
  private readonly earlier: () => Promise<void>

  constructor(options: {
    tx: Queryable
    origin: WriteOrigin
    /** The write's own document, if it has one. */
    main: Y.Doc | undefined
    /** Every document the write named. */
    docs: ReadonlyMap<string, Y.Doc>
    /** The write's transaction origin. */
    marker: object
    pendingArchived: () => ReadonlyMap<string, PendingArchived>
    earlierCommitted: () => Promise<void>
    claimsInStorage?: boolean
  }) {
    const { tx } = options
    this.tx = {
      query: (text, params) => {
        this.queried = true
        return tx.query(text, params)
      },
    }
    this.origin = options.origin
    this.main = options.main
    this.docs = options.docs
    this.marker = options.marker
    this.pending = options.pendingArchived
    this.earlier = options.earlierCommitted
    this.claimsInStorage = options.claimsInStorage ?? false
  }

  get doc(): Y.Doc {
    if (!this.main) throw new Error('this write has no document of its own')
    return this.main
  }

  open(name: string): Y.Doc {
    const doc = this.docs.get(name)
    if (!doc) throw new Error(`${name} was not named when this write started`)
    return doc
  }

  changed(kind: ChangeKind, entityId: string): void {
    this.changes.push({ kind, entityId })
  }

  changedIds(kind: ChangeKind): string[] {
    return this.changes.filter((c) => c.kind === kind).map((c) => c.entityId)
  }

  emit(event: DomainEvent): void {
    this.events.push(event)
  }

  row(op: RowOp): void {
    this.ops.push(op)
  }

  mutate<T>(fn: (doc: Y.Doc) => T): T {
    return this.mutateDoc(this.doc, fn)
  }

  mutateDoc<T>(doc: Y.Doc, fn: (doc: Y.Doc) => T): T {
    // A destroyed Y.Doc has dropped its listeners: the change would be neither held, stored
    // nor shown. The lane acquires documents again after the gate, so this cannot happen;
    // if it ever does, the write fails rather than vanish.
    if (doc.isDestroyed) throw new Error('a write reached a document after it was unloaded')
    let out: T | undefined
    this.history.watch(doc, this.origin, this.marker, () => {
      doc.transact(() => {
        out = fn(doc)
      }, this.marker)
    })
    return out as T
  }

  append(docName: string, update: Uint8Array): void {
    if (this.docs.has(docName)) throw new Error(`${docName} is open in this write: change it`)
    this.appended.push({ doc: docName, update, generation: 0, unloaded: true })
  }

  earlierCommitted(): Promise<void> {
    return this.earlier()
  }

  afterCommit(fn: () => void): void {
    this.after.push(fn)
  }

  onFailure(fn: () => void): void {
    this.failure.push(fn)
  }

  pendingArchived(taskId: string): PendingArchived {
    return this.pending().get(taskId) ?? {}
  }

  pendingArchivedAll(): ReadonlyMap<string, PendingArchived> {
    return this.pending()
  }

  idempotent(entry: IdempotentWrite): void {
    this.idempotency = entry
  }

  checkClaim(check: ClaimCheck): void {
    this.claims.push(check)
  }

  beforeClaimLocks(): Promise<void> {
    return this.earlier()
  }
}
