import { createHash } from 'node:crypto'
import type { Db, Queryable } from '../../persistence/types.ts'
import type { StoredAttachment } from '../../shared/card-doc.ts'
import type { Attachment } from '../../shared/records.ts'
import type { Config } from '../config.ts'
import type { ImageInfo } from '../images/validate.ts'
import { fileLinkSecret, signFileLink } from './links.ts'
import { type FileVisibility, fileStore } from './store.ts'

/**
 * Card screenshots: private files, listed in each card's document (`attachments`) and
 * handed out only through short-lived signed links (and as bytes in get_task).
 */

/** Gives each attachment a signed link; fetches the secret once, then signs synchronously. */
export async function attachmentLinker(
  db: Db,
  config: Pick<Config, 'publicUrl'>,
  orgId: string,
): Promise<(a: StoredAttachment) => Attachment> {
  const secret = await fileLinkSecret(db)
  const now = Date.now()
  return (a) => {
    const link = signFileLink(secret, config, { orgId, id: a.id, filename: a.filename }, now)
    return { ...a, url: link.url, urlExpiresAt: link.expiresAt }
  }
}

export interface ScreenshotImage {
  attachmentId: string
  mimeType: string
  dataBase64: string
}

/** The screenshots' bytes, in the order of `attachments`; a file already removed is left out. */
export async function screenshotImages(
  db: Db,
  orgId: string,
  attachments: readonly StoredAttachment[],
): Promise<ScreenshotImage[]> {
  const store = fileStore(db)
  const files = await Promise.all(attachments.map((a) => store.get(orgId, a.id)))
  const out: ScreenshotImage[] = []
  files.forEach((file, i) => {
    const a = attachments[i]
    if (!file || !a) return
    out.push({
      attachmentId: a.id,
      mimeType: file.mimeType,
      dataBase64: Buffer.from(
        file.bytes.buffer,
        file.bytes.byteOffset,
        file.bytes.byteLength,
      ).toString('base64'),
    })
  })
  return out
}

/** Stores validated image bytes as a file, inside the write's transaction. */
export async function storeImage(
  db: Db,
  tx: Queryable,
  file: {
    id: string
    orgId: string
    visibility: FileVisibility
    image: ImageInfo
    bytes: Uint8Array
    createdAt: string
  },
): Promise<void> {
  await fileStore(db).put(
    {
      id: file.id,
      orgId: file.orgId,
      visibility: file.visibility,
      mimeType: file.image.mimeType,
      extension: file.image.extension,
      size: file.bytes.length,
      sha256: createHash('sha256').update(file.bytes).digest('hex'),
      createdAt: file.createdAt,
      bytes: file.bytes,
    },
    tx,
  )
}
