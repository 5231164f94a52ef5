import { LIMITS } from '../constants.ts'
import { id, position, text, writeParams } from './common.ts'

const title = text('title', LIMITS.columnTitle.min, LIMITS.columnTitle.max).describe(
  "The column's name.",
)

/** create_column: appended at the end when `position` is omitted; organisation-level without projectId. */
export const create_column = writeParams({
  title,
  position: position.optional(),
  projectId: id('projectId').optional().describe('Make it a column of this project only.'),
})

/** rename_column: cards and positions untouched. */
export const rename_column = writeParams({ columnId: id('columnId'), title })

/**
 * delete_column: a column holding cards (archived ones count) needs destinationColumnId,
 * which receives them at its bottom in order. 409 while any of its cards is actively worked.
 */
export const delete_column = writeParams({
  columnId: id('columnId'),
  destinationColumnId: id('destinationColumnId').optional(),
})
