import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import { followStats, openCard } from '../../server/board/card-thread.ts'
import type { LiveDocs } from '../../server/live/live-docs.ts'
import type { WriteScope } from '../../server/live/write-scope.ts'
import { cardMaps, readAttachment, readComment } from '../../shared/card-doc.ts'
import { boardDocName, cardDocName } from '../../shared/doc-names.ts'

/**
 * Writes `n` entries into a card's document, one second apart from `from`, through the
 * write path the actions use (the card's document, its index rows and the card's stats, in
 * one write): `entry` fills entry `i` and returns the index row it makes.
 */
async function seedCardEntries(
  live: LiveDocs,
  orgId: string,
  taskId: string,
  n: number,
  from: string,
  entry: (doc: Y.Doc, id: string, i: number, createdAt: string) => Parameters<WriteScope['row']>[0],
): Promise<void> {
  await live.write(
    boardDocName(orgId),
    { type: 'server', orgId },
    async (w) => {
      const card = await openCard(w, orgId, taskId)
      w.mutateDoc(card.doc, (doc) => {
        for (let i = 0; i < n; i++) {
          const createdAt = new Date(Date.parse(from) + i * 1000).toISOString()
          w.row(entry(doc, randomUUID(), i, createdAt))
        }
      })
      followStats(w, taskId, card)
    },
    [cardDocName(orgId, taskId)],
  )
}

/**
 * Seeds a card's comments at chosen times, for tests about ordering and caps that need
 * timestamps an action would not give.
 */
export function seedComments(
  live: LiveDocs,
  orgId: string,
  taskId: string,
  n: number,
  from: string,
  tag: string,
  author: { email: string; agentName: string | null } = {
    email: 'person@example.test',
    agentName: null,
  },
): Promise<void> {
  return seedCardEntries(live, orgId, taskId, n, from, (doc, id, i, createdAt) => {
    const m = new Y.Map<unknown>()
    m.set('taskId', taskId)
    m.set('body', `${tag} ${i}`)
    m.set('authorEmail', author.email)
    m.set('agentName', author.agentName)
    m.set('createdAt', createdAt)
    m.set('editedAt', null)
    cardMaps(doc).comments.set(id, m)
    return { t: 'comment', id, rec: readComment(id, m) }
  })
}

/** Screenshot entries without files, `n` of them one second apart from `from`. */
export function seedAttachments(
  live: LiveDocs,
  orgId: string,
  taskId: string,
  n: number,
  from: string,
): Promise<void> {
  return seedCardEntries(live, orgId, taskId, n, from, (doc, id, i, createdAt) => {
    const m = new Y.Map<unknown>()
    m.set('taskId', taskId)
    m.set('filename', `shot-${i}.png`)
    m.set('mimeType', 'image/png')
    m.set('size', 100)
    m.set('createdAt', createdAt)
    cardMaps(doc).attachments.set(id, m)
    return { t: 'attachment', id, rec: readAttachment(id, m) }
  })
}
