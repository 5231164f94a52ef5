import type * as Y from 'yjs'
import { boardMaps, type StoredTask } from '../../shared/board-doc.ts'
import { statsOf } from '../../shared/card-doc.ts'
import { cardDocName } from '../../shared/doc-names.ts'
import { notFound } from '../errors.ts'
import type { WriteScope } from '../live/write-scope.ts'
import { lockArchived } from './history.ts'

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

/** A card found for a write to its thread (see openCard). */
export interface OpenCard {
  doc: Y.Doc
  /** The board card (its `stats` live there), or undefined when it is archived. */
  board: Y.Map<unknown> | undefined
  /** The archived card, its row locked, when it is not on the board. */
  archived: StoredTask | undefined
  newest: string | null
}

/**
 * The card a comment or screenshot goes to, with its document opened into the write: on
 * the board (its `stats` live on the board card) or archived (in its row). 404 when the
 * card is neither.
 */
export async function openCard(w: WriteScope, orgId: string, taskId: string): Promise<OpenCard> {
  const card = await findCard(w, orgId, taskId)
  if (!card) throw notFound(`No card with taskId ${taskId} in this organisation`)
  return card
}

/** openCard, undefined when the card is neither on the board nor archived. */
export async function findCard(
  w: WriteScope,
  orgId: string,
  taskId: string,
): Promise<OpenCard | undefined> {
  const board = boardMaps(w.doc).tasks.get(taskId)
  const archived = board ? undefined : await lockArchived(w, orgId, taskId)
  if (!board && !archived) return undefined
  const doc = w.open(cardDocName(orgId, taskId))
  return { doc, board, archived, newest: statsOf(doc).lastCommentAt }
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
