import * as Y from 'yjs'
import type { Db, Queryable } from '../../persistence/types.ts'
import {
  asStats,
  boardMaps,
  readStoredTask,
  type StoredTask,
  sameStats,
} from '../../shared/board-doc.ts'
import {
  cardMaps,
  readAttachment,
  readComment,
  type StoredAttachment,
  type StoredComment,
  statsOf,
} from '../../shared/card-doc.ts'
import { boardDocName, cardDocName, orgIdOf } from '../../shared/doc-names.ts'
import { archivedRow } from '../board/archive.ts'
import type { Logger } from '../http/json.ts'
import { appendUpdate, LEVEL, loadInto } from '../live/doc-store.ts'

/** The name this data migration is recorded under in schema_migrations. */
export const LAYOUT_V2 = '009_layout_v2 (board documents)'

/**
 * Moves a database written by version 1 of the live documents (everything an
 * organisation ever did in its board document) to version 2 (docs/design.md, Contract 3): each
 * card's comments and screenshots go to its own document `<orgId>/tasks/<taskId>` and to
 * their index tables; archived cards go to `archived_tasks` with their stats; cards on the
 * board get their `stats`; the board document loses its comments, screenshots, archived
 * cards and their claim entries. Every card, comment, attachment and claim stays readable.
 *
 * The board is changed in place (its removals leave tombstones, as any removal does), not
 * rebuilt: a browser that still holds the version-1 document syncs onto it without
 * resurrecting anything. Runs once, in one transaction, under a lock, at start.
 */
export async function migrateLayout(db: Db, log: Logger): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(7302)')
    const done = await tx.query('select 1 from schema_migrations where name = $1', [LAYOUT_V2])
    if (done.length > 0) return 0
    const boards = await tx.query<{ doc_name: string }>(
      `select distinct doc_name from doc_updates where doc_name like '%/board' order by doc_name`,
    )
    for (const { doc_name } of boards) {
      const moved = await migrateBoard(tx, orgIdOf(doc_name))
      log.info(
        `moved ${doc_name} to layout 2: ${moved.comments} comments, ${moved.attachments} screenshots, ${moved.archived} archived cards`,
      )
    }
    await tx.query('insert into schema_migrations (name) values ($1)', [LAYOUT_V2])
    return boards.length
  })
}

async function migrateBoard(tx: Queryable, orgId: string) {
  const name = boardDocName(orgId)
  const doc = new Y.Doc()
  await loadInto(tx, name, doc)
  const maps = boardMaps(doc)
  const v1Comments = doc.getMap<Y.Map<unknown>>('comments')
  const v1Attachments = doc.getMap<Y.Map<unknown>>('attachments')
  const perCard = new Map<string, { comments: StoredComment[]; attachments: StoredAttachment[] }>()
  const of = (taskId: string) => {
    let entry = perCard.get(taskId)
    if (!entry) {
      entry = { comments: [], attachments: [] }
      perCard.set(taskId, entry)
    }
    return entry
  }
  v1Comments.forEach((m, id) => {
    const c = readComment(id, m)
    if (maps.tasks.has(c.taskId)) of(c.taskId).comments.push(c)
  })
  v1Attachments.forEach((m, id) => {
    const a = readAttachment(id, m)
    if (maps.tasks.has(a.taskId)) of(a.taskId).attachments.push(a)
  })

  // Each card's own document, and the index rows.
  const stats = new Map<string, ReturnType<typeof statsOf>>()
  for (const [taskId, content] of perCard) {
    const card = new Y.Doc()
    const { comments, attachments } = cardMaps(card)
    card.transact(() => {
      for (const c of content.comments) comments.set(c.id, entryOf(c))
      for (const a of content.attachments) attachments.set(a.id, entryOf(a))
    })
    stats.set(taskId, statsOf(card))
    await appendUpdate(tx, cardDocName(orgId, taskId), Y.encodeStateAsUpdate(card), LEVEL.snapshot)
    for (const c of content.comments) {
      await tx.query(
        `insert into comments (id, org_id, task_id, body, author_email, agent_name, created_at, edited_at)
         values ($1, $2, $3, $4, $5, $6, $7::text::timestamptz, $8::text::timestamptz)
         on conflict (id) do nothing`,
        [c.id, orgId, taskId, c.body, c.authorEmail, c.agentName, c.createdAt, c.editedAt],
      )
    }
    for (const a of content.attachments) {
      await tx.query(
        `insert into attachments (id, org_id, task_id, filename, mime_type, size, created_at)
         values ($1, $2, $3, $4, $5, $6, $7::text::timestamptz) on conflict (id) do nothing`,
        [a.id, orgId, taskId, a.filename, a.mimeType, a.size, a.createdAt],
      )
    }
    card.destroy()
  }

  // The board keeps what is on it, each card with its stats.
  const archives: StoredTask[] = []
  const updates: Uint8Array[] = []
  doc.on('update', (u: Uint8Array) => updates.push(u))
  doc.transact(() => {
    for (const [taskId, m] of [...maps.tasks.entries()]) {
      const task = readStoredTask(taskId, m)
      const cardStats = stats.get(taskId) ?? task.stats
      if (task.archivedAt) {
        archives.push({ ...task, stats: cardStats })
        maps.tasks.delete(taskId)
      } else if (!sameStats(asStats(m.get('stats')), cardStats) || !m.has('stats')) {
        m.set('stats', cardStats)
      }
    }
    for (const taskId of [...maps.claims.keys()])
      if (!maps.tasks.has(taskId)) maps.claims.delete(taskId)
    for (const id of [...v1Comments.keys()]) v1Comments.delete(id)
    for (const id of [...v1Attachments.keys()]) v1Attachments.delete(id)
  })
  for (const task of archives) {
    await tx.query(
      `insert into archived_tasks (id, org_id, column_id, archived_at, record)
       values ($1, $2, $3, $4::text::timestamptz, $5::text::jsonb) on conflict (id) do nothing`,
      [task.id, orgId, task.columnId, task.archivedAt, JSON.stringify(archivedRow(task))],
    )
  }
  // One snapshot replaces the board's rows: what the removals left is replayed away.
  if (updates.length > 0) {
    await tx.query('delete from doc_updates where doc_name = $1', [name])
    await appendUpdate(tx, name, Y.encodeStateAsUpdate(doc), LEVEL.snapshot)
  }
  doc.destroy()
  return {
    comments: [...perCard.values()].reduce((n, c) => n + c.comments.length, 0),
    attachments: [...perCard.values()].reduce((n, c) => n + c.attachments.length, 0),
    archived: archives.length,
  }
}

/** A record as a Y.Map entry of a card's document (its id is the key). */
function entryOf<T extends { id: string }>(record: T): Y.Map<unknown> {
  const m = new Y.Map<unknown>()
  for (const [k, v] of Object.entries(record)) if (k !== 'id') m.set(k, v)
  return m
}
