import type * as Y from 'yjs'
import {
  boardMaps,
  readAttachment,
  readColumn,
  readComment,
  readProject,
  readStoredTask,
  type StoredAttachment,
  type StoredComment,
  type StoredTask,
} from '../../shared/board-doc.ts'
import { presentClaim, type StoredClaim } from '../../shared/claims.ts'
import { effectivePriority } from '../../shared/priority.ts'
import type { ClaimRecord, Column, Project, Task, TaskSummary } from '../../shared/records.ts'
import { notFound } from '../api-error.ts'
import { type BoardIndex, boardIndex } from './board-index.ts'

interface CommentStats {
  count: number
  last: StoredComment | undefined
}

/**
 * An index of the board document for one request: columns, projects, per-card comment and
 * image counts and claims, so presenting N cards costs one pass over each map.
 */
export class BoardView {
  readonly doc: Y.Doc
  readonly now: number
  readonly columns = new Map<string, Column>()
  readonly projects = new Map<string, Project>()
  private readonly commentStats = new Map<string, CommentStats>()
  private readonly index: BoardIndex

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
    // Comments, screenshots and claims are read per card on demand, through the index.
    this.index = boardIndex(doc)
  }

  /** A card's comment count and newest comment, from the index (no scan of all comments). */
  private statsOf(taskId: string): CommentStats {
    let stats = this.commentStats.get(taskId)
    if (!stats) {
      stats = { count: 0, last: undefined }
      const comments = this.maps.comments
      for (const id of this.index.commentIds(taskId)) {
        const m = comments.get(id)
        if (!m) continue
        const c = readComment(id, m)
        stats.count += 1
        if (!stats.last || newer(c, stats.last)) stats.last = c
      }
      this.commentStats.set(taskId, stats)
    }
    return stats
  }

  get maps() {
    return boardMaps(this.doc)
  }

  /** Every stored card, archived ones included. */
  storedTasks(): StoredTask[] {
    const out: StoredTask[] = []
    this.maps.tasks.forEach((m, id) => {
      out.push(readStoredTask(id, m))
    })
    return out
  }

  storedTask(taskId: string): StoredTask | undefined {
    const m = this.maps.tasks.get(taskId)
    return m ? readStoredTask(taskId, m) : undefined
  }

  /** A card by id, or 404: missing and foreign ids look the same. */
  requireTask(taskId: string): StoredTask {
    const t = this.storedTask(taskId)
    if (!t) throw notFound(`No card with taskId ${taskId} in this organisation`)
    return t
  }

  requireColumn(columnId: string, param = 'columnId'): Column {
    const c = this.columns.get(columnId)
    if (!c) throw notFound(`No column with ${param} ${columnId} in this organisation`)
    return c
  }

  storedComments(): StoredComment[] {
    const out: StoredComment[] = []
    this.maps.comments.forEach((m, id) => {
      out.push(readComment(id, m))
    })
    return out
  }

  storedAttachments(): StoredAttachment[] {
    const out: StoredAttachment[] = []
    this.maps.attachments.forEach((m, id) => {
      out.push(readAttachment(id, m))
    })
    return out
  }

  /** Claims of every card ever claimed (the `activity` array). */
  activity(): ClaimRecord[] {
    const out: ClaimRecord[] = []
    this.maps.claims.forEach((stored) => {
      out.push(presentClaim(stored as StoredClaim, this.now))
    })
    return out.sort((a, b) => b.updatedAt.localeCompare(a.updatedAt))
  }

  /** A card's claim: live, or lapsed (shown as lapsed and free); null if never claimed or released. */
  claimOf(taskId: string): ClaimRecord | null {
    const stored = this.maps.claims.get(taskId) as StoredClaim | undefined
    return stored && !stored.releasedAt ? presentClaim(stored, this.now) : null
  }

  effectivePriority(t: StoredTask) {
    return effectivePriority(t.priority, this.columns.get(t.columnId)?.onFire === true)
  }

  present(t: StoredTask): Task {
    const stats = this.statsOf(t.id)
    const last = stats.last
    return {
      id: t.id,
      columnId: t.columnId,
      projectId: t.projectId,
      projectName: t.projectId ? (this.projects.get(t.projectId)?.name ?? null) : null,
      title: t.title,
      description: t.description,
      type: t.type,
      priority: this.effectivePriority(t),
      ownPriority: t.priority,
      tags: t.tags,
      assigneeIds: t.assigneeIds,
      position: t.position,
      createdAt: t.createdAt,
      updatedAt: t.updatedAt,
      archivedAt: t.archivedAt,
      createdByEmail: t.createdByEmail,
      claim: this.claimOf(t.id),
      commentCount: stats.count,
      imageCount: this.index.attachmentIds(t.id).size,
      lastCommentBy: last ? (last.agentName ? 'agent' : 'human') : null,
      lastCommentAt: last?.createdAt ?? null,
      lastCommentAuthor: last ? (last.agentName ?? last.authorEmail) : null,
    }
  }

  /** The summary form: exactly the fields the specification lists. */
  summarize(t: StoredTask): TaskSummary {
    const full = this.present(t)
    return {
      id: full.id,
      columnId: full.columnId,
      projectId: full.projectId,
      title: full.title,
      type: full.type,
      priority: full.priority,
      tags: full.tags,
      assigneeIds: full.assigneeIds,
      commentCount: full.commentCount,
      imageCount: full.imageCount,
      lastCommentBy: full.lastCommentBy,
      lastCommentAt: full.lastCommentAt,
      updatedAt: full.updatedAt,
      claimedBy: full.claim?.isLive ? full.claim.holder : null,
    }
  }

  /** Columns in board order: by position, ties by id so the order is stable. */
  sortedColumns(): Column[] {
    return [...this.columns.values()].sort(
      (a, b) => a.position - b.position || a.id.localeCompare(b.id),
    )
  }

  /** The position that appends after the last card of a column. */
  appendPosition(columnId: string, step: number): number {
    return this.index.appendPosition(columnId, step)
  }
}

function newer(a: StoredComment, b: StoredComment): boolean {
  return a.createdAt > b.createdAt || (a.createdAt === b.createdAt && a.id > b.id)
}
