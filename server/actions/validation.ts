import type { z } from 'zod'
import { ApiError } from '../errors.ts'
import { didYouMean } from './suggest.ts'

function pathOf(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('')
}

/** The parameter names an object schema takes (its shape), through wrappers; [] if none. */
function keysOf(schema: z.ZodType | undefined): string[] {
  let s: unknown = schema
  for (let depth = 0; depth < 5 && s; depth++) {
    const shape = (s as { shape?: Record<string, unknown> }).shape
    if (shape && typeof shape === 'object') return Object.keys(shape)
    const def = (s as { _zod?: { def?: { innerType?: unknown; in?: unknown } } })._zod?.def
    s = def?.innerType ?? def?.in
  }
  return []
}

const IMAGE_URL =
  'images are sent as bytes in imageBase64 (plain base64), never as URLs: read the image and send its bytes'

/**
 * A 400 whose message names the parameter and what is wrong with it. An unknown
 * parameter is named first, being the likeliest cause of the other issues, with the
 * nearest the action takes and, at the top level, the list of what it takes (`schema`).
 */
export function validationError(action: string, error: z.ZodError, schema?: z.ZodType): ApiError {
  const issue = error.issues.find((i) => i.code === 'unrecognized_keys') ?? error.issues[0]
  if (!issue) return new ApiError(400, `Invalid params for ${action}`)
  const where = pathOf(issue.path)
  if (issue.code === 'unrecognized_keys') {
    const takes = where ? [] : keysOf(schema)
    if (takes.includes('imageBase64') && issue.keys.includes('url')) {
      return new ApiError(400, `url is not a parameter of ${action}: ${IMAGE_URL}`)
    }
    const names = issue.keys.map((k) => `"${where ? `${where}.` : ''}${k}"`).join(', ')
    const hint = issue.keys.length === 1 ? didYouMean(issue.keys[0] as string, takes, '"') : ''
    return new ApiError(
      400,
      `Unknown parameter${issue.keys.length > 1 ? 's' : ''} ${names} for ${action}${hint}; ` +
        (takes.length > 0 ? `it takes ${takes.join(', ')}` : 'send only the parameters it lists'),
    )
  }
  const head = where && !issue.message.startsWith(where.split('[')[0] ?? where) ? `${where}: ` : ''
  return new ApiError(400, `${head}${issue.message}`)
}

/** Parses with the action's schema, or throws the 400. */
export function parseParams<S extends z.ZodType>(
  action: string,
  schema: S,
  params: unknown,
): z.output<S> {
  const result = schema.safeParse(params)
  if (!result.success) throw validationError(action, result.error, schema)
  return result.data
}
