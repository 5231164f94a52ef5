import * as Y from 'yjs'
import type { Db } from '../../persistence/types.ts'
import { boardMaps, readDescription } from '../../shared/board-doc.ts'
import { orgIdOf } from '../../shared/doc-names.ts'
import type { Logger } from '../http/json.ts'
import { loadInto } from '../live/doc-store.ts'

/** The name this data move is recorded under in schema_migrations. */
export const TASK_TEXTS = '018_task_texts (cards on the board)'

/**
 * Fills task_texts (migration 018, search_tasks) with the words of the cards on each board,
 * which live in the board documents; archived cards were filled by the migration from their
 * records. Once, in one transaction, under a lock, at start; from then on every write keeps
 * the table (board/texts.ts).
 */
export async function fillTaskTexts(db: Db, log: Logger): Promise<number> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock(7303)')
    const done = await tx.query('select 1 from schema_migrations where name = $1', [TASK_TEXTS])
    if (done.length > 0) return 0
    const boards = await tx.query<{ doc_name: string }>(
      `select distinct doc_name from doc_updates where doc_name like '%/board' order by doc_name`,
    )
    let cards = 0
    for (const { doc_name } of boards) {
      const doc = new Y.Doc()
      await loadInto(tx, doc_name, doc)
      const texts: { id: string; title: string; description: string }[] = []
      boardMaps(doc).tasks.forEach((m, id) => {
        const title = m.get('title')
        texts.push({
          id,
          title: typeof title === 'string' ? title : '',
          description: readDescription(m),
        })
      })
      doc.destroy()
      if (texts.length === 0) continue
      await tx.query(
        `insert into task_texts (id, org_id, title, description, archived)
         select t.id, $1, t.title, t.description, false
           from unnest($2::uuid[], $3::text[], $4::text[]) as t (id, title, description)
         on conflict (id) do update set title = excluded.title,
           description = excluded.description, archived = false`,
        [
          orgIdOf(doc_name),
          texts.map((t) => t.id),
          texts.map((t) => t.title),
          texts.map((t) => t.description),
        ],
      )
      cards += texts.length
    }
    await tx.query('insert into schema_migrations (name) values ($1)', [TASK_TEXTS])
    if (cards > 0)
      log.info(`search: indexed the words of ${cards} cards on ${boards.length} boards`)
    return cards
  })
}
