import * as Y from 'yjs'
import { boardMaps } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import type { StoredClaim } from '../../shared/claims.ts'
import { parseDocName } from '../../shared/doc-names.ts'
import { holderLabel } from '../../shared/labels.ts'
import type { WriteOrigin } from './origins.ts'

/**
 * Each card's history (issue 32): one event per change, read off the change itself (the
 * transaction on the board or card document) and stored by the write's record statement,
 * so an event exists exactly when its change committed. Agents' writes, people's live
 * edits and the server's own writes go through here alike.
 */
export type HistoryKind =
  | 'created'
  | 'moved'
  | 'changed'
  | 'described'
  | 'claimed'
  | 'released'
  | 'force-released'
  | 'lapsed'
  | 'heartbeat-gap'
  | 'archived'
  | 'restored'
  | 'commented'
  | 'screenshot'

/** Who made a change, as the board labels them. */
export type HistoryActor =
  | { kind: 'agent'; email: string; name: string }
  | { kind: 'person'; email: string; userId: string }
  | { kind: 'server' }

/** A history row as a write's record statement stores it (write-record.ts RowOp). */
export interface HistoryOp {
  t: 'history'
  /** The card. */
  id: string
  rec: HistoryRec
}

export interface HistoryRec {
  kind: HistoryKind
  actor: HistoryActor
  at: string
  detail: Record<string, unknown>
}

/** A change seen in a transaction, before it is known whether a card came or went for good. */
interface Seen {
  taskId: string
  kind: HistoryKind | 'added' | 'removed'
  detail: Record<string, unknown>
}

/** The card fields whose changes the history shows, old → new. */
const FIELDS = ['title', 'type', 'priority', 'projectId', 'tags', 'assigneeIds', 'blockedBy']

export function historyActor(origin: WriteOrigin): HistoryActor {
  switch (origin.type) {
    case 'agent':
      return { kind: 'agent', email: origin.email, name: holderLabel(origin.identity) }
    case 'person':
      return { kind: 'person', email: origin.email, userId: origin.userId }
    default:
      return { kind: 'server' }
  }
}

const nameOf = (doc: Y.Doc): string | undefined => (doc as { name?: unknown }).name as string

/**
 * Collects the history of the transactions on documents of one write (or one person's
 * edit): `watch` a document's transaction as it ends, then `ops` once the write's row ops
 * are known (they tell a card archived from one deleted, restored from created).
 */
export class HistoryCollector {
  private readonly seen: Seen[] = []

  /**
   * Reads what `tr` did to the cards of `doc` (a board or a card document), as the
   * document is now: a person's change the review reverted (`live`) reads as no change.
   */
  read(doc: Y.Doc, tr: Y.Transaction, origin: WriteOrigin, now: number, live = false): void {
    const name = nameOf(doc)
    const ref = name ? parseDocName(name) : undefined
    if (ref?.kind === 'board') this.seen.push(...boardChanges(doc, tr, origin, now, live))
    else if (ref?.kind === 'card') this.seen.push(...cardChanges(doc, ref.taskId, tr, origin))
  }

  /** Runs `fn` on `doc` watching the transaction it makes (synchronous). */
  watch(doc: Y.Doc, origin: WriteOrigin, marker: unknown, fn: () => void): void {
    const listen = (tr: Y.Transaction) => {
      if (tr.origin === marker) this.read(doc, tr, origin, Date.now())
    }
    doc.on('afterTransaction', listen)
    try {
      fn()
    } finally {
      doc.off('afterTransaction', listen)
    }
  }

  /** The history rows, given the write's other row ops; forgets what it saw. */
  ops(
    actor: HistoryActor,
    at: string,
    rowOps: readonly { t: string; id: string; rec: unknown }[],
  ): HistoryOp[] {
    if (this.seen.length === 0) return []
    const archived = new Map<string, boolean>()
    for (const op of rowOps) if (op.t === 'archived') archived.set(op.id, op.rec !== null)
    const out: HistoryOp[] = []
    for (const s of this.seen.splice(0)) {
      let kind = s.kind
      if (kind === 'added') kind = archived.get(s.taskId) === false ? 'restored' : 'created'
      else if (kind === 'removed') {
        // Deleted for good: its history goes with it (deleted with the card's rows).
        if (archived.get(s.taskId) !== true) continue
        kind = 'archived'
      }
      out.push({ t: 'history', id: s.taskId, rec: { kind, actor, at, detail: s.detail } })
    }
    return out
  }
}

function columnTitle(doc: Y.Doc, id: unknown): string | null {
  if (typeof id !== 'string') return null
  const title = boardMaps(doc).columns.get(id)?.get('title')
  return typeof title === 'string' ? title : null
}

function projectName(doc: Y.Doc, id: unknown): string | null {
  if (typeof id !== 'string') return null
  const name = boardMaps(doc).projects.get(id)?.get('name')
  return typeof name === 'string' ? name : null
}

/** A short field's value as the history keeps it (long text is cut). */
function shown(v: unknown): unknown {
  if (typeof v === 'string' && v.length > 200) return `${v.slice(0, 199)}…`
  return v === undefined ? null : v
}

function boardChanges(
  doc: Y.Doc,
  tr: Y.Transaction,
  origin: WriteOrigin,
  now: number,
  live: boolean,
): Seen[] {
  const { tasks, claims } = boardMaps(doc)
  const out: Seen[] = []
  const added = new Set<string>()
  const removed = new Set<string>()
  const taskKeys = tr.changed.get(tasks as never)
  if (taskKeys) {
    const event = new Y.YMapEvent(tasks, tr, taskKeys)
    for (const [id, change] of event.changes.keys) {
      if (change.action === 'add' && tasks.has(id)) {
        added.add(id)
        const card = tasks.get(id)
        const columnId = card?.get('columnId')
        out.push({
          taskId: id,
          kind: 'added',
          detail: {
            title: card?.get('title') ?? null,
            columnId,
            column: columnTitle(doc, columnId),
          },
        })
      } else if (change.action === 'delete' && !tasks.has(id)) {
        removed.add(id)
        out.push({ taskId: id, kind: 'removed', detail: {} })
      }
    }
  }
  for (const [type, keys] of tr.changed) {
    if (!(type instanceof Y.Map) || type._item?.parent !== tasks) continue
    const taskId = type._item.parentSub
    if (!taskId || added.has(taskId) || removed.has(taskId)) continue
    const event = new Y.YMapEvent(type as Y.Map<unknown>, tr, keys)
    const changes = event.changes.keys
    const column = changes.get('columnId')
    if (column && column.action !== 'delete') {
      const from = column.oldValue
      const to = type.get('columnId')
      if (from !== to) {
        out.push({
          taskId,
          kind: 'moved',
          detail: {
            fromId: from ?? null,
            from: columnTitle(doc, from),
            toId: to,
            to: columnTitle(doc, to),
          },
        })
      }
    }
    for (const field of FIELDS) {
      const change = changes.get(field)
      if (!change) continue
      const from = change.action === 'add' ? null : change.oldValue
      const to = type.get(field)
      if (JSON.stringify(from ?? null) === JSON.stringify(to ?? null)) continue
      const detail: Record<string, unknown> = { field, from: shown(from), to: shown(to) }
      if (field === 'projectId') {
        detail.fromName = projectName(doc, from)
        detail.toName = projectName(doc, to)
      }
      out.push({ taskId, kind: 'changed', detail })
    }
  }
  // Claims are the server's to write: a person's edit of one is always reverted.
  const claimKeys = live ? undefined : tr.changed.get(claims as never)
  if (claimKeys) {
    const event = new Y.YMapEvent(claims, tr, claimKeys)
    for (const [taskId, change] of event.changes.keys) {
      if (removed.has(taskId)) continue
      const before = change.oldValue as StoredClaim | undefined
      const after = claims.get(taskId) as StoredClaim | undefined
      out.push(...claimChanges(taskId, before, after, origin, now))
    }
  }
  return out
}

function label(c: StoredClaim): string {
  return holderLabel({
    agentName: c.agentName ?? undefined,
    house: c.house ?? undefined,
    generation: c.generation ?? undefined,
    isSubChild: c.isSubChild,
  })
}

function claimChanges(
  taskId: string,
  before: StoredClaim | undefined,
  after: StoredClaim | undefined,
  origin: WriteOrigin,
  now: number,
): Seen[] {
  const out: Seen[] = []
  const working = (c: StoredClaim | undefined) => c && !c.releasedAt
  // The claim's own time (the server's clock when it was written), else the write's.
  const at = after ? Date.parse(after.updatedAt) : now
  const lapsedBefore = working(before) && before !== undefined && Date.parse(before.expiresAt) <= at
  if (!after) {
    if (working(before) && before) {
      out.push({
        taskId,
        kind: origin.type === 'person' ? 'force-released' : 'released',
        detail: { holder: label(before), startedAt: before.startedAt },
      })
    }
    return out
  }
  // The same claim goes on (heartbeat, release) while it was not released before and has
  // the same holder and start; anything else is a new claim.
  const sameClaim =
    before !== undefined &&
    !before.releasedAt &&
    before.keyId === after.keyId &&
    before.startedAt === after.startedAt
  if (!sameClaim) {
    if (lapsedBefore && before) {
      out.push({
        taskId,
        kind: 'lapsed',
        detail: { holder: label(before), expiredAt: before.expiresAt, startedAt: before.startedAt },
      })
    }
    out.push({
      taskId,
      kind: 'claimed',
      detail: { holder: label(after), note: after.note ?? null, expiresAt: after.expiresAt },
    })
    return out
  }
  if (after.releasedAt) {
    out.push({
      taskId,
      kind: 'released',
      detail: { holder: label(after), startedAt: after.startedAt },
    })
  } else {
    // A heartbeat: one that came after more than half the lease went by is a gap worth
    // seeing (the agent was quiet; a little longer and the card would have been free).
    const lease = Date.parse(before.expiresAt) - Date.parse(before.updatedAt)
    const gap = at - Date.parse(before.updatedAt)
    if (lease > 0 && gap > lease / 2) {
      out.push({
        taskId,
        kind: 'heartbeat-gap',
        detail: {
          holder: label(after),
          gapSeconds: Math.round(gap / 1000),
          leaseSeconds: Math.round(lease / 1000),
        },
      })
    }
  }
  return out
}

function cardChanges(doc: Y.Doc, taskId: string, tr: Y.Transaction, origin: WriteOrigin): Seen[] {
  const { comments, attachments, description } = cardMaps(doc)
  const out: Seen[] = []
  const commentKeys = tr.changed.get(comments as never)
  if (commentKeys) {
    const event = new Y.YMapEvent(comments, tr, commentKeys)
    for (const [id, change] of event.changes.keys) {
      if (change.action !== 'add') continue
      const c = comments.get(id)
      const body = c?.get('body')
      out.push({
        taskId,
        kind: 'commented',
        detail: {
          commentId: id,
          excerpt: typeof body === 'string' ? shown(body) : null,
          agentName: c?.get('agentName') ?? null,
        },
      })
    }
  }
  const attachmentKeys = tr.changed.get(attachments as never)
  if (attachmentKeys) {
    const event = new Y.YMapEvent(attachments, tr, attachmentKeys)
    for (const [id, change] of event.changes.keys) {
      if (change.action !== 'add') continue
      out.push({
        taskId,
        kind: 'screenshot',
        detail: { attachmentId: id, filename: attachments.get(id)?.get('filename') ?? null },
      })
    }
  }
  // A description rewritten by a write (agents, the server); a person's typing is live, an
  // update per few keystrokes, so it is one event per stretch of typing (see typingBegins).
  if (tr.changed.has(description as never)) {
    if (origin.type !== 'person') {
      out.push({ taskId, kind: 'described', detail: { length: description.length } })
    } else if (typingBegins(origin.userId, taskId, Date.now())) {
      out.push({ taskId, kind: 'described', detail: { length: description.length, typing: true } })
    }
  }
  return out
}

/** A person's edits of one description less than this apart are one stretch of typing. */
export const TYPING_GAP_MS = 10 * 60_000

/** When each person last typed in each description (`userId:taskId`), for the last gap only. */
const lastTyped = new Map<string, number>()

/**
 * True when a person's edit of a card's description begins a stretch of typing: their first
 * edit of it, or the first after TYPING_GAP_MS without one (as in Google Docs' or Linear's
 * "edited the description"). Kept per process, bounded by who typed within the last gap: a
 * person whose edits go to two processes may get one event from each.
 */
export function typingBegins(userId: string, taskId: string, now: number): boolean {
  const key = `${userId}:${taskId}`
  const last = lastTyped.get(key)
  // Map order is insertion order: refreshed keys go to the end, so the stale ones lead.
  lastTyped.delete(key)
  lastTyped.set(key, now)
  for (const [k, at] of lastTyped) {
    if (now - at < TYPING_GAP_MS) break
    lastTyped.delete(k)
  }
  return last === undefined || now - last >= TYPING_GAP_MS
}
