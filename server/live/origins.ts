import { isTransactionOrigin } from '@hocuspocus/server'
import type { AgentIdentity } from '../../shared/labels.ts'

/**
 * Who a server write is made for. Persistence, the change log, claim checks and webhooks
 * read this; nobody guesses from the update bytes.
 */
export type WriteOrigin =
  | {
      type: 'agent'
      orgId: string
      keyId: string
      email: string
      identity: AgentIdentity
    }
  | { type: 'person'; orgId: string; userId: string; email: string }
  | { type: 'server'; orgId: string }

/** A person's (or a program's) sync message, on a connection to this process. */
export interface ConnectionOrigin {
  source: 'connection'
  connection: { context: unknown; sendStateless(payload: string): void }
}

/** A server write, computed by its lane and held from everyone until it commits (lane.ts). */
export interface WriteTransactionOrigin {
  source: 'local'
  skipStoreHooks: true
  context: { write: WriteOrigin }
}

/** The review's own transactions: compensations, stamps and derived values (server/review/). */
export const GUARD_ORIGIN = {
  source: 'local',
  skipStoreHooks: true,
  context: { guard: true },
} as const

/** A reload replaying people's edits not yet stored: reviewed already. */
export const RESTORE_ORIGIN = {
  source: 'local',
  skipStoreHooks: true,
  context: { restore: true },
} as const

/** Another process's change: stored already, so neither stored again nor published. */
export const REDIS_ORIGIN = { source: 'redis' } as const

/**
 * Every origin a transaction on a live document carries: Hocuspocus's three sources, ours
 * inside `local`. Nothing else applies transactions to our documents.
 */
export type TransactionOrigin =
  | ConnectionOrigin
  /** Another process's change, through Redis. */
  | typeof REDIS_ORIGIN
  | WriteTransactionOrigin
  | typeof GUARD_ORIGIN
  | typeof RESTORE_ORIGIN

export function writeTransaction(write: WriteOrigin): WriteTransactionOrigin {
  return { source: 'local', skipStoreHooks: true, context: { write } }
}

export function isConnectionOrigin(origin: unknown): origin is ConnectionOrigin {
  return isTransactionOrigin(origin) && origin.source === 'connection'
}

/** A server write's transaction (its changes are uncommitted until the lane stores them). */
export function isWriteOrigin(origin: unknown): origin is WriteTransactionOrigin {
  return (
    isTransactionOrigin(origin) &&
    origin.source === 'local' &&
    typeof origin.context === 'object' &&
    origin.context !== null &&
    'write' in origin.context
  )
}
