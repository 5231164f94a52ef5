import { z } from 'zod'

import { LIMITS } from '../constants.ts'
import { cursor, id, int, oneOf, params, required } from './common.ts'

/** whoami: the organisation, the key in use and how much is on the board. Read-only. */
export const whoami = params({})

/**
 * get_board: every column, every non-archived card and the organisation-wide activity.
 * All filters combine; `tags` is computed before the tag filter.
 */
export const get_board = params({
  include: z
    .array(oneOf('include', ['comments', 'attachments']), {
      error: 'include must be an array holding "comments" and/or "attachments"',
    })
    .optional()
    .describe("Add the cards' newest comments and/or attachments."),
  projectId: id('projectId').optional().describe('Only cards of this project.'),
  lastCommentBy: oneOf('lastCommentBy', ['human', 'agent'])
    .optional()
    .describe('Only cards whose newest comment is by a person (human) or agent.'),
  commentsPerCard: int('commentsPerCard', LIMITS.commentsPerCard.min, LIMITS.commentsPerCard.max)
    .optional()
    .describe('With include comments: how many a card.'),
  tag: z.string({ error: 'tag must be a string' }).optional().describe('Only cards with this tag.'),
  priority: z
    .string({ error: 'priority must be one of urgent, high, normal, low, none' })
    .transform((s) => s.toLowerCase())
    .pipe(oneOf('priority', ['urgent', 'high', 'normal', 'low', 'none']))
    .optional()
    .describe('Only cards of this effective priority (none: untriaged).'),
  columnId: id('columnId').optional().describe('Only cards in this column.'),
  blocked: z
    .boolean({ error: 'blocked must be true or false' })
    .optional()
    .describe('Only blocked (true) or unblocked (false) cards.'),
  summary: z
    .boolean({ error: 'summary must be true or false' })
    .optional()
    .describe('A compact form of each card.'),
  limit: int('limit', LIMITS.boardPage.min, LIMITS.boardPage.max)
    .optional()
    .describe('Cards per page; the answer then has nextCursor.'),
  cursor: cursor().optional().describe('The nextCursor of the previous page, same filters.'),
})

/** get_task: one card in full, archived ones too. 404 for a missing or foreign id. */
export const get_task = params({
  taskId: id('taskId'),
  commentsBefore: cursor('commentsBefore')
    .optional()
    .describe('The commentsBefore of an answer: the older comments.'),
})

/** list_columns: columns in board order; with projectId, the project's own plus organisation-level ones. */
export const list_columns = params({
  projectId: id('projectId')
    .optional()
    .describe("That project's columns plus organisation-level ones."),
  cursor: cursor().optional(),
})

/** list_projects: every project of the organisation. */
export const list_projects = params({ cursor: cursor().optional() })

/**
 * search_tasks: full-text search over cards' titles, descriptions and comments (stemmed,
 * the last word a prefix), best match first, in the summary form with where it matched.
 */
export const search_tasks = params({
  query: z
    .string({ error: required('query', 'a string') })
    .trim()
    .min(1, { error: 'query must hold at least one word' })
    .max(LIMITS.searchQuery.max, {
      error: `query must be at most ${LIMITS.searchQuery.max} characters`,
    })
    .describe('Words to find; the last may be the start of a word.'),
  columnId: id('columnId').optional().describe('Only cards in this column.'),
  projectId: id('projectId').optional().describe('Only cards of this project.'),
  tag: z.string({ error: 'tag must be a string' }).optional().describe('Only cards with this tag.'),
  priority: z
    .string({ error: 'priority must be one of urgent, high, normal, low, none' })
    .transform((s) => s.toLowerCase())
    .pipe(oneOf('priority', ['urgent', 'high', 'normal', 'low', 'none']))
    .optional()
    .describe('Only cards of this effective priority (none: untriaged).'),
  includeArchived: z
    .boolean({ error: 'includeArchived must be true or false' })
    .optional()
    .describe('Archived cards too.'),
  limit: int('limit', LIMITS.searchPage.min, LIMITS.searchPage.max)
    .optional()
    .describe(`Hits per page (default ${LIMITS.searchPage.default}).`),
  cursor: cursor().optional(),
})
