import type { ColumnRole, Priority, TaskType } from './constants.ts'

/** The records the agent endpoint returns, as the specification names their fields. */

export interface ClaimRecord {
  taskId: string
  agentName: string | null
  house: string | null
  generation: number | null
  isSubChild: boolean
  status: 'working' | 'lapsed'
  note: string | null
  startedAt: string
  updatedAt: string
  expiresAt: string
  isLive: boolean
  holder: string
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
