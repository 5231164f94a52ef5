import { z } from 'zod'
import { LIMITS } from '../constants.ts'
import { id, int, params, text, writeParams } from './common.ts'

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
    .describe('The cursor of your previous call; leave out to start watching.'),
  limit: int('limit', 1, LIMITS.changesLimit.max)
    .optional()
    .describe('At most this many per list (default 200).'),
})
