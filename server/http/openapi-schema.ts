import { z } from 'zod'
import type { JsonSchema } from './route-docs.ts'

/** Building blocks of GET /api/openapi.json shared by its agent and app parts. */

/** A zod schema as JSON Schema 2020-12 (OpenAPI 3.1's dialect), without its `$schema`. */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, {
    io,
    target: 'draft-2020-12',
  }) as JsonSchema
  return rest
}

export const ref = (schema: string) => ({ $ref: `#/components/schemas/${schema}` })

/** An error answer: `{ error }` (the `Error` component), or `{ error, holder }` (`Conflict`). */
export const errorResponse = (description: string, schema: 'Error' | 'Conflict' = 'Error') => ({
  description,
  content: { 'application/json': { schema: ref(schema) } },
})
