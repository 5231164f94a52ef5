import type { IncomingMessage, ServerResponse } from 'node:http'

export type Params = Record<string, string>
export type RouteHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  params: Params,
) => Promise<void>

interface Route {
  method: string
  parts: string[]
  handler: RouteHandler
}

export interface Match {
  handler: RouteHandler
  params: Params
}

/** Method + path routing with `:name` segments; knows which methods a path allows (405). */
export class Router {
  private readonly routes: Route[] = []

  on(method: string, path: string, handler: RouteHandler): this {
    this.routes.push({ method, parts: path.split('/').filter(Boolean), handler })
    return this
  }

  match(method: string, pathname: string): Match | { allowed: string[] } | undefined {
    const parts = pathname.split('/').filter(Boolean)
    const allowed: string[] = []
    for (const route of this.routes) {
      const params = matchParts(route.parts, parts)
      if (!params) continue
      if (route.method === method) return { handler: route.handler, params }
      allowed.push(route.method)
    }
    return allowed.length > 0 ? { allowed } : undefined
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
