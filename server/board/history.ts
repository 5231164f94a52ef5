import type { Queryable } from '../../persistence/types.ts'
import type { StoredTask } from '../../shared/board-doc.ts'
import type { StoredAttachment, StoredComment } from '../../shared/card-doc.ts'
import { shownOnCard } from '../../shared/claims.ts'
import type { ClaimRecord } from '../../shared/records.ts'
import { type ClaimRow, claimRecordFromRow } from '../claims/locks.ts'
import { notFound } from '../errors.ts'
import type { PendingArchived } from '../live/pending-edits.ts'
import type { WriteScope } from '../live/write-scope.ts'
import { taskFromArchived } from './archive.ts'
import type { BoardView } from './board-view.ts'

/**
 * What the board's history holds, read from Postgres through indexes: archived cards,
 * comments and screenshots (each card's document holds its own; these tables index them
 * for reads across cards), and claims. Nothing here scans an organisation's history: every
 * query is bounded by one card, a list of ids, or a limit on an index order.
 */

interface CommentRow {
  id: string
  task_id: string
  body: string
  author_email: string
  agent_name: string | null
  created_at: Date
  edited_at: Date | null
}

interface AttachmentRow {
  id: string
  task_id: string
  filename: string
  mime_type: string
  size: number
  created_at: Date
}

const COMMENT = 'id, task_id, body, author_email, agent_name, created_at, edited_at'
const ATTACHMENT = 'id, task_id, filename, mime_type, size, created_at'

function comment(r: CommentRow): StoredComment {
  return {
    id: r.id,
    taskId: r.task_id,
    body: r.body,
    authorEmail: r.author_email,
    agentName: r.agent_name,
    createdAt: r.created_at.toISOString(),
    editedAt: r.edited_at ? r.edited_at.toISOString() : null,
  }
}

function attachment(r: AttachmentRow): StoredAttachment {
  return {
    id: r.id,
    taskId: r.task_id,
    filename: r.filename,
    mimeType: r.mime_type,
    size: r.size,
    createdAt: r.created_at.toISOString(),
  }
}

type Rows<T> = T & Record<string, unknown>

/** A table of a card's entries: its columns, and how a row reads as the stored record. */
interface EntryTable<R, T> {
  table: string
  columns: string
  read: (row: R) => T
}
const COMMENTS: EntryTable<CommentRow, StoredComment> = {
  table: 'comments',
  columns: COMMENT,
  read: comment,
}
const ATTACHMENTS: EntryTable<AttachmentRow, StoredAttachment> = {
  table: 'attachments',
  columns: ATTACHMENT,
  read: attachment,
}

/** The entries of `t` matching `clause` (SQL after `where`), as stored records. */
async function entries<R, T>(
  q: Queryable,
  t: EntryTable<R, T>,
  clause: string,
  params: readonly unknown[],
): Promise<T[]> {
  const rows = await q.query<Rows<R>>(`select ${t.columns} from ${t.table} where ${clause}`, params)
  return rows.map(t.read)
}

const THREAD = 'task_id = $1 and org_id = $2 order by created_at, id'
const NEWEST = 'org_id = $1 order by created_at desc, id desc limit $2'
const BY_IDS = 'id = any($1::uuid[]) and org_id = $2'

/** One card's thread, oldest first. */
export function commentsOfTask(q: Queryable, orgId: string, taskId: string) {
  return entries(q, COMMENTS, THREAD, [taskId, orgId])
}

/** One card's screenshots, oldest first. */
export function attachmentsOfTask(q: Queryable, orgId: string, taskId: string) {
  return entries(q, ATTACHMENTS, THREAD, [taskId, orgId])
}

/** The organisation's newest comments, newest first (get_board's include cap). */
export function newestComments(q: Queryable, orgId: string, limit: number) {
  return entries(q, COMMENTS, NEWEST, [orgId, limit])
}

/** The organisation's newest screenshots, newest first (get_board's include cap). */
export function newestAttachments(q: Queryable, orgId: string, limit: number) {
  return entries(q, ATTACHMENTS, NEWEST, [orgId, limit])
}

export async function commentsByIds(
  q: Queryable,
  orgId: string,
  ids: readonly string[],
): Promise<Map<string, StoredComment>> {
  if (ids.length === 0) return new Map()
  return new Map((await entries(q, COMMENTS, BY_IDS, [ids, orgId])).map((c) => [c.id, c]))
}

export async function attachmentsByIds(
  q: Queryable,
  orgId: string,
  ids: readonly string[],
): Promise<Map<string, StoredAttachment>> {
  if (ids.length === 0) return new Map()
  return new Map((await entries(q, ATTACHMENTS, BY_IDS, [ids, orgId])).map((a) => [a.id, a]))
}

/** A comment by id, or 404 (missing and foreign alike). */
export async function requireComment(
  q: Queryable,
  orgId: string,
  commentId: string,
): Promise<StoredComment> {
  const found = (await commentsByIds(q, orgId, [commentId])).get(commentId)
  if (!found) throw notFound(`No comment with commentId ${commentId} in this organisation`)
  return found
}

interface ArchivedTaskRow {
  id: string
  record: unknown
}

/**
 * People's edits not yet stored, by archived card (LiveDocs.pendingArchived, or a write's
 * WriteScope.pendingArchivedAll): a person archived the card, put it back, or commented on
 * it, a moment ago. Readers of archived rows read storage through them, so nobody answers
 * 404 (or a stale count) for what a person did a moment ago (docs/design.md, "People's edits").
 */
export type PendingRows = ReadonlyMap<string, PendingArchived>

const NONE: PendingRows = new Map()

/** A stored row (or none) as the pending edits leave it. */
function throughPending(
  id: string,
  stored: unknown,
  pending: PendingArchived | undefined,
): StoredTask | undefined {
  const record = pending?.record !== undefined ? pending.record : stored
  if (!record) return undefined
  const task = taskFromArchived(id, record)
  return pending?.stats ? { ...task, stats: pending.stats } : task
}

/** Archived cards by id (cards that are not, or no longer, archived are left out). */
export async function archivedByIds(
  q: Queryable,
  orgId: string,
  ids: readonly string[],
  pending: PendingRows = NONE,
): Promise<Map<string, StoredTask>> {
  if (ids.length === 0) return new Map()
  const rows = await q.query<Rows<ArchivedTaskRow>>(
    'select id, record from archived_tasks where id = any($1::uuid[]) and org_id = $2',
    [ids, orgId],
  )
  const stored = new Map(rows.map((r) => [r.id, r.record]))
  const out = new Map<string, StoredTask>()
  for (const id of new Set(ids)) {
    const task = throughPending(id, stored.get(id), pending.get(id))
    if (task) out.set(id, task)
  }
  return out
}

export async function findArchived(
  q: Queryable,
  orgId: string,
  taskId: string,
  pending: PendingRows = NONE,
): Promise<StoredTask | undefined> {
  return (await archivedByIds(q, orgId, [taskId], pending)).get(taskId)
}

/**
 * An archived card's row, locked for the rest of a write (two writes to it take turns), as
 * people's edits not yet stored leave it: a person may have archived the card, or
 * commented on it since, a moment before this write.
 */
export async function lockArchived(
  w: Pick<WriteScope, 'tx' | 'pendingArchived' | 'earlierCommitted'>,
  orgId: string,
  taskId: string,
): Promise<StoredTask | undefined> {
  // An earlier write of the lane may be storing a change of this row: its commit first.
  await w.earlierCommitted()
  // Read first: an earlier write storing them may commit while the row is read, and then
  // both say the same.
  const pending = w.pendingArchived(taskId)
  const [row] = await w.tx.query<Rows<ArchivedTaskRow>>(
    'select id, record from archived_tasks where id = $1 and org_id = $2 for update',
    [taskId, orgId],
  )
  return throughPending(taskId, row?.record, pending)
}

/**
 * A column's archived cards (they count as holding a card for delete_column), locked for
 * the rest of a write with `lock`.
 */
export async function archivedInColumn(
  q: Queryable,
  orgId: string,
  columnId: string,
  lock = false,
  pending: PendingRows = NONE,
): Promise<StoredTask[]> {
  const rows = await q.query<Rows<ArchivedTaskRow>>(
    `select id, record from archived_tasks where org_id = $1 and column_id = $2
      order by id${lock ? ' for update' : ''}`,
    [orgId, columnId],
  )
  const stored = new Map(rows.map((r) => [r.id, r.record]))
  const ids = [...new Set([...stored.keys(), ...pending.keys()])].sort()
  return ids.flatMap((id) => {
    const task = throughPending(id, stored.get(id), pending.get(id))
    return task && task.columnId === columnId ? [task] : []
  })
}

/** A page of the Archived view: newest archive first; `before` continues after a page. */
export async function archivedPage(
  q: Queryable,
  orgId: string,
  limit: number,
  before: { archivedAt: string; id: string } | undefined,
): Promise<StoredTask[]> {
  const rows = await q.query<Rows<ArchivedTaskRow>>(
    `select id, record from archived_tasks
      where org_id = $1
        and ($2::text is null or (archived_at, id) < ($2::text::timestamptz, $3::uuid))
      order by archived_at desc, id desc limit $4`,
    [orgId, before?.archivedAt ?? null, before?.id ?? null, limit],
  )
  return rows.map((r) => taskFromArchived(r.id, r.record))
}

/** A card on the board or archived: what get_task, claims and comments accept. */
export interface FoundCard {
  task: StoredTask
  onBoard: boolean
}

export async function findCard(
  q: Queryable,
  view: BoardView,
  orgId: string,
  taskId: string,
  pending: PendingRows = NONE,
): Promise<FoundCard | undefined> {
  const onBoard = view.storedTask(taskId)
  if (onBoard) return { task: onBoard, onBoard: true }
  const archived = await findArchived(q, orgId, taskId, pending)
  return archived ? { task: archived, onBoard: false } : undefined
}

/** A card on the board or archived, or 404: missing and foreign ids look the same. */
export async function requireCard(
  q: Queryable,
  view: BoardView,
  orgId: string,
  taskId: string,
  pending: PendingRows = NONE,
): Promise<FoundCard> {
  const found = await findCard(q, view, orgId, taskId, pending)
  if (!found) throw notFound(`No card with taskId ${taskId} in this organisation`)
  return found
}

/** Claims of these cards, as records (released ones included: status released, isLive false). */
export async function claimsByIds(
  q: Queryable,
  orgId: string,
  taskIds: readonly string[],
  now: number,
): Promise<Map<string, ClaimRecord>> {
  if (taskIds.length === 0) return new Map()
  const rows = await q.query<Rows<ClaimRow>>(
    'select * from claims where task_id = any($1::uuid[]) and org_id = $2',
    [taskIds, orgId],
  )
  return new Map(rows.map((r) => [r.task_id, claimRecordFromRow(r, now)]))
}

/** A card's claim as a card shows it: null when released (free) or never claimed. */
export async function cardClaim(
  q: Queryable,
  orgId: string,
  taskId: string,
  now: number,
): Promise<ClaimRecord | null> {
  const claim = (await claimsByIds(q, orgId, [taskId], now)).get(taskId)
  return shownOnCard(claim)
}
