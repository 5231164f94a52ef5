import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { cardMaps, readComment } from '../../shared/card-doc.ts'
import { cardDocName } from '../../shared/doc-names.ts'
import { cardDoc, followStats, openCard } from '../board/card-thread.ts'
import { requireComment } from '../board/history.ts'
import { stampAfter } from '../board/stamps.ts'
import { forbidden, notFound } from '../errors.ts'
import type { ActionContext } from './context.ts'

/**
 * add_comment: not claim locked (works under anyone's claim), archived cards too. The
 * comment goes into the card's document (an open card shows it at once) and its index
 * row, and the card's `stats` move, in one transaction. With no agentName the comment
 * counts as a person's for lastCommentBy.
 */
export async function add_comment(
  ctx: ActionContext,
  input: ActionInput<'add_comment'>,
): Promise<ActionResults['add_comment']> {
  return ctx.writeBoard(
    async (w) => {
      const card = await openCard(w, ctx.orgId, input.taskId)
      const createdAt = stampAfter(w.now, card.newest)
      const id = randomUUID()
      const comment = w.mutateDoc(card.doc, (doc) => {
        const m = new Y.Map<unknown>()
        m.set('taskId', input.taskId)
        m.set('body', input.body)
        m.set('authorEmail', ctx.email)
        m.set('agentName', ctx.identity.agentName ?? null)
        m.set('createdAt', createdAt)
        m.set('editedAt', null)
        cardMaps(doc).comments.set(id, m)
        return readComment(id, m)
      })
      followStats(w, input.taskId, card)
      w.row({ t: 'comment', id, rec: comment })
      w.changed('comment', id)
      w.emit({
        type: 'comment.added',
        data: { comment, taskId: input.taskId, authorIsHuman: comment.agentName === null },
      })
      return { comment }
    },
    cardDoc(ctx.orgId, input.taskId),
  )
}

/**
 * The comment in its card's document, if this key wrote it: 404 when missing or foreign,
 * 403 when someone else's. Found through the comments index, then read from the document.
 */
async function ownComment(
  ctx: ActionContext,
  commentId: string,
): Promise<{ taskId: string; check(doc: Y.Doc): Y.Map<unknown> }> {
  const { taskId } = await requireComment(ctx.db, ctx.orgId, commentId)
  return {
    taskId,
    check(doc) {
      const m = cardMaps(doc).comments.get(commentId)
      if (!m) throw notFound(`No comment with commentId ${commentId} in this organisation`)
      if (m.get('authorEmail') !== ctx.email) {
        throw forbidden(
          ctx.origin.type === 'person'
            ? `Comment ${commentId} is not yours; only its author can change it`
            : `Comment ${commentId} was not written by this key; only its author can change it`,
        )
      }
      return m
    },
  }
}

/** update_comment: keeps author and timestamp, sets editedAt, notifies nobody. */
export async function update_comment(
  ctx: ActionContext,
  input: ActionInput<'update_comment'>,
): Promise<ActionResults['update_comment']> {
  const found = await ownComment(ctx, input.commentId)
  return ctx.writeBoard(
    async (w) => {
      const doc = w.open(cardDocName(ctx.orgId, found.taskId))
      const m = found.check(doc)
      const comment = w.mutateDoc(doc, () => {
        m.set('body', input.body)
        m.set('editedAt', w.now)
        return readComment(input.commentId, m)
      })
      w.row({ t: 'comment', id: input.commentId, rec: comment })
      w.changed('comment', input.commentId)
      return { comment }
    },
    cardDoc(ctx.orgId, found.taskId),
  )
}

/** delete_comment: permanent, and so not shown by get_changes; the card's stats follow. */
export async function delete_comment(
  ctx: ActionContext,
  input: ActionInput<'delete_comment'>,
): Promise<ActionResults['delete_comment']> {
  const found = await ownComment(ctx, input.commentId)
  return ctx.writeBoard(
    async (w) => {
      const card = await openCard(w, ctx.orgId, found.taskId)
      found.check(card.doc)
      w.mutateDoc(card.doc, (doc) => cardMaps(doc).comments.delete(input.commentId))
      followStats(w, found.taskId, card)
      w.row({ t: 'comment', id: input.commentId, rec: null })
      return { deleted: true as const, commentId: input.commentId }
    },
    cardDoc(ctx.orgId, found.taskId),
  )
}
