import { createHash } from 'node:crypto'
import type * as Y from 'yjs'
import { boardMaps, type StoredTask } from '../../shared/board-doc.ts'
import type { RowOp } from '../live/write-record.ts'
import { descriptionOf } from './descriptions.ts'

/**
 * What writes record of cards' words (task_texts, migrations 018 and 020): search_tasks
 * reads them, and they are the Postgres home of each card's description (version 3). A
 * `text` op says what a card's title, description and archived state are now; the last one
 * of a card in a batch is what is stored.
 */

/** What was last recorded of each card on the board, keyed by the card's Y.Map (a card put back on the board is a new map, recorded again). */
const recorded = new WeakMap<Y.Map<unknown>, string>()

function digest(title: string, description: string): string {
  return createHash('sha1').update(title).update('\0').update(description).digest('base64')
}

/**
 * The text ops of changed cards on the board whose title or description this process has
 * not recorded as they are now (a move changes neither, and records nothing).
 */
export function textOps(doc: Y.Doc, taskIds: Iterable<string>): RowOp[] {
  const tasks = boardMaps(doc).tasks
  const ops: RowOp[] = []
  for (const id of new Set(taskIds)) {
    const card = tasks.get(id)
    if (!card) continue
    const title = card.get('title')
    const rec = {
      title: typeof title === 'string' ? title : '',
      description: descriptionOf(doc, id),
      archived: false,
    }
    const made = digest(rec.title, rec.description)
    if (recorded.get(card) === made) continue
    recorded.set(card, made)
    ops.push({ t: 'text', id, rec })
  }
  return ops
}

/** The text op of a card as it goes into (or stays in) history: archived, with its words. */
export function archivedTextOp(task: StoredTask, description: string): RowOp {
  return { t: 'text', id: task.id, rec: { title: task.title, description, archived: true } }
}
