import type { IncomingMessage, ServerResponse } from 'node:http'
import type { z } from 'zod'
import type { Db } from '../../../persistence/types.ts'
import { isUuid } from '../../../shared/ids.ts'
import { type ActionContext, actionContext, type Caller } from '../../actions/context.ts'
import { parseParams } from '../../actions/validation.ts'
import type { OrgMembership, User } from '../../auth/accounts.ts'
import { requireMember, requireUser } from '../../auth/session.ts'
import type { Descriptions } from '../../board/descriptions.ts'
import type { Clock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import { badRequest } from '../../errors.ts'
import { readJson, sendEmpty, sendJson } from '../../http/json.ts'
import type { RouteDoc } from '../../http/route-docs.ts'
import type { Params, RouteHandler, Router } from '../../http/router.ts'
import type { LiveDocs } from '../../live/live-docs.ts'
import type { TransferThreads } from '../../transfer/threads.ts'
import type { Webhooks } from '../../webhooks/webhooks.ts'

/** What the app API's routes work with. */
export interface AppDeps {
  db: Db
  live: LiveDocs
  config: Config
  /** Sign-in throttling, device cookies, leases (tests move it). */
  clock: Clock
  /** Signs the live-sync tokens. */
  syncSecret: string
  /** The delivery worker's clock and reply window (rotation and test pings read them). */
  webhooks: Pick<Webhooks, 'clock' | 'timeoutMs'>
  descriptions: Descriptions
  /** On Postgres, where exports and imports run (transfer/threads.ts); unset, in this thread. */
  transfers?: TransferThreads | undefined
}

/** Bytes the browser saves as a file. */
export interface DownloadFile {
  bytes: Buffer
  mimeType: string
  /** The file's name as people see it (any characters); made safe for the header here. */
  filename: string
}

/** A download written as it is made (its length unknown until the end). */
export interface DownloadStream {
  chunks: AsyncIterable<Buffer>
  /** Told, in order, as each chunk has gone to the connection (its memory may be reused). */
  written?: (() => void) | undefined
  mimeType: string
  filename: string
}

/** What an organisation's route answers: JSON, nothing (204), a download, or a streamed one. */
export interface Reply {
  status: number
  body?: unknown
  file?: DownloadFile
  stream?: DownloadStream
}

/** A member of the path's organisation, as the route's declared access admitted them. */
export interface Member {
  user: User
  org: OrgMembership
  params: Params
}

const MANAGERS = ['owner', 'admin'] as const

/**
 * Registers the app API's routes (`/api/app/...`), one file per resource (faces/app/*.ts).
 * An organisation's routes declare who may call them, and that declaration is the check, so
 * the OpenAPI document and the rule cannot differ.
 */
export class AppRouter {
  readonly deps: AppDeps
  /** For the routes outside `/api/app` (files). */
  readonly router: Router

  constructor(router: Router, deps: AppDeps) {
    this.router = router
    this.deps = deps
  }

  /** A route that handles its own access (`public`, `session`): `path` follows `/api/app`. */
  on(method: string, path: string, doc: RouteDoc, handler: RouteHandler): void {
    this.router.on(method, `/api/app${path}`, doc, handler)
  }

  /**
   * A route of one organisation: `path` follows `/api/app/orgs/:orgId`. Anyone outside it
   * gets 404, a member without the declared role 403.
   */
  org(
    method: string,
    path: string,
    doc: RouteDoc & { access: 'member' | 'owner-admin' },
    handler: (req: IncomingMessage, member: Member) => Promise<Reply>,
  ): void {
    const { db } = this.deps
    this.on(method, `/orgs/:orgId${path}`, doc, async (req, res, params) => {
      const user = await requireUser(db, req)
      const org = await requireMember(
        db,
        params.orgId ?? '',
        user,
        doc.access === 'owner-admin' ? MANAGERS : undefined,
      )
      const out = await handler(req, { user, org, params })
      if (out.stream) await sendStream(res, out.stream)
      else if (out.file) sendDownload(res, out.file)
      else if (out.body === undefined) sendEmpty(res, out.status)
      else sendJson(res, out.status, out.body)
    })
  }

  /** The member as the caller of an action. */
  caller({ user, org }: Pick<Member, 'user' | 'org'>): Caller {
    return { type: 'person', user, org }
  }

  /** The member's context for the action handlers and board writes they share with agents. */
  context(member: Pick<Member, 'user' | 'org'>): ActionContext {
    return actionContext(this.deps, this.caller(member))
  }
}

/** A JSON body parsed with its schema (400 naming the field); no body reads as `{}`. */
export async function bodyOf<S extends z.ZodType>(
  req: IncomingMessage,
  what: string,
  schema: S,
): Promise<z.output<S>> {
  return parseParams(what, schema, (await readJson(req)) ?? {})
}

/** The JSON body as an object to add path ids to; anything else reads as `{}`. */
export async function bodyObject(req: IncomingMessage): Promise<object> {
  const body = (await readJson(req)) ?? {}
  return typeof body === 'object' ? body : {}
}

/** A path id, lower-cased; a malformed one is a 400 naming it, as the agent endpoint answers. */
export function pathId(params: Params, name: string): string {
  const value = params[name] ?? ''
  if (!isUuid(value)) throw badRequest(`${name} must be a UUID (malformed id)`)
  return value.toLowerCase()
}

/** The request's query parameters. */
export function queryOf(req: IncomingMessage): URLSearchParams {
  return new URL(req.url ?? '/', 'http://localhost').searchParams
}

/**
 * `Content-Disposition: attachment` with the name twice: `filename` in plain ASCII (quotes,
 * backslashes, slashes and controls out, anything else non-ASCII as `_`) for every browser,
 * and `filename*` (RFC 6266) with the whole name in UTF-8 for those that read it.
 */
export function attachmentDisposition(filename: string): string {
  const ascii = filename
    .replace(/[\p{Cc}"\\/]/gu, '')
    .replace(/[^\u0020-\u007e]/g, '_')
    .trim()
  const utf8 = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  )
  return `attachment; filename="${ascii || 'download'}"; filename*=UTF-8''${utf8}`
}

/**
 * A streamed download: each chunk written as it comes, waiting while the client reads
 * slower than it is made. A failure after the headers went cuts the connection, so the
 * client sees a truncated download, never a complete-looking one.
 */
async function sendStream(res: ServerResponse, file: DownloadStream): Promise<void> {
  const iterator = file.chunks[Symbol.asyncIterator]()
  // The first chunk before the headers: a failure there is still an error answer.
  const first = await iterator.next()
  res.writeHead(200, {
    'content-type': file.mimeType,
    'content-disposition': attachmentDisposition(file.filename),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  })
  try {
    for (let next = first; !next.done; next = await iterator.next()) {
      if (res.destroyed) throw new Error('the client went away')
      if (!res.write(next.value, file.written)) await once(res, 'drain', res)
    }
    res.end()
  } catch (error) {
    await iterator.return?.(undefined)
    res.destroy(error instanceof Error ? error : new Error(String(error)))
  }
}

/** Resolves at `event`, or when the response closes first. */
function once(emitter: ServerResponse, event: string, res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      emitter.off(event, done)
      res.off('close', done)
      resolve()
    }
    emitter.on(event, done)
    res.on('close', done)
  })
}

function sendDownload(res: ServerResponse, file: DownloadFile): void {
  res.writeHead(200, {
    'content-type': file.mimeType.startsWith('text/')
      ? `${file.mimeType}; charset=utf-8`
      : file.mimeType,
    'content-length': file.bytes.length,
    'content-disposition': attachmentDisposition(file.filename),
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  })
  res.end(file.bytes)
}
