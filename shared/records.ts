import type { ColumnRole, Priority, TaskType } from './constants.ts'

/** The records the agent endpoint returns, as the specification names their fields. */

/**
 * working: live. lapsed: the lease passed and nobody released it (the card is free; the
 * holder may have died). released: its holder handed the card back (`releasedAt`); the
 * specification leaves status values beyond working and lapsed open.
 */
export type ClaimStatus = 'working' | 'lapsed' | 'released'

export interface ClaimRecord {
  taskId: string
  agentName: string | null
  house: string | null
  generation: number | null
  isSubChild: boolean
  status: ClaimStatus
  note: string | null
  startedAt: string
  updatedAt: string
  expiresAt: string
  /** When its holder released it; null unless status is released. */
  releasedAt: string | null
  isLive: boolean
  holder: string
}

/**
 * What a card's comments and screenshots add up to. The server keeps it as one JSON value
 * on the board card (`stats`), so a comment costs one overwrite of the card, not five.
 */
export interface TaskStats {
  commentCount: number
  imageCount: number
  /** human = the newest comment carried no agentName. */
  lastCommentBy: 'human' | 'agent' | null
  lastCommentAt: string | null
  /** The newest comment's agentName, or its author's e-mail for a person's. */
  lastCommentAuthor: string | null
}

export const EMPTY_STATS: TaskStats = {
  commentCount: 0,
  imageCount: 0,
  lastCommentBy: null,
  lastCommentAt: null,
  lastCommentAuthor: null,
}

export interface Task {
  id: string
  columnId: string
  projectId: string | null
  projectName: string | null
  title: string
  description: string
  type: TaskType | null
  /** Effective level: a card in an on-fire column counts as at least high. */
  priority: Priority | null
  ownPriority: Priority | null
  tags: string[]
  assigneeIds: string[]
  position: number
  createdAt: string
  updatedAt: string
  archivedAt: string | null
  createdByEmail: string
  claim: ClaimRecord | null
  commentCount: number
  imageCount: number
  lastCommentBy: 'human' | 'agent' | null
  lastCommentAt: string | null
  lastCommentAuthor: string | null
  commentsTruncated?: boolean
}

export interface TaskSummary {
  id: string
  columnId: string
  projectId: string | null
  title: string
  type: TaskType | null
  priority: Priority | null
  tags: string[]
  assigneeIds: string[]
  commentCount: number
  imageCount: number
  lastCommentBy: 'human' | 'agent' | null
  lastCommentAt: string | null
  updatedAt: string
  commentsTruncated?: boolean
  claimedBy: string | null
}

export interface Column {
  id: string
  title: string
  position: number
  role: ColumnRole | null
  projectId: string | null
  onFire: boolean
}

export interface Project {
  id: string
  name: string
  color: string
  createdAt: string
}

export interface Comment {
  id: string
  taskId: string
  body: string
  authorEmail: string
  agentName: string | null
  createdAt: string
  editedAt: string | null
}

export interface Attachment {
  id: string
  taskId: string
  filename: string
  mimeType: string
  size: number
  createdAt: string
  /** Short-lived signed link; absent where the specification says no URL is returned. */
  url?: string
  urlExpiresAt?: string
}

export interface Assignee {
  id: string
  name: string
  email: string
}
