import { z } from 'zod'
import { parseDocName } from '../../../shared/doc-names.ts'
import { badRequest, notFound } from '../../errors.ts'
import { answer } from '../../http/route-docs.ts'
import { BASE_KEPT_DAYS, endedGeneration } from '../../live/generations.ts'
import { type AppRouter, queryOf } from './route.ts'

const ended = z.strictObject({
  document: z.string(),
  generation: z.number().int(),
  stateVector: z.string(),
  endedAt: z.iso.datetime(),
  base: z.record(z.string(), z.unknown()).nullable(),
})

/**
 * What a replica needs to carry its unsent edits across a re-base (docs/design.md,
 * "Re-basing a document"; shared/rebase.ts): the ended generation's final state vector
 * and its final state as JSON, for a document of the caller's organisation.
 */
export function generationRoutes(app: AppRouter): void {
  const { db } = app.deps

  app.org(
    'GET',
    '/documents/generations/:generation',
    {
      summary: 'An ended generation of a live document: its final state vector and state',
      description: `A replica refused with the close reason "re-based" holds this generation: it compares its own copy with \`base\` (an item its state vector does not cover is its own unsent edit) and makes each edit again, by key, on the new generation. \`base\` is null ${BASE_KEPT_DAYS} days after the generation ended.`,
      access: 'member',
      query: {
        document: {
          description: 'The live document name (Contract 3), of this organisation.',
          schema: { type: 'string' },
        },
      },
      answers: [answer.json(200, 'The ended generation; stateVector in base64.', ended)],
      errors: {
        400: 'document is not a live document name of this organisation, or generation is not a whole number.',
        404: 'The document has no such ended generation.',
      },
    },
    async (req, { org, params }) => {
      const document = queryOf(req).get('document') ?? ''
      const ref = parseDocName(document)
      if (!ref || ref.orgId !== org.id) {
        throw badRequest('document must be a live document name of this organisation')
      }
      const generation = Number(params.generation)
      if (!Number.isInteger(generation) || generation < 0) {
        throw badRequest('generation must be a whole number')
      }
      const found = await endedGeneration(db, document, generation)
      if (!found) throw notFound(`${document} has no ended generation ${generation}`)
      return {
        status: 200,
        body: {
          document,
          generation,
          stateVector: Buffer.from(found.stateVector).toString('base64'),
          endedAt: found.endedAt.toISOString(),
          base: found.base ?? null,
        },
      }
    },
  )
}
