import * as claims from '../schemas/claims.ts'
import { outputs } from '../schemas/outputs.ts'
import { spec } from './spec.ts'

/** Claims and the change feed: claim_task, claim_next, heartbeat_task, release_task, get_changes. */
export const claimActions = {
  claim_task: spec({
    input: claims.claim_task,
    output: outputs.claim_task,
    write: true,
    claimLocked: true,
    destructive: false,
    idempotent: false,
    description:
      'Claim a card before working on it (a real lock: nobody else can change it while your claim is live). heartbeat_task before expiresAt keeps it.',
  }),
  claim_next: spec({
    input: claims.claim_next,
    output: outputs.claim_next,
    write: true,
    claimLocked: false,
    destructive: false,
    idempotent: false,
    description:
      'Claim the best card you may work on: not blocked, not claimed, matching every filter (done cards only with role done); by priority, column order, position. task and claim are null when there is none.',
  }),
  heartbeat_task: spec({
    input: claims.heartbeat_task,
    output: outputs.heartbeat_task,
    write: true,
    claimLocked: true,
    destructive: false,
    idempotent: false,
    description:
      'Keep your claim alive: renews expiresAt, may replace the note. A 409 without holder: your claim lapsed or was taken back; claim_task again.',
  }),
  release_task: spec({
    input: claims.release_task,
    output: outputs.release_task,
    write: true,
    claimLocked: true,
    destructive: true,
    idempotent: true,
    description:
      'Release your claim when done, also when failing; its claim reads status released. released:false (not an error) when you held nothing.',
  }),
  get_changes: spec({
    input: claims.get_changes,
    output: outputs.get_changes,
    write: false,
    claimLocked: false,
    destructive: false,
    idempotent: true,
    description:
      'What changed since `since`: tasks (archived too), columns (with cards a fire re-prioritised), comments, attachments and claims, in the get_board shape. Send the cursor back as since (a change may repeat, never goes missing); truncated:true: call again at once.',
  }),
} as const
