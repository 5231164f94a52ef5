import type * as Y from 'yjs'
import type { Attachment, Comment, TaskStats } from './records.ts'
import { num, str, strOrNull } from './ymap-fields.ts'

/**
 * A card's document (docs/design.md, Contract 3, version 3), named `<orgId>/tasks/<taskId>`:
 * the card's description, comments and screenshots, opened by the app with the card.
 * Programs outside this repository read these names and shapes:
 * - `description`: Y.Text, at most 20,000 characters
 * - `comments`: Y.Map id → Y.Map { taskId, body, authorEmail, agentName, createdAt, editedAt }
 * - `attachments`: Y.Map id → Y.Map { taskId, filename, mimeType, size, createdAt }
 */
export interface CardMaps {
  description: Y.Text
  comments: Y.Map<Y.Map<unknown>>
  /** Written by the server only. */
  attachments: Y.Map<Y.Map<unknown>>
}

export function cardMaps(doc: Y.Doc): CardMaps {
  return {
    description: doc.getText('description'),
    comments: doc.getMap('comments'),
    attachments: doc.getMap('attachments'),
  }
}

export interface StoredComment extends Comment {}

/** A screenshot's entry: what get_task shows of it, without the signed link. */
export type StoredAttachment = Omit<Attachment, 'url'>

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

/** Newest last: by createdAt, ties by id, so a thread reads the same everywhere. */
export function commentOrder(a: { createdAt: string; id: string }, b: typeof a): number {
  return a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id)
}

/** The card's `stats` as its document says: every comment and screenshot counted. */
export function statsOf(doc: Y.Doc): TaskStats {
  const { comments, attachments } = cardMaps(doc)
  let last: StoredComment | undefined
  comments.forEach((m, id) => {
    const c = readComment(id, m)
    if (!last || commentOrder(c, last) > 0) last = c
  })
  const newest = last as StoredComment | undefined
  return {
    commentCount: comments.size,
    imageCount: attachments.size,
    lastCommentBy: newest ? (newest.agentName ? 'agent' : 'human') : null,
    lastCommentAt: newest?.createdAt ?? null,
    lastCommentAuthor: newest ? (newest.agentName ?? newest.authorEmail) : null,
  }
}
