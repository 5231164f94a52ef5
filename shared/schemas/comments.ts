import { LIMITS } from '../constants.ts'
import { id, text, writeParams } from './common.ts'

const body = text('body', LIMITS.commentBody.min, LIMITS.commentBody.max).describe(
  'The comment, in Markdown.',
)

/** add_comment: works under anyone's claim. Without agentName it counts as a person's comment. */
export const add_comment = writeParams({ taskId: id('taskId'), body })

/** update_comment: only comments written by the calling key (403 otherwise); sets editedAt. */
export const update_comment = writeParams({ commentId: id('commentId'), body })

/** delete_comment: permanent; only comments written by the calling key (403 otherwise). */
export const delete_comment = writeParams({ commentId: id('commentId') })
