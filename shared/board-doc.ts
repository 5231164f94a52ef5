import * as Y from 'yjs'
import type { ColumnRole, Priority, TaskType } from './constants.ts'
import type { ClaimRecord, Column, Project, TaskStats } from './records.ts'
import { EMPTY_STATS } from './records.ts'
import { num, str, strings, strOrNull } from './ymap-fields.ts'

export { boardDocName, cardDocName, mapDocName } from './doc-names.ts'

/**
 * The board document (docs/design.md, Contract 3, version 3): one per organisation, named
 * `<orgId>/board`, holding what the board shows now and nothing of its history. Archived
 * cards leave it; a card's description, comments and screenshots live in the card's own
 * document (card-doc.ts). Programs outside this repository read these names and shapes.
 */
export interface BoardMaps {
  columns: Y.Map<Y.Map<unknown>>
  projects: Y.Map<Y.Map<unknown>>
  /** Cards on the board only. */
  tasks: Y.Map<Y.Map<unknown>>
  /** Written by the server only; cards on the board only (the entry leaves with its card). */
  claims: Y.Map<ClaimRecord>
}

export function boardMaps(doc: Y.Doc): BoardMaps {
  return {
    columns: doc.getMap('columns'),
    projects: doc.getMap('projects'),
    tasks: doc.getMap('tasks'),
    claims: doc.getMap('claims'),
  }
}

/**
 * A card as the board stores it: the card's own priority level, not the effective one. Its
 * description is not here (version 3): it lives in the card's document, and in Postgres.
 */
export interface StoredTask {
  id: string
  columnId: string
  projectId: string | null
  title: string
  type: TaskType | null
  priority: Priority | null
  tags: string[]
  /** The cards this one waits for (shared/dependencies.ts); [] when none. */
  blockedBy: string[]
  assigneeIds: string[]
  position: number
  createdAt: string
  updatedAt: string
  archivedAt: string | null
  createdByEmail: string
  stats: TaskStats
}

/** A `stats` value checked field by field: the document is wire data. */
export function asStats(v: unknown): TaskStats {
  if (typeof v !== 'object' || v === null) return EMPTY_STATS
  const s = v as Record<string, unknown>
  const count = (x: unknown) => (typeof x === 'number' && Number.isInteger(x) && x >= 0 ? x : 0)
  const text = (x: unknown) => (typeof x === 'string' && x !== '' ? x : null)
  return {
    commentCount: count(s.commentCount),
    imageCount: count(s.imageCount),
    lastCommentBy:
      s.lastCommentBy === 'human' || s.lastCommentBy === 'agent' ? s.lastCommentBy : null,
    lastCommentAt: text(s.lastCommentAt),
    lastCommentAuthor: text(s.lastCommentAuthor),
  }
}

export function sameStats(a: TaskStats, b: TaskStats): boolean {
  return (
    a.commentCount === b.commentCount &&
    a.imageCount === b.imageCount &&
    a.lastCommentBy === b.lastCommentBy &&
    a.lastCommentAt === b.lastCommentAt &&
    a.lastCommentAuthor === b.lastCommentAuthor
  )
}

export function readColumn(id: string, m: Y.Map<unknown>): Column {
  return {
    id,
    title: str(m, 'title'),
    position: num(m, 'position'),
    role: strOrNull(m, 'role') as ColumnRole | null,
    projectId: strOrNull(m, 'projectId'),
    onFire: m.get('onFire') === true,
  }
}

export function readProject(id: string, m: Y.Map<unknown>): Project {
  return { id, name: str(m, 'name'), color: str(m, 'color'), createdAt: str(m, 'createdAt') }
}

/** A version-2 board card's description (read once, to move it to the card's document). */
export function readDescription(m: Y.Map<unknown>): string {
  const d = m.get('description')
  return d instanceof Y.Text ? d.toString() : typeof d === 'string' ? d : ''
}

export function readStoredTask(id: string, m: Y.Map<unknown>): StoredTask {
  return {
    id,
    columnId: str(m, 'columnId'),
    projectId: strOrNull(m, 'projectId'),
    title: str(m, 'title'),
    type: strOrNull(m, 'type') as TaskType | null,
    priority: strOrNull(m, 'priority') as Priority | null,
    tags: strings(m, 'tags'),
    blockedBy: strings(m, 'blockedBy'),
    assigneeIds: strings(m, 'assigneeIds'),
    position: num(m, 'position'),
    createdAt: str(m, 'createdAt'),
    updatedAt: str(m, 'updatedAt'),
    archivedAt: strOrNull(m, 'archivedAt'),
    createdByEmail: str(m, 'createdByEmail'),
    stats: asStats(m.get('stats')),
  }
}

/** A card's fields as a new Y.Map for the board (a restored card; a created one). */
export function taskMap(t: Omit<StoredTask, 'id'>): Y.Map<unknown> {
  const m = new Y.Map<unknown>()
  m.set('columnId', t.columnId)
  m.set('projectId', t.projectId)
  m.set('title', t.title)
  m.set('type', t.type)
  m.set('priority', t.priority)
  m.set('tags', t.tags)
  // Absent means none: a card without blockers costs nothing for the field.
  if (t.blockedBy.length > 0) m.set('blockedBy', t.blockedBy)
  m.set('assigneeIds', t.assigneeIds)
  m.set('position', t.position)
  m.set('createdAt', t.createdAt)
  m.set('updatedAt', t.updatedAt)
  m.set('archivedAt', t.archivedAt)
  m.set('createdByEmail', t.createdByEmail)
  m.set('stats', t.stats)
  return m
}
