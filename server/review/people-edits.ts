import type { Document } from '@hocuspocus/server'
import type * as Y from 'yjs'
import { asStats, boardDocName, boardMaps, sameStats } from '../../shared/board-doc.ts'
import { cardMaps, statsOf } from '../../shared/card-doc.ts'
import { cardDocName, type DocRef, parseDocName } from '../../shared/doc-names.ts'
import { encodeNotice, type Revert } from '../../shared/live-protocol.ts'
import { generationOf } from '../../shared/rebase.ts'
import { BoardView } from '../board/board-view.ts'
import { findCard, followStats } from '../board/card-thread.ts'
import type { Descriptions } from '../board/descriptions.ts'
import { textOps } from '../board/texts.ts'
import { HistoryCollector, historyActor } from '../live/card-history.ts'
import type { ConnectionContext } from '../live/doc-registry.ts'
import type { DomainEvent } from '../live/events.ts'
import {
  type ConnectionOrigin,
  GUARD_ORIGIN,
  isConnectionOrigin,
  isWriteOrigin,
  type WriteOrigin,
} from '../live/origins.ts'
import type { EditReviewer, ReviewHost } from '../live/reviewer.ts'
import type { RowOp } from '../live/write-record.ts'
import { BoardGuard, type BoardReport, claimHolder } from './board-guard.ts'
import { CardGuard } from './card-guard.ts'
import { MapGuard } from './map-guard.ts'

/**
 * People's edits through the live documents. Each transaction from a connection is
 * reviewed by its document's guard synchronously (so a compensating revert goes out in
 * the same broadcast), the person is told what was undone, and what was accepted becomes
 * pending work of the organisation's lane (people-pending.ts): the bytes, change rows,
 * history rows and events, stored by its next write. A comment added in a card's document
 * moves the card's `stats` on the board in the same step.
 */
type Pending = ReturnType<ReviewHost['pending']>

/** How often a person's typing in a description stamps the board card's updatedAt, at most. */
const STAMP_EVERY_MS = 5_000

export class PeopleEdits implements EditReviewer {
  private readonly host: ReviewHost
  /** Cards' descriptions: a board document presents through them, a card's document feeds them. */
  private readonly descriptions: Descriptions

  constructor(host: ReviewHost, descriptions: Descriptions) {
    this.host = host
    this.descriptions = descriptions
  }

  /**
   * A document's guard, built before the first person's message is applied (the guard
   * keeps every entity's last valid state: a board only agents use never pays for it).
   */
  private readonly guards = new WeakMap<Document, () => void>()
  /**
   * The claims of each organisation's board as its copy left memory (re-based, or unloaded),
   * until it loads again: a card's description stays locked in between. Claims change only
   * through writes, which load the board first.
   */
  private readonly claimsAway = new Map<string, Map<string, unknown>>()

  /** Called before a person's sync message is applied to `document`. */
  prepare(document: Document): void {
    this.guards.get(document)?.()
  }

  /** Starts watching a document just loaded (its content, pending edits included, applied). */
  watch(document: Document): void {
    const ref = parseDocName(document.name)
    if (!ref) return
    // Looked up at each edit, never kept: the edit is pending work of the lane of now.
    const lane = () => this.host.pending(ref.orgId)
    document.on('update', (update: Uint8Array, origin: unknown) => {
      if (origin === GUARD_ORIGIN || isConnectionOrigin(origin)) {
        lane().addUpdate(document.name, update, generationOf(document))
      }
    })
    switch (ref.kind) {
      case 'board':
        this.descriptions.attach(document, ref.orgId)
        this.watchBoard(document, ref.orgId, lane)
        return
      case 'card': {
        // What the description reads once loaded, and every change of it but a server
        // write's (the write tells the cache itself, and takes it back if it fails), is
        // what this process knows.
        const text = cardMaps(document).description
        this.descriptions.set(ref.orgId, ref.taskId, text.toString())
        text.observe((event) => {
          if (!isWriteOrigin(event.transaction.origin))
            this.descriptions.set(ref.orgId, ref.taskId, text.toString())
        })
        this.watchCard(document, ref, lane)
        return
      }
      case 'map':
        this.watchMap(document, ref, lane)
        return
      default:
        ref satisfies never
    }
  }

  /** The guard of `document`, made by `make` when first needed (see `prepare`). */
  private lazyGuard<G>(document: Document, make: () => G): () => G | undefined {
    let guard: G | undefined
    this.guards.set(document, () => {
      guard ??= make()
    })
    return () => guard
  }

  /**
   * Calls `handle` for each person's edit of `document`, with the document's guard (built
   * before the edit applied); every other transaction only updates the guard's memory.
   */
  private onPersonEdit<G extends { remember(tr: Y.Transaction): void }>(
    document: Document,
    kind: DocRef['kind'],
    guardOf: () => G | undefined,
    handle: (guard: G, tr: Y.Transaction, origin: ConnectionOrigin) => void,
  ): void {
    document.on('afterTransaction', (tr: Y.Transaction) => {
      const origin = tr.origin
      if (!isConnectionOrigin(origin)) {
        guardOf()?.remember(tr)
        return
      }
      this.host.observe?.reviewed(kind)
      handle(unguarded(guardOf()), tr, origin)
    })
  }

  private watchBoard(document: Document, orgId: string, lane: () => Pending): void {
    this.claimsAway.delete(orgId)
    document.on('destroy', () => {
      const claims = boardMaps(document).claims
      if (claims.size === 0) this.claimsAway.delete(orgId)
      else this.claimsAway.set(orgId, new Map(Object.entries(claims.toJSON())))
    })
    const guardOf = this.lazyGuard(document, () => new BoardGuard(document))
    this.onPersonEdit(document, 'board', guardOf, (guard, tr, origin) => {
      const context = origin.connection.context as ConnectionContext
      const report = guard.review(tr, { email: context.email, keyId: context.keyId })
      this.tell('board', origin.connection, report.reverts)
      if (report.changes.length > 0 || report.events.length > 0 || report.ops.length > 0) {
        const changedCards = report.changes.filter((c) => c.kind === 'task').map((c) => c.entityId)
        const editor = editorOrigin(orgId, context)
        const history = new HistoryCollector()
        history.read(document, tr, editor, Date.now(), true)
        lane().addReport({
          origin: editor,
          changes: report.changes,
          events: presentBoardEvents(document, report),
          ops: [
            ...report.ops,
            ...textOps(document, changedCards),
            ...this.archivedTexts(orgId, report.ops),
            ...history.ops(historyActor(editor), new Date().toISOString(), report.ops),
          ],
        })
      }
    })
  }

  private watchCard(
    document: Document,
    ref: Extract<DocRef, { kind: 'card' }>,
    lane: () => Pending,
  ): void {
    const holder = (taskId: string, editor: { email: string; keyId?: string | undefined }) => {
      const board = this.host.loaded(boardDocName(ref.orgId))
      const claims = board ? boardMaps(board).claims : this.claimsAway.get(ref.orgId)
      return claims ? claimHolder(claims, taskId, editor, Date.now()) : undefined
    }
    const guardOf = this.lazyGuard(document, () => new CardGuard(document, ref.taskId, holder))
    this.onPersonEdit(document, 'card', guardOf, (guard, tr, origin) => {
      const context = origin.connection.context as ConnectionContext
      const report = guard.review(tr, { email: context.email, keyId: context.keyId })
      this.tell('card', origin.connection, report.reverts)
      const ops: RowOp[] = [...report.ops]
      if (report.description !== undefined) ops.push(this.describe(ref.orgId, ref.taskId))
      if (report.statsChanged) {
        const stats = statsOf(document)
        if (!this.moveStats(ref.orgId, ref.taskId, stats)) {
          // Not on the board: an archived card keeps its stats in its record.
          ops.push({ t: 'archived_stats', id: ref.taskId, rec: stats })
        }
      }
      const editor = editorOrigin(ref.orgId, context)
      const history = new HistoryCollector()
      history.read(document, tr, editor, Date.now(), true)
      ops.push(...history.ops(historyActor(editor), new Date().toISOString(), ops))
      if (report.changes.length > 0 || ops.length > 0 || report.events.length > 0) {
        lane().addReport({
          origin: editor,
          changes: report.changes,
          events: report.events,
          ops,
        })
      }
    })
  }

  /**
   * Sets a card's `stats` on the loaded board document, as a guard transaction (stored with
   * the people's edits). False when the card is not on the board. When the board is not
   * loaded (evicted a moment ago), a repair write is asked for.
   */
  /** The text ops of the cards a person archived: their words stay searchable, archived. */
  private archivedTexts(orgId: string, ops: readonly RowOp[]): RowOp[] {
    return ops.flatMap((op) =>
      op.t === 'archived' && op.rec
        ? [
            {
              t: 'text' as const,
              id: op.id,
              rec: {
                title: typeof op.rec.title === 'string' ? op.rec.title : '',
                description: this.descriptions.get(orgId, op.id),
                archived: true,
              },
            },
          ]
        : [],
    )
  }

  /**
   * The text op of a card whose description a person changed: its words as they are now,
   * on the board (whose card's updatedAt is stamped, at most every few seconds: a person
   * typing must not rewrite the board at each keystroke) or archived.
   */
  private describe(orgId: string, taskId: string): RowOp {
    const description = this.descriptions.get(orgId, taskId)
    const board = this.host.loaded(boardDocName(orgId))
    const card = board ? boardMaps(board).tasks.get(taskId) : undefined
    if (board && card) {
      const now = new Date()
      const stamped = Date.parse(String(card.get('updatedAt') ?? ''))
      if (!(now.getTime() - stamped < STAMP_EVERY_MS)) {
        board.transact(() => card.set('updatedAt', now.toISOString()), GUARD_ORIGIN)
      }
      const title = card.get('title')
      return {
        t: 'text',
        id: taskId,
        rec: { title: typeof title === 'string' ? title : '', description, archived: false },
      }
    }
    // Archived (or its board not in memory): the title and state are kept as stored.
    return { t: 'text', id: taskId, rec: { title: null, description, archived: null } }
  }

  private moveStats(orgId: string, taskId: string, stats: ReturnType<typeof statsOf>): boolean {
    const board = this.host.loaded(boardDocName(orgId))
    if (!board) {
      void this.repairStats(orgId, taskId)
      return true
    }
    const card = boardMaps(board).tasks.get(taskId)
    if (!card) return false
    if (!sameStats(asStats(card.get('stats')), stats)) {
      board.transact(() => card.set('stats', stats), GUARD_ORIGIN)
    }
    return true
  }

  /**
   * Makes a card's `stats` follow its document again, as a server write: after a person's
   * comment reached a card whose board was not in memory at that moment. The card may have
   * left the board meanwhile: its archived row's stats follow then.
   */
  private async repairStats(orgId: string, taskId: string): Promise<void> {
    const cardDoc = cardDocName(orgId, taskId)
    await this.host
      .write(
        boardDocName(orgId),
        { type: 'server', orgId },
        async (w) => {
          const card = await findCard(w, orgId, taskId)
          if (!card) return
          const was = card.board ? asStats(card.board.get('stats')) : card.archived?.stats
          if (was && sameStats(was, statsOf(card.doc))) return
          followStats(w, taskId, card)
          if (card.board) w.changed('task', taskId)
        },
        [cardDoc],
      )
      .catch((error: unknown) => this.host.log.error(`repairing stats of ${taskId} failed`, error))
  }

  /** Tells the person what of their edit was undone (counted for the metrics). */
  private tell(
    kind: DocRef['kind'],
    connection: { sendStateless(payload: string): void },
    reverts: Revert[],
  ): void {
    if (reverts.length > 0) this.host.observe?.reverted(kind)
    tell(connection, reverts)
  }

  private watchMap(
    document: Document,
    ref: Extract<DocRef, { kind: 'map' }>,
    lane: () => Pending,
  ): void {
    const guardOf = this.lazyGuard(document, () => new MapGuard(document))
    this.onPersonEdit(document, 'map', guardOf, (guard, tr, origin) => {
      const report = guard.review(tr)
      this.tell('map', origin.connection, report.reverts)
      if (!report.touched) return
      const context = origin.connection.context as ConnectionContext
      lane().addReport({
        origin: editorOrigin(ref.orgId, context),
        changes: [],
        events: [],
        ops: [
          { t: 'map_touch', id: ref.mapId, rec: null },
          ...report.created.map(
            (c): RowOp => ({ t: 'map_item', id: c.id, rec: { mapId: ref.mapId, kind: c.kind } }),
          ),
        ],
      })
    })
  }
}

/** Every person's message is prepared (the guard built) before it applies; anything else is a bug. */
function unguarded<G>(guard: G | undefined): G {
  if (!guard) throw new Error("a person's edit reached a document whose guard was not prepared")
  return guard
}

function editorOrigin(orgId: string, context: ConnectionContext): WriteOrigin {
  return context.keyId
    ? { type: 'agent', orgId, keyId: context.keyId, email: context.email, identity: {} }
    : { type: 'person', orgId, userId: context.userId ?? '', email: context.email }
}

/** Tells the person what of their edit was undone, and why. */
function tell(connection: { sendStateless(payload: string): void }, reverts: Revert[]): void {
  const first = reverts[0]
  if (!first) return
  const notice: Parameters<typeof encodeNotice>[0] = {
    type: 'reverted',
    reason: first.reason,
    reverts,
  }
  if (first.taskId) notice.taskId = first.taskId
  connection.sendStateless(encodeNotice(notice))
}

/** Fills a board guard's events with the records webhooks carry, as the agent path does. */
function presentBoardEvents(doc: Y.Doc, report: BoardReport): DomainEvent[] {
  if (report.events.length === 0) return []
  const view = new BoardView(doc)
  return report.events.map((event) => {
    const stored = view.storedTask(String(event.data.taskId))
    const task = stored ? view.present(stored) : undefined
    switch (event.type) {
      case 'card.created':
      case 'card.unblocked':
        return { type: event.type, data: { task } }
      case 'card.moved':
        return { type: event.type, data: { ...event.data, task } }
      default:
        return event
    }
  })
}
