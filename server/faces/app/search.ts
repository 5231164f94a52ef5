import { actions } from '../../../shared/actions.ts'
import { LIMITS } from '../../../shared/constants.ts'
import { run } from '../../actions/perform.ts'
import { parseParams } from '../../actions/validation.ts'
import { answer } from '../../http/route-docs.ts'
import { type AppRouter, queryOf } from './route.ts'

/**
 * The app's search box (issue 32): search_tasks for a person, over the same index
 * (task_texts and comments), as they type.
 */
export function searchRoutes(app: AppRouter): void {
  app.org(
    'GET',
    '/search',
    {
      summary: 'Cards whose title, description or comments hold every word, as search_tasks',
      description:
        'Best match first, the last word a prefix; each hit in the summary form with archivedAt and where it matched (title, description or a comment, with a snippet whose matches are **bold**).',
      access: 'member',
      query: {
        q: { description: 'The words.', schema: { type: 'string' } },
        archived: {
          description: 'true: archived cards too.',
          schema: { type: 'boolean', default: false },
        },
        limit: {
          description: 'Hits per page.',
          schema: {
            type: 'integer',
            minimum: 1,
            maximum: LIMITS.searchPage.max,
            default: LIMITS.searchPage.default,
          },
        },
        cursor: { description: "The previous page's nextCursor.", schema: { type: 'string' } },
      },
      answers: [answer.json(200, 'As search_tasks answers.', actions.search_tasks.output)],
      errors: { 400: 'q holds no word, or archived, limit or cursor is not valid.' },
    },
    async (req, { user, org }) => {
      const query = queryOf(req)
      const archived = query.get('archived')
      const limit = query.get('limit')
      const cursor = query.get('cursor')
      const input = parseParams('search', actions.search_tasks.input, {
        query: query.get('q') ?? '',
        ...(archived !== null
          ? {
              includeArchived: archived === 'true' ? true : archived === 'false' ? false : archived,
            }
          : {}),
        ...(limit !== null ? { limit: /^\d+$/.test(limit) ? Number(limit) : limit } : {}),
        ...(cursor ? { cursor } : {}),
      })
      const result = await run(app.deps, {
        action: 'search_tasks',
        input,
        caller: app.caller({ user, org }),
      })
      return { status: 200, body: result }
    },
  )
}
