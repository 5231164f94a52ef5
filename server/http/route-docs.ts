import type { z } from 'zod'

/**
 * What a route says about itself when it is registered, so `GET /api/openapi.json` is built
 * from the registrations and cannot describe a route that is not there, or miss one that
 * is. Request bodies are the zod schemas the handlers parse with (the same objects), so the
 * document cannot disagree with validation either.
 */

/**
 * Who may call a route:
 * - `public`: anyone, no session needed;
 * - `session`: a signed-in person (the session cookie);
 * - `member`: a member of the path's organisation; anyone else gets 404 (its existence is
 *   not revealed);
 * - `owner-admin`: an owner or admin of the path's organisation; a member gets 403;
 * - `signed-link`: anyone holding a link the service signed (`expires` and `sig`).
 */
export type Access = 'public' | 'session' | 'member' | 'owner-admin' | 'signed-link'

/** JSON Schema written by hand, for what a handler checks without a zod schema. */
export type JsonSchema = Record<string, unknown>

/** A query parameter: the zod schema of the handler's input that takes it, or JSON Schema. */
export interface QueryParam {
  description: string
  schema: z.ZodType | JsonSchema
  required?: boolean
}

/** A success answer, keyed on `type`. */
export type Answer =
  /** JSON; without `schema` an object whose shape `description` gives in words. */
  | { type: 'json'; status: 200 | 201; description: string; schema?: z.ZodType }
  | { type: 'empty'; status: 204 | 304; description: string }
  /** Stored bytes, with the type proved at upload. */
  | { type: 'file'; status: 200; description: string }

export const answer = {
  json: (status: 200 | 201, description: string, schema?: z.ZodType): Answer => ({
    type: 'json',
    status,
    description,
    ...(schema ? { schema } : {}),
  }),
  noContent: (description: string): Answer => ({ type: 'empty', status: 204, description }),
  notModified: (): Answer => ({
    type: 'empty',
    status: 304,
    description: 'If-None-Match matched the ETag: the copy the client holds is current.',
  }),
  file: (description: string): Answer => ({ type: 'file', status: 200, description }),
}

/** Failure statuses a route may name beyond those its access, input and transport imply. */
export type RouteError = 400 | 401 | 403 | 404 | 409 | 410 | 413 | 429

export interface RouteDoc {
  /** One line: what the route does. */
  summary: string
  /** More, where the summary cannot say it: rules, side effects, idempotence. */
  description?: string
  access: Access
  /** The zod schema the handler parses its JSON body with. */
  body?: z.ZodType
  query?: Readonly<Record<string, QueryParam>>
  answers: readonly [Answer, ...Answer[]]
  /** Refused with 409 + `holder` while an agent holds the card (a claim lock). */
  claimLocked?: boolean
  errors?: Readonly<Partial<Record<RouteError, string>>>
}
