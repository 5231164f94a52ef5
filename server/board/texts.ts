import { createHash } from 'node:crypto'
import type * as Y from 'yjs'
import { boardMaps, readDescription } from '../../shared/board-doc.ts'
import type { RowOp } from '../live/write-record.ts'

/**
 * What a board write records of its cards' words for search_tasks (task_texts, migration
 * 018): a `text` op per changed card on the board whose title or description this process
 * has not yet recorded as they are. Keyed by the card's Y.Map, so a card put back on the
 * board (a new map) is recorded again; a card off the board has its own ops (archived).
 */
const recorded = new WeakMap<Y.Map<unknown>, string>()

export function textOps(doc: Y.Doc, taskIds: Iterable<string>): RowOp[] {
  const tasks = boardMaps(doc).tasks
  const ops: RowOp[] = []
  for (const id of new Set(taskIds)) {
    const card = tasks.get(id)
    if (!card) continue
    const title = card.get('title')
    const rec = {
      title: typeof title === 'string' ? title : '',
      description: readDescription(card),
    }
    const digest = createHash('sha1')
      .update(rec.title)
      .update('\0')
      .update(rec.description)
      .digest('base64')
    if (recorded.get(card) === digest) continue
    recorded.set(card, digest)
    ops.push({ t: 'text', id, rec })
  }
  return ops
}
