import type { IncomingMessage, ServerResponse } from 'node:http'
import type { RouteDoc } from './route-docs.ts'

export type Params = Record<string, string>
export type RouteHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  params: Params,
) => Promise<void>

interface Route {
  method: string
  path: string
  parts: string[]
  handler: RouteHandler
  doc: RouteDoc | undefined
}

/** A registration as the OpenAPI document reads it: method, `:name` path, what it declared. */
export interface RegisteredRoute {
  readonly method: string
  readonly path: string
  readonly doc: RouteDoc | undefined
}

export interface Match {
  handler: RouteHandler
  params: Params
  /** The registered pattern (`/api/app/orgs/:orgId/...`): what logs and metrics name. */
  path: string
}

/** Method + path routing with `:name` segments; knows which methods a path allows (405). */
export class Router {
  private readonly routes: Route[] = []

  /** `doc` describes the route in GET /api/openapi.json; a route without one is not described. */
  on(method: string, path: string, handler: RouteHandler): this
  on(method: string, path: string, doc: RouteDoc, handler: RouteHandler): this
  on(method: string, path: string, ...rest: [RouteHandler] | [RouteDoc, RouteHandler]): this {
    const [doc, handler] = rest.length === 1 ? [undefined, rest[0]] : rest
    this.routes.push({ method, path, parts: path.split('/').filter(Boolean), handler, doc })
    return this
  }

  /** Every registration, in order. */
  registered(): RegisteredRoute[] {
    return this.routes.map(({ method, path, doc }) => ({ method, path, doc }))
  }

  match(method: string, pathname: string): Match | { allowed: string[]; path: string } | undefined {
    const parts = pathname.split('/').filter(Boolean)
    const allowed: string[] = []
    let path = ''
    for (const route of this.routes) {
      const params = matchParts(route.parts, parts)
      if (!params) continue
      if (route.method === method) return { handler: route.handler, params, path: route.path }
      allowed.push(route.method)
      path ||= route.path
    }
    return allowed.length > 0 ? { allowed, path } : undefined
  }
}

function matchParts(pattern: string[], parts: string[]): Params | undefined {
  if (pattern.length !== parts.length) return undefined
  const params: Params = {}
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i] as string
    const v = parts[i] as string
    if (p.startsWith(':')) {
      try {
        params[p.slice(1)] = decodeURIComponent(v)
      } catch {
        return undefined
      }
    } else if (p !== v) return undefined
  }
  return params
}
