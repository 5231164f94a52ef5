import { randomUUID } from 'node:crypto'
import * as Y from 'yjs'
import type { ActionInput, ActionResults } from '../../shared/actions.ts'
import { boardMaps, readAttachment } from '../../shared/board-doc.ts'
import type { ActionContext } from '../agent/context.ts'
import { badRequest, notFound } from '../api-error.ts'
import { storeImage } from '../files/attachments.ts'
import { safeFilename } from '../files/filename.ts'
import { type ImageInfo, validateImage } from '../images/validate.ts'

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
 * attach_screenshot: not claim locked (works under anyone's claim). The bytes are proved
 * an image, stored privately in the same transaction as the board document's
 * `attachments` entry and its change row; the reply carries no URL.
 */
export async function attach_screenshot(
  ctx: ActionContext,
  input: ActionInput<'attach_screenshot'>,
): Promise<ActionResults['attach_screenshot']> {
  const { bytes, image } = acceptImage(input.imageBase64)
  const filename = safeFilename(input.filename, image.extension)
  const id = randomUUID()
  return ctx.writeBoard(async (w) => {
    const attachments = boardMaps(w.doc).attachments
    if (!boardMaps(w.doc).tasks.has(input.taskId)) {
      throw notFound(`No card with taskId ${input.taskId} in this organisation`)
    }
    await storeImage(ctx.db, w.tx, {
      id,
      orgId: ctx.key.orgId,
      visibility: 'private',
      image,
      bytes,
      createdAt: w.now,
    })
    w.mutate(() => {
      const m = new Y.Map<unknown>()
      m.set('taskId', input.taskId)
      m.set('filename', filename)
      m.set('mimeType', image.mimeType)
      m.set('size', bytes.length)
      m.set('createdAt', w.now)
      attachments.set(id, m)
    })
    w.changed('attachment', id)
    return { attachment: readAttachment(id, attachments.get(id) as Y.Map<unknown>) }
  })
}
