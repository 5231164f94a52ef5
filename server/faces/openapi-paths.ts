import { z } from 'zod'
import { SESSION_COOKIE } from '../auth/session.ts'
import { errorResponse, jsonSchema } from '../http/openapi-schema.ts'
import type { Access, Answer, JsonSchema, QueryParam, RouteDoc } from '../http/route-docs.ts'
import type { RegisteredRoute } from '../http/router.ts'

/**
 * The app API and the file routes in GET /api/openapi.json: one operation per route that
 * declared itself at registration (server/http/route-docs.ts), under its OpenAPI path
 * (`:name` → `{name}`), tagged `app` (under /api/app/) or `files`. The errors each
 * operation lists follow from what it declared (its access, body, query, claim lock) and
 * from what the service does to every request of its path (the app API's cross-site rule,
 * 503 while the database is away), plus the failures it names itself.
 */

const APP_PREFIX = '/api/app/'
const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

/** `components.securitySchemes.session`: the cookie, and the rule the app API holds writes to. */
export const sessionScheme = {
  type: 'apiKey',
  in: 'cookie',
  name: SESSION_COOKIE,
  description:
    'The session cookie POST /api/app/signup and POST /api/app/login set (HttpOnly, SameSite=Lax). ' +
    'Cross-site protection on every POST, PUT, PATCH and DELETE under /api/app/, signed in or not: ' +
    'refused with 403 when the browser marks it Sec-Fetch-Site: cross-site or same-site, or sends an ' +
    "Origin other than the service's own (PUBLIC_URL's origin when set, else the request's host); a " +
    'body that is not Content-Type: application/json is a 415. Scripts send neither header and keep working.',
}

const SESSION = [{ session: [] }]

const ACCESS: Record<Access, { security: object[]; says: string }> = {
  public: { security: [], says: 'Anyone may call it; no session needed.' },
  session: { security: SESSION, says: 'A signed-in person (the session cookie).' },
  member: {
    security: SESSION,
    says: 'A member of the organisation (the session cookie); anyone else gets 404, so its existence is not revealed.',
  },
  'owner-admin': {
    security: SESSION,
    says: 'An owner or admin of the organisation (the session cookie); a member gets 403, anyone else 404.',
  },
  'signed-link': {
    security: [],
    says: 'Anyone holding a link the service signed (expires, sig): get_task and GET /api/app/orgs/{orgId}/attachments/{attachmentId}/link make them.',
  },
}

/** What each path parameter names; a route with a parameter missing here fails at startup. */
const PATH_PARAMS: Record<string, string> = {
  orgId: 'The organisation.',
  userId: 'The member (their user id).',
  keyId: 'The API key.',
  grantId: 'The connected app (its grant).',
  token: 'The invite token, from the invite link.',
  taskId: 'The card.',
  columnId: 'The column.',
  commentId: 'The comment.',
  mapId: 'The map.',
  nodeId: 'The node.',
  attachmentId: 'The screenshot.',
  webhookId: 'The webhook.',
  deliveryId: 'The delivery.',
  fileId: 'The screenshot file.',
  name: 'The image file: <fileId>.<extension>.',
  filename: "The screenshot's file name.",
  generation: 'An ended generation of the document (0 for its first).',
}

const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}')

const paramsOf = (path: string) =>
  path
    .split('/')
    .filter((s) => s.startsWith(':'))
    .map((s) => s.slice(1))

const words = (segment: string) =>
  segment
    .split('-')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')

/**
 * `DELETE /api/app/orgs/:orgId/tasks/:taskId/project` → `deleteTasksProject`. A route that
 * reads one of a list another route reads (`GET .../archived-tasks/:taskId` beside
 * `GET .../archived-tasks`) says which: `getArchivedTasksByTaskId`.
 */
function operationId(method: string, path: string, taken: ReadonlySet<string>): string {
  const parts = path.split('/').filter(Boolean)
  const named = parts.filter(
    (s, i) =>
      !s.startsWith(':') &&
      !(i === 0 && s === 'api') &&
      !(i === 1 && s === 'app') &&
      !(s === 'orgs' && parts[i + 1] === ':orgId'),
  )
  const id = method.toLowerCase() + named.map(words).join('')
  const last = parts.at(-1)
  if (!taken.has(id) || !last?.startsWith(':')) return id
  return `${id}By${words(last.slice(1))}`
}

function pathParameter(path: string, name: string): JsonSchema {
  const description = PATH_PARAMS[name]
  if (!description) throw new Error(`${path}: say what :${name} names in PATH_PARAMS`)
  return {
    name,
    in: 'path',
    required: true,
    description,
    schema: name.endsWith('Id') ? { type: 'string', format: 'uuid' } : { type: 'string' },
  }
}

function queryParameter(name: string, param: QueryParam): JsonSchema {
  return {
    name,
    in: 'query',
    required: param.required ?? false,
    description: param.description,
    schema: param.schema instanceof z.ZodType ? jsonSchema(param.schema, 'input') : param.schema,
  }
}

function success(a: Answer): JsonSchema {
  switch (a.type) {
    case 'json':
      return {
        description: a.description,
        content: {
          'application/json': {
            schema: a.schema ? jsonSchema(a.schema, 'output') : { type: 'object' },
          },
        },
      }
    case 'empty':
      return { description: a.description }
    case 'file':
      return {
        description: a.description,
        headers: {
          ETag: { schema: { type: 'string' } },
          'Cache-Control': { schema: { type: 'string' } },
        },
        content: { 'image/*': {} },
      }
    default:
      throw new Error(`unknown answer ${JSON.stringify(a satisfies never)}`)
  }
}

const RETRY_AFTER = { 'Retry-After': { schema: { type: 'integer' } } }

/** The failures an operation may answer, from its declaration and its path. */
function failures(method: string, path: string, doc: RouteDoc): Record<string, JsonSchema> {
  const signedIn = doc.access === 'member' || doc.access === 'owner-admin'
  const appWrite = path.startsWith(APP_PREFIX) && UNSAFE_METHODS.has(method)
  const lines = new Map<number, string[]>()
  const add = (status: number, line: string | false | undefined) => {
    if (line) lines.set(status, [...(lines.get(status) ?? []), line])
  }

  // A body, or a query parameter, parsed with a zod schema: a 400 naming the field.
  const parsed =
    doc.body || Object.values(doc.query ?? {}).some((q) => q.schema instanceof z.ZodType)
  add(400, parsed && 'Bad input: the message names the field and what is wrong with it.')
  add(401, (signedIn || doc.access === 'session') && 'Not signed in (no valid session cookie).')
  add(403, doc.access === 'owner-admin' && 'Your role is member; this needs owner or admin.')
  add(403, doc.access === 'signed-link' && 'The link has expired or is not valid.')
  add(403, appWrite && 'A cross-site request (see the session scheme).')
  add(404, signedIn && 'Not a member of this organisation (its existence is not revealed).')
  add(409, doc.claimLocked && 'Refused by a claim: an agent holds the card (holder).')
  add(413, doc.body && 'The body is larger than the endpoint takes.')
  add(415, appWrite && 'A body that is not Content-Type: application/json.')
  add(503, 'The database is not answering; try again after Retry-After seconds.')
  for (const [status, line] of Object.entries(doc.errors ?? {})) add(Number(status), line)

  const out: Record<string, JsonSchema> = {}
  for (const [status, text] of lines) {
    const described = errorResponse(
      text.join(' '),
      status === 409 && doc.claimLocked ? 'Conflict' : 'Error',
    )
    out[status] =
      status === 429 || status === 503 ? { ...described, headers: RETRY_AFTER } : described
  }
  return out
}

function operation(method: string, path: string, doc: RouteDoc): JsonSchema {
  const parameters = [
    ...paramsOf(path).map((name) => pathParameter(path, name)),
    ...Object.entries(doc.query ?? {}).map(([name, p]) => queryParameter(name, p)),
  ]
  const responses: Record<string, JsonSchema> = {}
  for (const a of doc.answers) responses[String(a.status)] = success(a)
  return {
    tags: [path.startsWith(APP_PREFIX) ? 'app' : 'files'],
    summary: doc.summary,
    description: [doc.description, ACCESS[doc.access].says].filter(Boolean).join('\n\n'),
    'x-access': doc.access,
    security: ACCESS[doc.access].security,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(doc.body
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: jsonSchema(doc.body, 'input') } },
          },
        }
      : {}),
    ...(doc.claimLocked ? { 'x-claim-locked': true } : {}),
    responses: { ...responses, ...failures(method, path, doc) },
  }
}

/** The `paths` of every route that declared itself, in registration order. */
export function routePaths(routes: readonly RegisteredRoute[]): Record<string, JsonSchema> {
  const paths: Record<string, Record<string, JsonSchema>> = {}
  const ids = new Set<string>()
  for (const { method, path, doc } of routes) {
    if (!doc) continue
    const id = operationId(method, path, ids)
    if (ids.has(id)) throw new Error(`two routes make the operationId ${id}`)
    ids.add(id)
    const item = paths[openApiPath(path)] ?? {}
    item[method.toLowerCase()] = { operationId: id, ...operation(method, path, doc) }
    paths[openApiPath(path)] = item
  }
  return paths
}
