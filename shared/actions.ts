import type { z } from 'zod'
import { boardActions } from './actions/board.ts'
import { claimActions } from './actions/claims.ts'
import { mapActions } from './actions/maps.ts'

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

/** What each action returns on success: its output schema's type, so handlers are typed by it. */
export type ActionResults = { [N in ActionName]: z.output<Actions[N]['output']> }

export const actionNames = Object.keys(actions) as ActionName[]

export function isActionName(name: string): name is ActionName {
  return Object.hasOwn(actions, name)
}

/** The actions refused with 409 while someone else holds the card (the table's flag). */
export type ClaimLockedName = {
  [N in ActionName]: Actions[N]['claimLocked'] extends true ? N : never
}[ActionName]
