import type { z } from 'zod'
import { ApiError } from '../api-error.ts'

function pathOf(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join('')
}

/** A 400 whose message names the parameter and what is wrong with it. */
export function validationError(action: string, error: z.ZodError): ApiError {
  // An unknown parameter is named first: it is the likeliest cause of the other issues.
  const issue = error.issues.find((i) => i.code === 'unrecognized_keys') ?? error.issues[0]
  if (!issue) return new ApiError(400, `Invalid params for ${action}`)
  const where = pathOf(issue.path)
  if (issue.code === 'unrecognized_keys') {
    const names = issue.keys.map((k) => `"${where ? `${where}.` : ''}${k}"`).join(', ')
    return new ApiError(
      400,
      `Unknown parameter${issue.keys.length > 1 ? 's' : ''} ${names} for ${action}; send only the parameters it lists`,
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
  if (!result.success) throw validationError(action, result.error)
  return result.data
}
