import type { Db } from '../../persistence/types.ts'
import type { ActionInput, ActionName, ActionResults } from '../../shared/actions.ts'
import { boardDocName } from '../../shared/board-doc.ts'
import type { AgentIdentity } from '../../shared/labels.ts'
import type { OrgMembership, User } from '../auth/accounts.ts'
import type { ApiKeyRow } from '../auth/api-keys.ts'
import { followingBlockers } from '../board/blockers.ts'
import { BoardView } from '../board/board-view.ts'
import type { Descriptions } from '../board/descriptions.ts'
import { textOps } from '../board/texts.ts'
import type { Actor } from '../claims/locks.ts'
import { type Clock, systemClock } from '../clock.ts'
import type { Config } from '../config.ts'
import type { LiveDocs } from '../live/live-docs.ts'
import type { WriteOrigin } from '../live/origins.ts'
import type { WriteScope } from '../live/write-scope.ts'
import type { RateLimiter } from '../rate-limit/limiter.ts'
import type { AnswerBudget } from './answer-budget.ts'

/** What actions run on: storage, the live documents, settings, time and the rate budgets. */
export interface Services {
  db: Db
  live: LiveDocs
  config: Config
  /** Defaults to the system clock. */
  clock?: Clock | undefined
  /** The shared rate budgets; agents' requests are charged against them when set. */
  limiter?: RateLimiter | undefined
  /** Cards' descriptions, for presenting cards (board/descriptions.ts). */
  descriptions: Descriptions
}

/** Who an action runs for: an agent on an organisation API key, or a person in the app. */
export type Caller =
  | { type: 'agent'; key: ApiKeyRow; identity: AgentIdentity }
  | { type: 'person'; user: User; org: OrgMembership }

/**
 * Stores an action's answer with each of its writes (Idempotency-Key): called as a write's
 * callback returns, inside its transaction; returns what to do once the write committed.
 */
export type AnswerRecorder = (scope: WriteScope, value: unknown) => () => void

/** What a write of the action does around its callback (perform.ts). */
export interface WriteSteps {
  /** The claim gate of a claim-locked action, first inside every board write's transaction. */
  gate?: ((scope: WriteScope, ctx: ActionContext) => Promise<void>) | undefined
  answer?: AnswerRecorder | undefined
  /** How long the answer may be (MCP, Answer-Tokens): reads answer a page that fits. */
  budget?: AnswerBudget | undefined
}

/** What an action handler works with. Handlers never see the request or the socket. */
export interface ActionContext {
  readonly db: Db
  /** Reads and notices; a handler writes through `writeBoard` and `write`, never around them. */
  readonly live: Pick<LiveDocs, 'read' | 'mapsChanged' | 'forgetDocument' | 'pendingArchived'>
  readonly config: Config
  readonly clock: Clock
  readonly orgId: string
  readonly caller: Caller
  /** The author e-mail of what the caller writes: the key's robot account, or the person. */
  readonly email: string
  /** The identity params the agent sent ({} for a person). */
  readonly identity: AgentIdentity
  /** Who the claim locks compare with: a person never holds a claim. */
  readonly actor: Actor
  readonly origin: WriteOrigin
  /** Cards' descriptions: up to date before every read and write of the board here. */
  readonly descriptions: Descriptions
  /** How long the answer may be, when the caller set a budget (answer-budget.ts). */
  readonly budget: AnswerBudget | undefined
  /**
   * Reads the board document once it holds only committed state (live/lane.ts), its cards'
   * descriptions up to date first; a read that presents no description says
   * `{ descriptions: false }` and waits for none (the first read of an organisation's
   * descriptions is every card's: 20 MB for 10,000 cards of 2,000 characters).
   */
  readBoard<T>(fn: (view: BoardView) => T, options?: { descriptions: false }): Promise<T>
  /**
   * One write with the board as its document, opening the documents named too. The cards
   * whose `blocked` it moved are recorded with it (board/blockers.ts), and a claim-locked
   * action passes the claim gate first.
   */
  writeBoard<T>(fn: (scope: WriteScope) => Promise<T>, opens?: readonly string[]): Promise<T>
  /** One write with another document of the organisation (a map's) as its document. */
  write<T>(docName: string, fn: (scope: WriteScope) => Promise<T>): Promise<T>
}

export type Handler<N extends ActionName> = (
  ctx: ActionContext,
  input: ActionInput<N>,
) => Promise<ActionResults[N]>

/** Handlers of one family of actions, keyed exactly like that family's table. */
export type HandlerMap<Names extends ActionName> = { [N in Names]: Handler<N> }

/** The context of one caller; `steps` are the action's own (perform.ts), none outside an action. */
export function actionContext(
  services: Services,
  caller: Caller,
  steps: WriteSteps = {},
): ActionContext {
  const clock = services.clock ?? systemClock
  const { live } = services
  const who =
    caller.type === 'agent'
      ? {
          orgId: caller.key.orgId,
          email: caller.key.robotEmail,
          identity: caller.identity,
          actorId: caller.key.id,
        }
      : { orgId: caller.org.id, email: caller.user.email, identity: {}, actorId: caller.user.id }
  const origin: WriteOrigin =
    caller.type === 'agent'
      ? {
          type: 'agent',
          orgId: who.orgId,
          keyId: caller.key.id,
          email: who.email,
          identity: caller.identity,
        }
      : { type: 'person', orgId: who.orgId, userId: caller.user.id, email: who.email }
  const boardName = boardDocName(who.orgId)
  /**
   * The organisation's descriptions, read before the board presents cards. A board not in
   * memory loads meanwhile: both wait mostly on Postgres (a 10,000-card board's cold summary
   * read them one after the other).
   */
  const freshDescriptions = () => {
    const fresh = services.descriptions.fresh(who.orgId)
    live.loadAhead(boardName)
    return fresh
  }
  /** The write's callback with the action's steps around it. */
  const write = async <T>(
    docName: string,
    fn: (scope: WriteScope) => Promise<T>,
    opens?: readonly string[],
  ): Promise<T> => {
    const { gate, answer } = steps
    if (docName === boardName) await freshDescriptions()
    let committed: (() => void) | undefined
    const run = async (scope: WriteScope) => {
      if (gate && docName === boardName) await gate(scope, ctx)
      const value = await fn(scope)
      if (docName === boardName)
        for (const op of textOps(scope.doc, scope.changedIds('task'))) scope.row(op)
      committed = answer?.(scope, value)
      return value
    }
    const value = await live.write(
      docName,
      origin,
      docName === boardName ? followingBlockers(run) : run,
      opens,
    )
    committed?.()
    return value
  }
  const ctx: ActionContext = {
    db: services.db,
    live,
    config: services.config,
    clock,
    orgId: who.orgId,
    caller,
    email: who.email,
    identity: who.identity,
    actor: { keyId: who.actorId, identity: who.identity, clock },
    origin,
    descriptions: services.descriptions,
    budget: steps.budget,
    readBoard: async (fn, options) => {
      if (options?.descriptions !== false) await freshDescriptions()
      return live.read(boardName, (doc) => fn(new BoardView(doc, clock.now())))
    },
    writeBoard: (fn, opens) => write(boardName, fn, opens),
    write: (docName, fn) => write(docName, fn),
  }
  return ctx
}
