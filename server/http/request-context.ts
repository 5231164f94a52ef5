import { AsyncLocalStorage } from 'node:async_hooks'
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

/**
 * What one HTTP request is, for its log line, its metrics and every log line written on
 * its behalf (the write lane's, a fault's): held in AsyncLocalStorage for the request's
 * whole async chain, so nothing threads it through parameters.
 */
export interface RequestContext {
  /** Echoed as X-Request-Id; stored with the webhook events the request raised. */
  readonly id: string
  readonly method: string
  /** The route's pattern (`/api/app/orgs/:orgId/...`), never the raw path: ids stay out of labels. */
  route: string
  /** Who asked, once authenticated: an API key (agent, MCP) or a person (app API). */
  keyId?: string
  userId?: string
  orgId?: string
  /** The action run (agent endpoint, MCP tool call) and the status it answered. */
  action?: string
  actionStatus?: number
}

const storage = new AsyncLocalStorage<RequestContext>()

/** The request whose async chain this code runs in, if any. */
export function currentRequest(): RequestContext | undefined {
  return storage.getStore()
}

/** Runs `fn` as the request `context` (its async chain sees it through currentRequest). */
export function inRequest<T>(context: RequestContext, fn: () => T): T {
  return storage.run(context, fn)
}

/** Adds what a later step learnt (the caller, the action) to the current request. */
export function noteRequest(
  facts: Partial<Pick<RequestContext, 'keyId' | 'userId' | 'orgId' | 'action' | 'actionStatus'>>,
): void {
  const context = storage.getStore()
  if (context) Object.assign(context, facts)
}

/**
 * A client's own X-Request-Id is kept when it is a plain token (what proxies and tracing
 * tools send: letters, digits, `.` `_` `:` `-`, at most 128), so its logs and ours share
 * one id; anything else (spaces, quotes, newlines that could forge log lines) is replaced.
 */
const SANE_ID = /^[A-Za-z0-9._:-]{1,128}$/

export function requestIdOf(req: IncomingMessage): string {
  const sent = req.headers['x-request-id']
  return typeof sent === 'string' && SANE_ID.test(sent) ? sent : randomUUID()
}
