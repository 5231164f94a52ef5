import * as Y from 'yjs'
import type { Db, Queryable } from '../../persistence/types.ts'
import { boardMaps, readDescription } from '../../shared/board-doc.ts'
import { cardDocName, orgIdOf } from '../../shared/doc-names.ts'
import { docJson, generationOf, rebuilt } from '../../shared/rebase.ts'
import type { Logger } from '../http/json.ts'
import { LEVEL, loadInto } from '../live/doc-store.ts'
import { endGeneration } from '../live/generations.ts'

/** The name this data move is recorded under in schema_migrations. */
export const LAYOUT_V3 = '020_board_v3 (descriptions to card documents)'

/**
 * Moves a database written by version 2 of the live documents to version 3 (docs/design.md,
 * Contract 3): every card's description goes to its card document (`description`, a
 * Y.Text; version 2 card documents never had one), those on the board from the board
 * document, archived cards' from task_texts; and each board that held descriptions starts
 * over as generation 1 without them (a re-base, shared/rebase.ts: removing them in place
 * would leave their tombstones in every load for ever). Generation 0's final state, with
 * its descriptions, is kept as the base: a browser that kept a version-2 copy is refused
 * as holding an ended generation, and carries its unsent edits across, a description edit
 * to the card document. Task_texts already holds every description (migration 018). Runs
 * once, in one transaction, under a lock, at start.
 */
export async function moveDescriptions(db: Db, log: Logger): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(7304)')
    const done = await tx.query('select 1 from schema_migrations where name = $1', [LAYOUT_V3])
    if (done.length > 0) return 0
    const boards = await tx.query<{ doc_name: string }>(
      `select distinct doc_name from doc_updates where doc_name like '%/board' order by doc_name`,
    )
    let moved = 0
    for (const { doc_name } of boards) {
      const cards = await moveBoard(tx, doc_name)
      if (cards > 0)
        log.info(`moved the descriptions of ${cards} cards of ${doc_name} to their documents`)
      moved += cards
    }
    await tx.query('insert into schema_migrations (name) values ($1)', [LAYOUT_V3])
    return moved
  })
}

async function moveBoard(tx: Queryable, boardName: string): Promise<number> {
  const orgId = orgIdOf(boardName)
  const board = new Y.Doc()
  await loadInto(tx, boardName, board)
  try {
    const texts = new Map<string, string>()
    let held = false
    boardMaps(board).tasks.forEach((m, id) => {
      if (!m.has('description')) return
      held = true
      const text = readDescription(m)
      if (text !== '') texts.set(id, text)
    })
    // Archived cards kept theirs in their record, and in task_texts.
    const archived = await tx.query<{ id: string; description: string }>(
      `select id, description from task_texts
        where org_id = $1 and archived and description <> ''`,
      [orgId],
    )
    for (const r of archived) if (!texts.has(r.id)) texts.set(r.id, r.description)
    if (texts.size > 0) {
      const names: string[] = []
      // In base64: drivers disagree on how to send an array of bytea.
      const updates: string[] = []
      for (const [id, text] of texts) {
        const card = new Y.Doc()
        card.getText('description').insert(0, text)
        names.push(cardDocName(orgId, id))
        updates.push(Buffer.from(Y.encodeStateAsUpdate(card)).toString('base64'))
        card.destroy()
      }
      await tx.query(
        `insert into doc_updates (doc_name, data, level)
         select u.doc_name, decode(u.data, 'base64'), 0
           from unnest($1::text[], $2::text[]) as u (doc_name, data)`,
        [names, updates],
      )
    }
    if (held && generationOf(board) === 0) {
      const next = rebuilt('board', board, 1, (root, _key, field) => {
        return root === 'tasks' && field === 'description'
      })
      const update = Y.encodeStateAsUpdate(next)
      next.destroy()
      await tx.query('delete from doc_updates where doc_name = $1', [boardName])
      await tx.query('insert into doc_updates (doc_name, data, level) values ($1, $2, $3)', [
        boardName,
        Buffer.from(update),
        LEVEL.snapshot,
      ])
      await endGeneration(tx, boardName, {
        generation: 0,
        stateVector: Y.encodeStateVector(board),
        base: docJson('board', board),
      })
    }
    return texts.size
  } finally {
    board.destroy()
  }
}
