import { z } from 'zod'
import { LIMITS } from '../constants.ts'
import { id, int, oneOf, params } from './common.ts'

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
    .describe('Add the newest comments and/or attachments of the cards shown.'),
  projectId: id('projectId').optional().describe('Only cards of this project.'),
  lastCommentBy: oneOf('lastCommentBy', ['human', 'agent'])
    .optional()
    .describe('Only cards whose newest comment is by a person (human) or an agent.'),
  commentsPerCard: int('commentsPerCard', LIMITS.commentsPerCard.min, LIMITS.commentsPerCard.max)
    .optional()
    .describe('With include comments: how many per card.'),
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
})

/** get_task: one card in full, archived ones too. 404 for a missing or foreign id. */
export const get_task = params({ taskId: id('taskId') })

/** list_columns: columns in board order; with projectId, the project's own plus organisation-level ones. */
export const list_columns = params({
  projectId: id('projectId')
    .optional()
    .describe("That project's columns plus organisation-level ones."),
})

/** list_projects: every project of the organisation. */
export const list_projects = params({})
