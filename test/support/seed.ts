import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import { followStats, openCard } from '../../server/actions/cards.ts'
import type { LiveDocs } from '../../server/live/live-docs.ts'
import { cardMaps, readAttachment, readComment } from '../../shared/card-doc.ts'
import { boardDocName, cardDocName } from '../../shared/doc-names.ts'

/**
 * Seeds a card's comments or screenshot entries at chosen times, through the write path the
 * actions use (the card's document, its index rows and the card's stats, in one write), for
 * tests about ordering and caps that need timestamps an action would not give.
 */
export async function seedComments(
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
  await live.write(
    boardDocName(orgId),
    { type: 'server', orgId },
    async (w) => {
      const card = await openCard(w, orgId, taskId)
      w.mutateDoc(card.doc, (doc) => {
        for (let i = 0; i < n; i++) {
          const id = randomUUID()
          const m = new Y.Map<unknown>()
          m.set('taskId', taskId)
          m.set('body', `${tag} ${i}`)
          m.set('authorEmail', author.email)
          m.set('agentName', author.agentName)
          m.set('createdAt', new Date(Date.parse(from) + i * 1000).toISOString())
          m.set('editedAt', null)
          cardMaps(doc).comments.set(id, m)
          w.row({ t: 'comment', id, rec: readComment(id, m) })
        }
      })
      followStats(w, taskId, card)
    },
    [cardDocName(orgId, taskId)],
  )
}

/** Screenshot entries without files, `n` of them one second apart from `from`. */
export async function seedAttachments(
  live: LiveDocs,
  orgId: string,
  taskId: string,
  n: number,
  from: string,
): Promise<void> {
  await live.write(
    boardDocName(orgId),
    { type: 'server', orgId },
    async (w) => {
      const card = await openCard(w, orgId, taskId)
      w.mutateDoc(card.doc, (doc) => {
        for (let i = 0; i < n; i++) {
          const id = randomUUID()
          const m = new Y.Map<unknown>()
          m.set('taskId', taskId)
          m.set('filename', `shot-${i}.png`)
          m.set('mimeType', 'image/png')
          m.set('size', 100)
          m.set('createdAt', new Date(Date.parse(from) + i * 1000).toISOString())
          cardMaps(doc).attachments.set(id, m)
          w.row({ t: 'attachment', id, rec: readAttachment(id, m) })
        }
      })
      followStats(w, taskId, card)
    },
    [cardDocName(orgId, taskId)],
  )
}
