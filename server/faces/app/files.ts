import type { IncomingMessage, ServerResponse } from 'node:http'
import { cardMaps } from '../../../shared/card-doc.ts'
import { isUuid } from '../../../shared/ids.ts'
import { cardDoc, followStats, openCard } from '../../board/card-thread.ts'
import { attachmentsByIds } from '../../board/history.ts'
import { ApiError } from '../../errors.ts'
import { checkFileLink, fileLinkSecret, signFileLink } from '../../files/links.ts'
import { fileStore, type StoredFile } from '../../files/store.ts'
import { answer, type RouteDoc } from '../../http/route-docs.ts'
import type { Params } from '../../http/router.ts'
import { type AppRouter, queryOf } from './route.ts'

const ONE_YEAR = 31_536_000

const notFound = () => new ApiError(404, 'No such file')

function uuidOf(value: string | undefined): string {
  const v = (value ?? '').toLowerCase()
  if (!isUuid(v)) throw notFound()
  return v
}

/**
 * Sends stored bytes with the type proved at upload. `nosniff` and a sandboxing CSP keep a
 * browser from treating an image as anything else, whatever its bytes look like.
 */
function sendFile(
  req: IncomingMessage,
  res: ServerResponse,
  file: StoredFile,
  headers: Record<string, string>,
): void {
  const etag = `"${file.sha256}"`
  const common = {
    etag,
    'x-content-type-options': 'nosniff',
    'content-security-policy': "default-src 'none'; sandbox",
    ...headers,
  }
  if (req.headers['if-none-match'] === etag) {
    res.writeHead(304, common)
    res.end()
    return
  }
  res.writeHead(200, {
    'content-type': file.mimeType,
    'content-length': String(file.bytes.length),
    ...common,
  })
  res.end(req.method === 'HEAD' ? undefined : file.bytes)
}

/** A label fit for a Content-Disposition header: safe characters only. */
function dispositionName(label: string | undefined, file: StoredFile): string {
  const safe = (label ?? '').replace(/[^A-Za-z0-9._-]/g, '')
  return safe.endsWith(`.${file.extension}`) ? safe : `screenshot.${file.extension}`
}

/**
 * Files over HTTP: node images at permanent public URLs, card screenshots through signed
 * links that expire, and the app routes with which a teammate opens or deletes a screenshot.
 */
export function fileRoutes(app: AppRouter): void {
  const { db, config } = app.deps
  const { router } = app
  const store = fileStore(db)

  const publicFile = async (req: IncomingMessage, res: ServerResponse, p: Params) => {
    const orgId = uuidOf(p.orgId)
    const m = /^([0-9a-fA-F-]{36})\.([a-z]{2,4})$/.exec(p.name ?? '')
    const file = m ? await store.get(orgId, uuidOf(m[1])) : undefined
    // A screenshot is never served here, even to someone who guessed its id.
    if (file?.visibility !== 'public' || file.extension !== m?.[2]) throw notFound()
    sendFile(req, res, file, {
      'cache-control': `public, max-age=${ONE_YEAR}, immutable`,
      'cross-origin-resource-policy': 'cross-origin',
    })
  }
  const publicDoc: RouteDoc = {
    summary: 'A node image, public and permanent',
    description:
      'Cache-Control: public, max-age=31536000, immutable; Cross-Origin-Resource-Policy: cross-origin. A screenshot is never served here.',
    access: 'public',
    answers: [answer.file('The image, with the type proved at upload.'), answer.notModified()],
    errors: { 404: 'No such image.' },
  }
  router.on('GET', '/files/public/:orgId/:name', publicDoc, publicFile)
  router.on('HEAD', '/files/public/:orgId/:name', publicDoc, publicFile)

  const privateFile = async (req: IncomingMessage, res: ServerResponse, p: Params) => {
    const orgId = uuidOf(p.orgId)
    const fileId = uuidOf(p.fileId)
    const query = queryOf(req)
    const check = checkFileLink(
      await fileLinkSecret(db),
      orgId,
      fileId,
      query.get('expires'),
      query.get('sig'),
    )
    if (check === 'expired') {
      throw new ApiError(
        403,
        'This link has expired: links to screenshots work for 10 minutes; get a fresh one with get_task',
      )
    }
    if (check === 'invalid') throw new ApiError(403, 'This link is not valid')
    const file = await store.get(orgId, fileId)
    if (file?.visibility !== 'private') throw notFound()
    const left = Math.max(0, Number(query.get('expires')) - Math.floor(Date.now() / 1000))
    sendFile(req, res, file, {
      'cache-control': `private, max-age=${left}`,
      'content-disposition': `inline; filename="${dispositionName(p.filename, file)}"`,
      // The signed query must not travel onwards in a Referer header.
      'referrer-policy': 'no-referrer',
      'cross-origin-resource-policy': 'same-site',
    })
  }
  const privateDoc: RouteDoc = {
    summary: 'A screenshot, through a signed link',
    description:
      "The link is bound to the organisation and the file. Cache-Control: private for the rest of the link's life; Referrer-Policy: no-referrer.",
    access: 'signed-link',
    query: {
      expires: {
        description: 'When the link stops working (Unix seconds), as signed.',
        schema: { type: 'integer' },
        required: true,
      },
      sig: { description: 'The signature.', schema: { type: 'string' }, required: true },
    },
    answers: [answer.file('The screenshot, with the type proved at upload.'), answer.notModified()],
    errors: { 404: 'No such screenshot.' },
  }
  router.on('GET', '/files/private/:orgId/:fileId/:filename', privateDoc, privateFile)
  router.on('HEAD', '/files/private/:orgId/:fileId/:filename', privateDoc, privateFile)

  /** A fresh signed link to a screenshot, for a member of the organisation (the web app). */
  app.org(
    'GET',
    '/attachments/:attachmentId/link',
    {
      summary: 'A fresh signed link to a screenshot',
      access: 'member',
      answers: [answer.json(200, '`{ url, expiresAt }`: the link works for 10 minutes.')],
      errors: { 404: 'No such screenshot.' },
    },
    async (_req, { org, params: p }) => {
      const attachmentId = (p.attachmentId ?? '').toLowerCase()
      const attachment = isUuid(attachmentId)
        ? (await attachmentsByIds(db, org.id, [attachmentId])).get(attachmentId)
        : undefined
      if (!attachment) throw new ApiError(404, 'No such attachment')
      const link = signFileLink(await fileLinkSecret(db), config, {
        orgId: org.id,
        id: attachment.id,
        filename: attachment.filename,
      })
      return { status: 200, body: link }
    },
  )

  /**
   * A teammate deletes a screenshot: its entry in the card's document, its index row, its
   * bytes and the card's stats go in one transaction.
   */
  app.org(
    'DELETE',
    '/attachments/:attachmentId',
    {
      summary: 'Delete a screenshot',
      description:
        "Its entry in the card's document, its index row, its bytes and the card's counts, in one transaction.",
      access: 'member',
      answers: [answer.noContent('The screenshot is gone.')],
      errors: { 404: 'No such screenshot.' },
    },
    async (_req, { user, org, params: p }) => {
      const attachmentId = (p.attachmentId ?? '').toLowerCase()
      const found = isUuid(attachmentId)
        ? (await attachmentsByIds(db, org.id, [attachmentId])).get(attachmentId)
        : undefined
      if (!found) throw new ApiError(404, 'No such attachment')
      await app.context({ user, org }).writeBoard(
        async (w) => {
          const card = await openCard(w, org.id, found.taskId)
          if (!cardMaps(card.doc).attachments.has(attachmentId)) {
            throw new ApiError(404, 'No such attachment')
          }
          await store.delete(org.id, attachmentId, w.tx)
          w.mutateDoc(card.doc, (doc) => cardMaps(doc).attachments.delete(attachmentId))
          followStats(w, found.taskId, card)
          w.row({ t: 'attachment', id: attachmentId, rec: null })
        },
        cardDoc(org.id, found.taskId),
      )
      return { status: 204 }
    },
  )
}
