import type * as Y from 'yjs'
import { boardMaps } from '../../shared/board-doc.ts'
import { statsOf } from '../../shared/card-doc.ts'
import { cardDocName } from '../../shared/doc-names.ts'
import { lockArchived } from '../board/history.ts'
import { notFound } from '../errors.ts'
import type { WriteScope } from '../live/write-scope.ts'

/**
 * Writes to a card's own document (its comments and screenshots): the card is found on the
 * board or in the archive, its document opened into the write, and its `stats` kept in
 * step with what the document holds. The write must name the card's document when it
 * starts (`cardDoc`).
 */

/** The documents a write to this card's comments or screenshots opens. */
export function cardDoc(orgId: string, taskId: string): string[] {
  return [cardDocName(orgId, taskId)]
}

/**
 * The card a comment or screenshot goes to, with its document opened into the write: on
 * the board (its `stats` live on the board card) or archived (in its row). 404 when the
 * card is neither.
 */
export async function openCard(
  w: WriteScope,
  orgId: string,
  taskId: string,
): Promise<{ doc: Y.Doc; board: Y.Map<unknown> | undefined; newest: string | null }> {
  const board = boardMaps(w.doc).tasks.get(taskId)
  const archived = board ? undefined : await lockArchived(w, orgId, taskId)
  if (!board && !archived) throw notFound(`No card with taskId ${taskId} in this organisation`)
  const doc = w.open(cardDocName(orgId, taskId))
  return { doc, board, newest: statsOf(doc).lastCommentAt }
}

/**
 * Makes the card's `stats` follow its document, in the same write: one overwrite of the
 * board card's `stats` (archived: of its row's).
 */
export function followStats(
  w: WriteScope,
  taskId: string,
  card: { doc: Y.Doc; board: Y.Map<unknown> | undefined },
): void {
  const stats = statsOf(card.doc)
  if (card.board) {
    const board = card.board
    w.mutate(() => board.set('stats', stats))
  } else {
    w.row({ t: 'archived_stats', id: taskId, rec: stats })
  }
}
