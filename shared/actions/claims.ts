/** Claims and the change feed: claim_task, heartbeat_task, release_task, get_changes. */
export const claimActions = {} satisfies Record<string, never>

export type ClaimResults = Record<never, never>
