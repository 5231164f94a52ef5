import type { IncomingMessage, ServerResponse } from 'node:http'
import { ApiError } from '../errors.ts'
import type { Logger } from './log.ts'
import { preparedText } from './prepared-json.ts'
import { asApiError, UNAVAILABLE_RETRY_SECONDS } from './unavailable.ts'

/** Largest JSON body accepted: a 3 MB image in base64 plus its envelope. */
export const MAX_BODY_BYTES = 4_300_000

export async function readBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer> {
  const declared = Number(req.headers['content-length'] ?? 0)
  if (declared > limit) throw new ApiError(413, `Request body over ${limit} bytes`)
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > limit) throw new ApiError(413, `Request body over ${limit} bytes`)
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks)
}

/** Parses a JSON body; an empty body is `undefined`. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  return parseJson(await readBody(req))
}

/** A request body's JSON (undefined when empty), or 400. */
export function parseJson(body: Buffer): unknown {
  if (body.length === 0) return undefined
  try {
    return JSON.parse(body.toString('utf8'))
  } catch {
    throw new ApiError(400, 'Body is not valid JSON')
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string | string[]> = {},
): void {
  const chunks = preparedText(body)
  const text = chunks ? undefined : JSON.stringify(body)
  const length = chunks ? chunks.reduce((n, c) => n + c.length, 0) : Buffer.byteLength(text ?? '')
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': length,
    'cache-control': 'no-store',
    // A browser must never read an answer as HTML or script, whatever a field contains.
    'x-content-type-options': 'nosniff',
    ...headers,
  })
  if (!chunks) {
    res.end(text)
    return
  }
  res.cork()
  for (const chunk of chunks) res.write(chunk)
  res.end()
}

export function sendEmpty(res: ServerResponse, status = 204, headers: Record<string, string> = {}) {
  res.writeHead(status, headers)
  res.end()
}

export type { Logger } from './log.ts'

/** The body of an ApiError's answer. */
export const errorBody = (error: ApiError) => ({ error: error.message, ...error.extra })

/** Answers an error: an ApiError as `{ error, ...extra }`, anything else as a bare 500. */
export function sendError(res: ServerResponse, error: unknown, log: Logger): void {
  if (res.headersSent) {
    res.destroy()
    return
  }
  const known = asApiError(error)
  if (known) {
    const headers: Record<string, string> = {
      ...(known.status === 503 ? { 'retry-after': String(UNAVAILABLE_RETRY_SECONDS) } : {}),
      ...known.headers,
    }
    sendJson(res, known.status, errorBody(known), headers)
    return
  }
  log.error(error)
  sendJson(res, 500, { error: 'Internal server error' })
}
