import type { IncomingMessage, ServerResponse } from 'node:http'
import { type Metrics, methodLabel } from '../metrics/metrics.ts'
import type { ServiceLogger } from './log.ts'
import { inRequest, type RequestContext, requestIdOf } from './request-context.ts'

/** The route of a path no route matched (a 404, or a file of the web app). */
export const UNMATCHED = '(none)'
export const STATIC = '(static)'

/** The status of a request whose client went away before its answer was sent (nginx's). */
const CLIENT_CLOSED = 499

/**
 * Serves one request as a request of its own: an id (the client's X-Request-Id when sane)
 * echoed in X-Request-Id on whatever answer is sent, a context its whole async chain sees
 * (every log line names it), and once the answer is sent, its log line and its metrics.
 * `serve` sets the context's route once it knows it.
 */
export function serveRequest(
  req: IncomingMessage,
  res: ServerResponse,
  deps: { log: ServiceLogger; metrics: Metrics },
  serve: (context: RequestContext) => Promise<void>,
): Promise<void> {
  const started = performance.now()
  const context: RequestContext = {
    id: requestIdOf(req),
    method: methodLabel(req.method),
    route: UNMATCHED,
  }
  res.setHeader('x-request-id', context.id)
  res.once('close', () => finished(context, res, deps, performance.now() - started))
  return inRequest(context, () => serve(context))
}

function finished(
  context: RequestContext,
  res: ServerResponse,
  { log, metrics }: { log: ServiceLogger; metrics: Metrics },
  ms: number,
): void {
  const status = res.writableFinished ? res.statusCode : CLIENT_CLOSED
  const seconds = ms / 1000
  const { route, method } = context
  metrics.httpRequests.inc({ route, method, status })
  metrics.httpDuration.observe({ route, method }, seconds)
  if (context.action) {
    const face = route === '/mcp' ? 'mcp' : 'agent'
    const action = context.action
    metrics.actions.inc({ action, face, status: context.actionStatus ?? status })
    metrics.actionDuration.observe({ action, face }, seconds)
  }
  if (!log.enabled('info')) return
  // The pattern, never the raw path or query: paths carry invite tokens and signed links.
  log.info('request', {
    requestId: context.id,
    method,
    route,
    status,
    durationMs: Math.round(ms * 100) / 100,
    ...(context.action ? { action: context.action } : {}),
    ...(context.actionStatus !== undefined && context.actionStatus !== status
      ? { actionStatus: context.actionStatus }
      : {}),
    ...(context.keyId ? { keyId: context.keyId } : {}),
    ...(context.userId ? { userId: context.userId } : {}),
    ...(context.orgId ? { orgId: context.orgId } : {}),
  })
}
