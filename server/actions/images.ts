import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { cardMaps, readAttachment } from '../../shared/card-doc.ts'
import { cardDoc, followStats, openCard } from '../board/card-thread.ts'
import { badRequest } from '../errors.ts'
import { storeImage } from '../files/attachments.ts'
import { safeFilename } from '../files/filename.ts'
import { type ImageInfo, validateImage } from '../images/validate.ts'
import type { ActionContext } from './context.ts'

/**
 * Decodes `imageBase64` (its text was already checked as plain base64 within the size
 * limit by the schema) and proves the bytes are an image we accept, or throws the 400.
 */
export function acceptImage(imageBase64: string): { bytes: Uint8Array; image: ImageInfo } {
  const bytes = Buffer.from(imageBase64, 'base64')
  const check = validateImage(bytes)
  if (!check.ok) throw badRequest(`imageBase64 is refused: ${check.reason}`)
  return { bytes, image: check.image }
}

/**
 * attach_screenshot: not claim locked (works under anyone's claim), archived cards too.
 * The bytes are proved an image and stored privately in the same transaction as the
 * entry in the card's document, its index row, the card's `stats` and its change row; the
 * reply carries no URL.
 */
export async function attach_screenshot(
  ctx: ActionContext,
  input: ActionInput<'attach_screenshot'>,
): Promise<ActionResults['attach_screenshot']> {
  const { bytes, image } = acceptImage(input.imageBase64)
  const filename = safeFilename(input.filename, image.extension)
  const id = randomUUID()
  return ctx.writeBoard(
    async (w) => {
      const card = await openCard(w, ctx.orgId, input.taskId)
      await storeImage(ctx.db, w.tx, {
        id,
        orgId: ctx.orgId,
        visibility: 'private',
        image,
        bytes,
        createdAt: w.now,
      })
      const attachment = w.mutateDoc(card.doc, (doc) => {
        const m = new Y.Map<unknown>()
        m.set('taskId', input.taskId)
        m.set('filename', filename)
        m.set('mimeType', image.mimeType)
        m.set('size', bytes.length)
        m.set('createdAt', w.now)
        cardMaps(doc).attachments.set(id, m)
        return readAttachment(id, m)
      })
      followStats(w, input.taskId, card)
      w.row({ t: 'attachment', id, rec: attachment })
      w.changed('attachment', id)
      return { attachment }
    },
    cardDoc(ctx.orgId, input.taskId),
  )
}
