import type { StoredTask } from '../../shared/board-doc.ts'
import { asStats } from '../../shared/board-doc.ts'
import type { Priority, TaskType } from '../../shared/constants.ts'
import type { ArchivedRow } from '../live/write-record.ts'

/**
 * An archived card as the `archived_tasks.record` column holds it: the whole card as it
 * left the board (its description as text), so get_task, get_changes and a restore read
 * one row.
 */
export function archivedRow(t: StoredTask): ArchivedRow {
  const { id: _id, ...rest } = t
  return { ...rest, archivedAt: t.archivedAt ?? t.updatedAt }
}

const str = (v: unknown) => (typeof v === 'string' ? v : '')
const strOrNull = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null)
const strings = (v: unknown) =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []

/** The card an `archived_tasks` row holds, checked field by field. */
export function taskFromArchived(id: string, record: unknown): StoredTask {
  const r = (typeof record === 'object' && record !== null ? record : {}) as Record<string, unknown>
  return {
    id,
    columnId: str(r.columnId),
    projectId: strOrNull(r.projectId),
    title: str(r.title),
    type: strOrNull(r.type) as TaskType | null,
    priority: strOrNull(r.priority) as Priority | null,
    tags: strings(r.tags),
    blockedBy: strings(r.blockedBy),
    assigneeIds: strings(r.assigneeIds),
    position: typeof r.position === 'number' && Number.isFinite(r.position) ? r.position : 0,
    createdAt: str(r.createdAt),
    updatedAt: str(r.updatedAt),
    archivedAt: strOrNull(r.archivedAt),
    createdByEmail: str(r.createdByEmail),
    stats: asStats(r.stats),
  }
}
