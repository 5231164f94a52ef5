import { LIMITS } from '../constants.ts'
import { finite, id, text, writeParams } from './common.ts'

const title = text('title', LIMITS.columnTitle.min, LIMITS.columnTitle.max)

/** create_column: appended at the end when `position` is omitted; organisation-level without projectId. */
export const create_column = writeParams({
  title,
  position: finite('position').optional(),
  projectId: id('projectId').optional(),
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
