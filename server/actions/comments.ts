import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { boardMaps, readComment } from '../../shared/board-doc.ts'
import type { ActionContext } from '../agent/context.ts'
import { forbidden, notFound } from '../api-error.ts'
import type { WriteScope } from '../live/live-docs.ts'
import { BoardView } from './board-view.ts'

/**
 * A card's thread, its newest comment and lastCommentBy are ordered by createdAt, which has
 * millisecond resolution: two writes within one millisecond would read in random order. So
 * a comment is stamped strictly after the card's newest one, unless that one is more than a
 * second ahead (a person's skewed clock is not followed).
 */
function stampAfter(now: string, newest: string | null): string {
  const last = newest === null ? Number.NaN : Date.parse(newest)
  const t = Date.parse(now)
  if (!(last >= t) || last - t >= 1000) return now
  return new Date(last + 1).toISOString()
}

/** add_comment: not claim locked. With no agentName the comment counts as a person's. */
export async function add_comment(
  ctx: ActionContext,
  input: ActionInput<'add_comment'>,
): Promise<ActionResults['add_comment']> {
  return ctx.writeBoard(async (w) => {
    const view = new BoardView(w.doc)
    const createdAt = stampAfter(w.now, view.present(view.requireTask(input.taskId)).lastCommentAt)
    const id = randomUUID()
    w.mutate((doc) => {
      const m = new Y.Map<unknown>()
      m.set('taskId', input.taskId)
      m.set('body', input.body)
      m.set('authorEmail', ctx.key.robotEmail)
      m.set('agentName', ctx.identity.agentName ?? null)
      m.set('createdAt', createdAt)
      m.set('editedAt', null)
      boardMaps(doc).comments.set(id, m)
    })
    w.changed('comment', id)
    const comment = readComment(id, boardMaps(w.doc).comments.get(id) as Y.Map<unknown>)
    w.emit({
      type: 'comment.added',
      data: { comment, taskId: input.taskId, authorIsHuman: comment.agentName === null },
    })
    return { comment }
  })
}

/** The comment, if this key wrote it: 404 when missing or foreign, 403 when someone else's. */
function ownComment(ctx: ActionContext, w: WriteScope, commentId: string): Y.Map<unknown> {
  const m = boardMaps(w.doc).comments.get(commentId)
  if (!m) throw notFound(`No comment with commentId ${commentId} in this organisation`)
  if (m.get('authorEmail') !== ctx.key.robotEmail) {
    throw forbidden(
      `Comment ${commentId} was not written by this key; only its author can change it`,
    )
  }
  return m
}

/** update_comment: keeps author and timestamp, sets editedAt, notifies nobody. */
export async function update_comment(
  ctx: ActionContext,
  input: ActionInput<'update_comment'>,
): Promise<ActionResults['update_comment']> {
  return ctx.writeBoard(async (w) => {
    const m = ownComment(ctx, w, input.commentId)
    w.mutate(() => {
      m.set('body', input.body)
      m.set('editedAt', w.now)
    })
    w.changed('comment', input.commentId)
    return { comment: readComment(input.commentId, m) }
  })
}

/** delete_comment: permanent, and so not shown by get_changes. */
export async function delete_comment(
  ctx: ActionContext,
  input: ActionInput<'delete_comment'>,
): Promise<ActionResults['delete_comment']> {
  return ctx.writeBoard(async (w) => {
    ownComment(ctx, w, input.commentId)
    w.mutate((doc) => boardMaps(doc).comments.delete(input.commentId))
    return { deleted: true as const, commentId: input.commentId }
  })
}
