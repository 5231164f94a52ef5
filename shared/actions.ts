import type { z } from 'zod'
import { type BoardResults, boardActions } from './actions/board.ts'
import { type ClaimResults, claimActions } from './actions/claims.ts'
import { type MapResults, mapActions } from './actions/maps.ts'

export type { ActionSpec } from './actions/spec.ts'

/**
 * THE action table: every action of the agent endpoint, one row each, kept per family in
 * `shared/actions/`. The HTTP endpoint, the MCP tools and the typed client are all
 * derived from it; the server pairs each name with its handler in a typed map that must
 * cover every key, so no second list exists anywhere.
 */
export const actions = { ...boardActions, ...claimActions, ...mapActions }

export type Actions = typeof actions
export type ActionName = keyof Actions
export type ActionInput<N extends ActionName> = z.output<Actions[N]['input']>
export type ActionParams<N extends ActionName> = z.input<Actions[N]['input']>

/** What each action returns on success. */
export type ActionResults = BoardResults & ClaimResults & MapResults

export const actionNames = Object.keys(actions) as ActionName[]

/**
 * Every output schema's output is the result type the handlers are written against:
 * `Misfits` names the actions whose schema would let through something the type does not.
 */
type Misfits = {
  [N in ActionName]: z.output<Actions[N]['output']> extends ActionResults[N] ? never : N
}[ActionName]
const noMisfits: [Misfits] extends [never] ? true : Misfits = true
void noMisfits

export function isActionName(name: string): name is ActionName {
  return Object.hasOwn(actions, name)
}

/** The actions refused with 409 while someone else holds the card (the table's flag). */
export type ClaimLockedName = {
  [N in ActionName]: Actions[N]['claimLocked'] extends true ? N : never
}[ActionName]
