import { pipeline, Readable } from 'node:stream'
import { createGzip } from 'node:zlib'
import { ApiError, badRequest } from '../../errors.ts'
import { answer } from '../../http/route-docs.ts'
import { exportOrganization } from '../../transfer/export.ts'
import {
  archiveOf,
  fromGitHub,
  fromLinear,
  fromTrello,
  type Moved,
} from '../../transfer/foreign.ts'
import { importArchive } from '../../transfer/import.ts'
import { liveReads } from '../../transfer/live-reads.ts'
import { type AppRouter, queryOf } from './route.ts'

/** The media types POST /import takes (app.ts lets them past the JSON-only rule). */
export const IMPORT_TYPES = ['application/octet-stream', 'application/gzip', 'text/csv'] as const

/**
 * The largest Trello, GitHub or Linear file read: it is parsed whole (an archive is read
 * entry by entry), so its size is memory.
 */
const FOREIGN_MAX_BYTES = 64 * 1024 * 1024

/** The body, refused with 413 past `max` bytes. */
async function readCapped(req: AsyncIterable<Buffer>, max: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += chunk.length
    if (size > max) {
      throw new ApiError(
        413,
        `The file is larger than this server takes (${max} bytes; IMPORT_MAX_BYTES, and 64 MB for a Trello, GitHub or Linear file)`,
      )
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/** A Trello board or GitHub issues (JSON), or Linear issues (CSV), as a board to move in. */
function movedIn(type: string, body: string, now: string): Moved {
  if (type === 'text/csv') return fromLinear(body, now)
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    throw badRequest(
      'The body is not JSON: send a Trello board export or `gh issue list --json` output',
    )
  }
  if (Array.isArray(json)) {
    if (
      json.length > 0 &&
      !json.every((i) => typeof i === 'object' && i !== null && 'title' in i)
    ) {
      throw badRequest('This JSON array is not GitHub issues: each must have at least a title')
    }
    return fromGitHub(json, now)
  }
  if (
    typeof json === 'object' &&
    json !== null &&
    Array.isArray((json as { lists?: unknown }).lists)
  ) {
    return fromTrello(json as Record<string, unknown>, now)
  }
  throw badRequest(
    'This JSON is neither a Trello board export (an object with lists and cards) nor GitHub issues (an array, as `gh issue list --json` writes)',
  )
}

/**
 * An organisation's data as one archive it owns (docs/export.md): the export streams it,
 * the import takes it back into an empty organisation, on this server or another.
 */
export function dataRoutes(app: AppRouter): void {
  const { db, live, config, clock, descriptions, transfers } = app.deps

  /** What this process keeps of the organisation is read again; the map list too. */
  const imported = (orgId: string) => {
    descriptions.forget(orgId)
    live.mapsChanged(orgId)
  }

  app.org(
    'GET',
    '/export',
    {
      summary: 'Download the whole organisation as one archive (docs/export.md)',
      description:
        'A gzipped tar of JSON Lines (columns, projects, cards on the board and archived with their descriptions, comments and screenshots, claim records, mind maps, webhooks without secrets, members without credentials), every stored file, and manifest.json (format version, counts, SHA-256 of every entry). Streamed as it is read: its length is known only at the end.',
      access: 'owner-admin',
      answers: [answer.file('The archive (application/gzip).')],
    },
    async (_req, { org }) => {
      const now = new Date(clock.now())
      const reads = liveReads(live)
      let chunks: AsyncIterable<Buffer>
      let written: (() => void) | undefined
      if (transfers) ({ chunks, written } = transfers.export(org.id, now, reads))
      else {
        const gzip = createGzip()
        // Not object mode: the stream buffers 64 KB ahead, not 16 entries of up to 4 MB each.
        const tar = Readable.from(exportOrganization({ db, live: reads }, org.id, now), {
          objectMode: false,
          highWaterMark: 64 * 1024,
        })
        pipeline(tar, gzip, () => {})
        chunks = gzip
      }
      const day = now.toISOString().slice(0, 10)
      return {
        status: 200,
        stream: {
          chunks,
          written,
          mimeType: 'application/gzip',
          filename: `${org.name} ${day}.corkboard.tar.gz`,
        },
      }
    },
  )

  app.org(
    'POST',
    '/import',
    {
      summary: 'Import an export archive into this (empty) organisation',
      description:
        'The body is the archive as GET /export wrote it, as it is (Content-Type: application/octet-stream or application/gzip). Everything is written in one transaction: a damaged, truncated or altered archive is refused (400 naming what is wrong) and nothing is written. Ids and timestamps are kept, so an archive imports into another server, not beside the organisation it came from (409). With ?dryRun=1 the archive is read and checked and the answer says what would be created, without writing anything. The board document starts over as a new generation: open copies close with the reason "re-based" and reopen on the imported board.',
      access: 'owner-admin',
      query: {
        dryRun: {
          description: '1: check and count only, write nothing.',
          schema: { type: 'string', enum: ['0', '1'] },
        },
      },
      answers: [
        answer.json(
          200,
          '`{ dryRun, source: { orgId, name, exportedAt }, counts, invites, notes }`: what was (or would be) created, per kind, the members invited (each with the token of their link, shown once), and what could not be kept as it was.',
        ),
      ],
      errors: {
        400: 'The body is not an export archive, or it is damaged, truncated or altered (the message names the entry).',
        409: 'The organisation is not empty, or the archive’s ids are in use on this server.',
        413: 'The body is larger than IMPORT_MAX_BYTES.',
      },
    },
    async (req, { user, org }) => {
      const type = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase() ?? ''
      if (!['application/json', ...IMPORT_TYPES].includes(type)) {
        throw new ApiError(
          415,
          `Send the file as it is: an export archive as application/octet-stream, Trello or GitHub JSON as application/json, Linear CSV as text/csv (got ${type || 'no Content-Type'})`,
        )
      }
      const length = Number(req.headers['content-length'] ?? 0)
      if (length > config.importMaxBytes) {
        throw new ApiError(
          413,
          `The archive is larger than this server takes (IMPORT_MAX_BYTES, ${config.importMaxBytes} bytes)`,
        )
      }
      const dryRun = queryOf(req).get('dryRun') === '1'
      if (type === 'application/json' || type === 'text/csv') {
        const body = await readCapped(req, Math.min(config.importMaxBytes, FOREIGN_MAX_BYTES))
        const now = new Date(clock.now()).toISOString()
        const moved = movedIn(type, body, now)
        const { archive, cut } = archiveOf(moved, now)
        const report = await importArchive(
          { db, live, thread: transfers },
          { orgId: org.id, userId: user.id },
          [archive],
          { dryRun, maxBytes: Number.MAX_SAFE_INTEGER },
        )
        if (!dryRun) imported(org.id)
        if (cut > 0) {
          report.notes.push(`${cut} descriptions were longer than 20,000 characters and were cut`)
        }
        return {
          status: 200,
          body: {
            ...report,
            source: { ...report.source, kind: moved.source },
            mapped: moved.mapped,
            unmapped: moved.unmapped,
          },
        }
      }
      // An import that stops early (a refused archive) leaves the request as it is rather
      // than destroy it with its connection: the answer naming the problem is sent, and
      // the rest of the body is read and dropped.
      const body = req.iterator({ destroyOnReturn: false })
      let report: Awaited<ReturnType<typeof importArchive>>
      try {
        report = await importArchive(
          { db, live, thread: transfers },
          { orgId: org.id, userId: user.id },
          body,
          {
            dryRun,
            maxBytes: config.importMaxBytes,
          },
        )
      } finally {
        if (!req.complete) void Promise.resolve(body.return?.()).finally(() => req.resume())
      }
      if (!dryRun) imported(org.id)
      return { status: 200, body: report }
    },
  )
}
