import type { claimActions } from '../../shared/actions/claims.ts'
import { get_changes } from './changes.ts'
import { claim_next } from './claim-next.ts'
import { claim_task, heartbeat_task, release_task } from './claims.ts'
import type { HandlerMap } from './context.ts'

export const claimHandlers: HandlerMap<keyof typeof claimActions> = {
  claim_task,
  claim_next,
  heartbeat_task,
  release_task,
  get_changes,
}
