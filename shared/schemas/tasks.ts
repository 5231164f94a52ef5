import { z } from 'zod'
import { LIMITS } from '../constants.ts'
import { MAX_BLOCKERS } from '../dependencies.ts'
import { id, position, priority, taskType, text, writeParams } from './common.ts'

const title = text('title', LIMITS.taskTitle.min, LIMITS.taskTitle.max).describe(
  "The card's title.",
)
const description = z
  .string({ error: 'description must be a string' })
  .max(LIMITS.taskDescription.max, {
    error: `description must be at most ${LIMITS.taskDescription.max} characters`,
  })
  .describe('Markdown body.')

/** create_task: appended to the bottom of the column when `position` is omitted. Not idempotent. */
export const create_task = writeParams({
  columnId: id('columnId'),
  title,
  description: description.optional(),
  projectId: id('projectId').optional(),
  position: position.optional(),
  type: taskType.optional(),
  priority: priority.optional(),
})

/**
 * update_task: writes only the fields sent (at least one). An empty string clears
 * description, type or priority; a null priority is refused. Claim locked.
 */
export const update_task = writeParams({
  taskId: id('taskId'),
  title: title.optional(),
  description: description.optional(),
  projectId: z
    .string({
      error: (i) =>
        i.input === null
          ? 'projectId cannot be null: there is no way through the API to unset a project'
          : 'projectId must be a UUID (malformed id)',
    })
    .pipe(id('projectId'))
    .optional()
    .describe('Move the card to this project (it cannot be unset).'),
  type: z
    .union([z.literal(''), taskType], {
      error:
        'type must be one of bug, feature, improvement, chore, question, research, or "" to clear it',
    })
    .optional()
    .describe('The kind of work; "" clears it.'),
  priority: z
    .union([z.literal(''), priority], {
      error: (i) =>
        i.input === null
          ? 'priority cannot be null; send "" to clear it back to untriaged'
          : 'priority must be one of urgent, high, normal, low, or "" to clear it',
    })
    .optional()
    .describe('How urgent; "" clears it (untriaged).'),
})

/** set_task_tags: replaces the whole set; trims, folds case duplicates keeping the first. Claim locked. */
export const set_task_tags = writeParams({
  taskId: id('taskId'),
  tags: z
    .array(z.string({ error: 'tags must be an array of strings' }), {
      error: (i) =>
        i.input === undefined ? 'tags is required' : 'tags must be an array of strings',
    })
    .describe('The whole new set of tags; [] removes them all.'),
})

/**
 * set_task_dependencies: replaces the whole set of cards this card waits for ([] clears
 * it); ids are folded (lower case, duplicates once). Refused with 400 naming blockedBy: the
 * card itself, more than 50, a malformed id, a cycle; 404 for an id that is no card of the
 * organisation (on the board or archived). Idempotent. Claim locked.
 */
export const set_task_dependencies = writeParams({
  taskId: id('taskId'),
  blockedBy: z
    .array(id('blockedBy'), {
      error: (i) =>
        i.input === undefined ? 'blockedBy is required' : 'blockedBy must be an array of card ids',
    })
    .max(MAX_BLOCKERS, { error: `blockedBy holds at most ${MAX_BLOCKERS} cards` })
    .describe('The cards it waits for (the whole set); [] clears it.'),
})

/** move_task: appended to the bottom of the destination when `position` is omitted. Claim locked. */
export const move_task = writeParams({
  taskId: id('taskId'),
  columnId: id('columnId'),
  position: position.optional(),
})

/** archive_task: idempotent; a second call returns the original archivedAt. Claim locked. */
export const archive_task = writeParams({ taskId: id('taskId') })
