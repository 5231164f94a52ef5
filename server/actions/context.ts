import type { Db } from '../../persistence/types.ts'
import { boardDocName } from '../../shared/board-doc.ts'
import type { AgentIdentity } from '../../shared/labels.ts'
import type { ApiKeyRow } from '../auth/api-keys.ts'
import { followingBlockers } from '../board/blockers.ts'
import { BoardView } from '../board/board-view.ts'
import type { Actor } from '../claims/locks.ts'
import { type Clock, systemClock } from '../clock.ts'
import type { Config } from '../config.ts'
import type { LiveDocs, WriteScope } from '../live/live-docs.ts'
import type { WriteOrigin } from '../live/origins.ts'
import type { RateLimiter } from '../rate-limit/limiter.ts'

/** What an action handler works with. Handlers never see the request or the socket. */
export interface ActionContext {
  readonly db: Db
  readonly live: LiveDocs
  readonly config: Config
  readonly key: ApiKeyRow
  readonly identity: AgentIdentity
  readonly actor: Actor
  readonly origin: WriteOrigin
  readonly clock: Clock
  /** Reads the board document once it holds only committed state (see lane.ts). */
  readBoard<T>(fn: (view: BoardView) => T): Promise<T>
  /**
   * One write with the board as its document (lane.ts), opening the documents named too;
   * the cards whose `blocked` it moved are recorded with it (board/blockers.ts).
   */
  writeBoard<T>(fn: (scope: WriteScope) => Promise<T>, opens?: readonly string[]): Promise<T>
}

export interface Services {
  db: Db
  live: LiveDocs
  config: Config
  /** Defaults to the system clock. */
  clock?: Clock
  /** The shared rate budgets; every action is charged against them when set. */
  limiter?: RateLimiter
}

export function actionContext(
  services: Services,
  key: ApiKeyRow,
  identity: AgentIdentity,
): ActionContext {
  const docName = boardDocName(key.orgId)
  const origin: WriteOrigin = {
    type: 'agent',
    orgId: key.orgId,
    keyId: key.id,
    email: key.robotEmail,
    identity,
  }
  const clock = services.clock ?? systemClock
  return {
    ...services,
    key,
    identity,
    actor: { keyId: key.id, identity, clock },
    origin,
    clock,
    readBoard: (fn) => services.live.read(docName, (doc) => fn(new BoardView(doc, clock.now()))),
    writeBoard: (fn, opens) => services.live.write(docName, origin, followingBlockers(fn), opens),
  }
}
