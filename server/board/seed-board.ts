import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { POSITION_STEP } from '../../shared/constants.ts'
import type { LiveDocs } from '../live/live-docs.ts'

const DEFAULT_COLUMNS = [
  { title: 'Backlog', role: 'backlog' },
  { title: 'Ready', role: 'ready' },
  { title: 'In progress', role: 'in_progress' },
  { title: 'Done', role: 'done' },
] as const

/** A new organisation's board starts with the four columns every team begins with. */
export async function seedBoard(live: LiveDocs, orgId: string): Promise<void> {
  await live.write(boardDocName(orgId), { type: 'server', orgId }, async (w) => {
    if (boardMaps(w.doc).columns.size > 0) return
    w.mutate((doc) => {
      DEFAULT_COLUMNS.forEach((c, i) => {
        const m = new Y.Map<unknown>()
        m.set('title', c.title)
        m.set('position', (i + 1) * POSITION_STEP)
        m.set('role', c.role)
        m.set('projectId', null)
        m.set('onFire', false)
        m.set('createdAt', w.now)
        m.set('updatedAt', w.now)
        boardMaps(doc).columns.set(randomUUID(), m)
      })
    })
  })
}
