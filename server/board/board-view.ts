import type * as Y from 'yjs'
import { boardMaps, readColumn, readProject, type StoredTask } from '../../shared/board-doc.ts'
import { presentClaim, type StoredClaim, shownOnCard } from '../../shared/claims.ts'
import { type DependencyBoard, isBlocked } from '../../shared/dependencies.ts'
import { effectivePriority } from '../../shared/priority.ts'
import type { ClaimRecord, Column, Project, Task, TaskSummary } from '../../shared/records.ts'
import { notFound } from '../errors.ts'
import { boardIndex } from './board-index.ts'
import { descriptionOf } from './descriptions.ts'

/**
 * The board document read for one request or write: columns and projects indexed once, so
 * presenting N cards costs one pass. Cards carry their own `stats` (comment and screenshot
 * counts, the newest comment), so nothing outside the board document is read. Both the
 * write path (server/live) and the action handlers read the board through this.
 */
export class BoardView {
  readonly doc: Y.Doc
  readonly now: number
  readonly columns = new Map<string, Column>()
  readonly projects = new Map<string, Project>()

  constructor(doc: Y.Doc, now = Date.now()) {
    this.doc = doc
    this.now = now
    const maps = boardMaps(doc)
    maps.columns.forEach((m, id) => {
      this.columns.set(id, readColumn(id, m))
    })
    maps.projects.forEach((m, id) => {
      this.projects.set(id, readProject(id, m))
    })
  }

  get maps() {
    return boardMaps(this.doc)
  }

  /** The board as the dependency rules read it (shared/dependencies.ts). */
  get dependencies(): DependencyBoard {
    const index = boardIndex(this.doc)
    return {
      columnOf: (id) => index.get(id)?.columnId,
      roleOf: (id) => {
        const c = this.columns.get(id)
        return c ? c.role : undefined
      },
      blockersOf: (id) => index.get(id)?.blockedBy ?? [],
    }
  }

  /** True while at least one of the card's blockers is open. */
  blocked(t: StoredTask): boolean {
    return t.blockedBy.length > 0 && isBlocked(this.dependencies, t.blockedBy)
  }

  /** The cards on the board waiting for this one. */
  dependents(taskId: string): string[] {
    return boardIndex(this.doc).dependents(taskId)
  }

  /** Every card on the board (kept by the board's index: copy one before changing it). */
  storedTasks(): StoredTask[] {
    return boardIndex(this.doc).all()
  }

  /** A card on the board (archived cards are not: see board/history.ts, findCard). */
  storedTask(taskId: string): StoredTask | undefined {
    return boardIndex(this.doc).get(taskId)
  }

  hasTask(taskId: string): boolean {
    return this.maps.tasks.has(taskId)
  }

  /** A card on the board by id, or 404: missing and foreign ids look the same. */
  requireTask(taskId: string): StoredTask {
    const t = this.storedTask(taskId)
    if (!t) throw notFound(`No card with taskId ${taskId} on the board of this organisation`)
    return t
  }

  requireColumn(columnId: string, param = 'columnId'): Column {
    const c = this.columns.get(columnId)
    if (!c) throw notFound(`No column with ${param} ${columnId} in this organisation`)
    return c
  }

  /** A card's claim from the board document: live, or lapsed (shown as lapsed and free); null if none or released. */
  claimOf(taskId: string): ClaimRecord | null {
    const stored = this.maps.claims.get(taskId) as StoredClaim | undefined
    return shownOnCard(stored && presentClaim(stored, this.now))
  }

  effectivePriority(t: StoredTask) {
    return effectivePriority(t.priority, this.columns.get(t.columnId)?.onFire === true)
  }

  /**
   * A card in the get_task / get_board shape. `claim` overrides the board's claim entry
   * (an archived card's claim comes from Postgres).
   */
  present(t: StoredTask, claim: ClaimRecord | null = this.claimOf(t.id)): Task {
    return {
      id: t.id,
      columnId: t.columnId,
      projectId: t.projectId,
      projectName: t.projectId ? (this.projects.get(t.projectId)?.name ?? null) : null,
      title: t.title,
      description: descriptionOf(this.doc, t.id),
      type: t.type,
      priority: this.effectivePriority(t),
      ownPriority: t.priority,
      tags: t.tags,
      blockedBy: t.blockedBy,
      blocked: this.blocked(t),
      assigneeIds: t.assigneeIds,
      position: t.position,
      createdAt: t.createdAt,
      updatedAt: t.updatedAt,
      archivedAt: t.archivedAt,
      createdByEmail: t.createdByEmail,
      claim,
      commentCount: t.stats.commentCount,
      imageCount: t.stats.imageCount,
      lastCommentBy: t.stats.lastCommentBy,
      lastCommentAt: t.stats.lastCommentAt,
      lastCommentAuthor: t.stats.lastCommentAuthor,
    }
  }

  /** The summary form: exactly the fields the specification lists. */
  summarize(t: StoredTask): TaskSummary {
    return summaryOf(this.present(t))
  }

  /** Columns in board order: by position, ties by id so the order is stable. */
  sortedColumns(): Column[] {
    return [...this.columns.values()].sort(
      (a, b) => a.position - b.position || a.id.localeCompare(b.id),
    )
  }

  /** The position that appends after the last card of a column. */
  appendPosition(columnId: string, step: number): number {
    return boardIndex(this.doc).appendPosition(columnId, step)
  }
}

/** The summary form of a presented card. */
export function summaryOf(t: Task): TaskSummary {
  const s: TaskSummary = {
    id: t.id,
    columnId: t.columnId,
    projectId: t.projectId,
    title: t.title,
    type: t.type,
    priority: t.priority,
    tags: t.tags,
    blocked: t.blocked,
    assigneeIds: t.assigneeIds,
    commentCount: t.commentCount,
    imageCount: t.imageCount,
    lastCommentBy: t.lastCommentBy,
    lastCommentAt: t.lastCommentAt,
    updatedAt: t.updatedAt,
    claimedBy: t.claim?.isLive ? t.claim.holder : null,
  }
  if (t.commentsTruncated !== undefined) s.commentsTruncated = t.commentsTruncated
  return s
}
