import * as Y from 'yjs'
import type { ColumnRole, Priority, TaskType } from './constants.ts'
import type { ClaimRecord, Column, Comment, Project } from './records.ts'

/**
 * The board document (DESIGN.md, Contract 3): one per organisation, named
 * `<orgId>/board`. Programs outside this repository read these names and shapes.
 */
export function boardDocName(orgId: string): string {
  return `${orgId}/board`
}

export function mapDocName(orgId: string, mapId: string): string {
  return `${orgId}/maps/${mapId}`
}

export interface BoardMaps {
  columns: Y.Map<Y.Map<unknown>>
  projects: Y.Map<Y.Map<unknown>>
  tasks: Y.Map<Y.Map<unknown>>
  comments: Y.Map<Y.Map<unknown>>
  attachments: Y.Map<Y.Map<unknown>>
  /** Written by the server only. */
  claims: Y.Map<ClaimRecord>
}

export function boardMaps(doc: Y.Doc): BoardMaps {
  return {
    columns: doc.getMap('columns'),
    projects: doc.getMap('projects'),
    tasks: doc.getMap('tasks'),
    comments: doc.getMap('comments'),
    attachments: doc.getMap('attachments'),
    claims: doc.getMap('claims'),
  }
}

/** A task as stored in the document: the card's own level, not the effective one. */
export interface StoredTask {
  id: string
  columnId: string
  projectId: string | null
  title: string
  description: string
  type: TaskType | null
  priority: Priority | null
  tags: string[]
  assigneeIds: string[]
  position: number
  createdAt: string
  updatedAt: string
  archivedAt: string | null
  createdByEmail: string
}

export interface StoredComment extends Comment {}

export interface StoredAttachment {
  id: string
  taskId: string
  filename: string
  mimeType: string
  size: number
  createdAt: string
}

function str(m: Y.Map<unknown>, key: string): string {
  const v = m.get(key)
  return typeof v === 'string' ? v : ''
}

function strOrNull(m: Y.Map<unknown>, key: string): string | null {
  const v = m.get(key)
  return typeof v === 'string' && v !== '' ? v : null
}

function num(m: Y.Map<unknown>, key: string): number {
  const v = m.get(key)
  return typeof v === 'number' && Number.isFinite(v) ? v : 0
}

function strings(m: Y.Map<unknown>, key: string): string[] {
  const v = m.get(key)
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []
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
    description: readDescription(m),
    type: strOrNull(m, 'type') as TaskType | null,
    priority: strOrNull(m, 'priority') as Priority | null,
    tags: strings(m, 'tags'),
    assigneeIds: strings(m, 'assigneeIds'),
    position: num(m, 'position'),
    createdAt: str(m, 'createdAt'),
    updatedAt: str(m, 'updatedAt'),
    archivedAt: strOrNull(m, 'archivedAt'),
    createdByEmail: str(m, 'createdByEmail'),
  }
}

export function readComment(id: string, m: Y.Map<unknown>): StoredComment {
  return {
    id,
    taskId: str(m, 'taskId'),
    body: str(m, 'body'),
    authorEmail: str(m, 'authorEmail'),
    agentName: strOrNull(m, 'agentName'),
    createdAt: str(m, 'createdAt'),
    editedAt: strOrNull(m, 'editedAt'),
  }
}

export function readAttachment(id: string, m: Y.Map<unknown>): StoredAttachment {
  return {
    id,
    taskId: str(m, 'taskId'),
    filename: str(m, 'filename'),
    mimeType: str(m, 'mimeType'),
    size: num(m, 'size'),
    createdAt: str(m, 'createdAt'),
  }
}
