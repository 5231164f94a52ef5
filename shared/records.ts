import type { z } from 'zod'
import type * as out from './schemas/outputs.ts'

/**
 * The records the agent endpoint returns, as the specification names their fields: the
 * types of the record schemas (shared/schemas/outputs.ts), so each record is written once.
 */

/**
 * working: live. lapsed: the lease passed and nobody released it (the card is free; the
 * holder may have died). released: its holder handed the card back (`releasedAt`); the
 * specification leaves status values beyond working and lapsed open.
 */
export type ClaimStatus = ClaimRecord['status']
export type ClaimRecord = z.output<typeof out.claimRecord>

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

export type Task = z.output<typeof out.task>
export type TaskSummary = z.output<typeof out.taskSummary>
export type Column = z.output<typeof out.column>
export type Project = z.output<typeof out.project>
export type Comment = z.output<typeof out.comment>
/** `url` and `urlExpiresAt`: a short-lived signed link, absent where the specification says no URL is returned. */
export type Attachment = z.output<typeof out.attachment>
export type Assignee = z.output<typeof out.assignee>
