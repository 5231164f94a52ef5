import { z } from 'zod'
import { COLUMN_ROLES, LIMITS, TASK_TYPES } from '../constants.ts'
import { id, int, oneOf, params, text, writeParams } from './common.ts'

const note = text('note', LIMITS.claimNote.min, LIMITS.claimNote.max).describe(
  'What you are doing, shown on the board.',
)

/**
 * claim_task: takes the card's claim for the lease (CLAIM_LEASE_SECONDS). Refused with 409
 * + holder while another actor holds a live claim; a lapsed or released claim is simply
 * taken over. The holder claiming again renews its lease (keeping startedAt and the
 * identity it claimed with). The identity params label the holder on the board.
 */
export const claim_task = writeParams({ taskId: id('taskId'), note: note.optional() })

/**
 * claim_next: claims, atomically, the best card that is on the board, not blocked, under
 * no live claim (anyone's, the caller's too) and matching every filter; `{ task: null,
 * claim: null }` when there is none. Cards in a `done` column are left out unless `role` is
 * done. Best: highest effective priority (urgent … low, then untriaged), then the columns'
 * order, then the card's position. Concurrent calls on any process never hand out a card
 * twice (the claim lock; a card another call is taking is passed over). Not idempotent.
 */
export const claim_next = writeParams({
  columnId: id('columnId').optional().describe('Only cards in this column.'),
  projectId: id('projectId').optional().describe('Only cards of this project.'),
  role: oneOf('role', COLUMN_ROLES)
    .optional()
    .describe("Only cards in columns of this role (done cards only with 'done')."),
  tag: z.string({ error: 'tag must be a string' }).optional().describe('Only cards with this tag.'),
  type: oneOf('type', TASK_TYPES).optional().describe('Only cards of this kind of work.'),
  note: note.optional(),
})

/**
 * heartbeat_task: the holder renews its lease and may replace the note. 409 + holder when
 * someone else holds the card; 409 without holder when the caller holds no live claim
 * (released, taken back, never claimed or lapsed: claim again).
 */
export const heartbeat_task = writeParams({ taskId: id('taskId'), note: note.optional() })

/**
 * release_task: the holder frees the card (the card's claim reads null; the record stays
 * in `activity` and the change feed with status released, releasedAt and isLive false). `released: false`, not an error, when the caller had nothing live to release;
 * 409 + holder when another actor holds the card (for instance after the caller's claim
 * lapsed and someone else claimed it).
 */
export const release_task = writeParams({ taskId: id('taskId') })

/**
 * get_changes: what changed since `since` (inclusive), plus the cursor to send back next
 * time. Read-only. Without `since`: empty sets and a fresh cursor.
 */
export const get_changes = params({
  since: z
    .string({ error: 'since must be a string: an ISO 8601 timestamp such as a returned cursor' })
    .pipe(
      z.iso.datetime({
        offset: true,
        error: 'since must be an ISO 8601 timestamp with a time zone, such as a returned cursor',
      }),
    )
    .optional()
    .describe('The cursor of your last call; none: start watching.'),
  limit: int('limit', 1, LIMITS.changesLimit.max)
    .optional()
    .describe('At most this many per list (default 200).'),
})
