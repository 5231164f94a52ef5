import type { ActionInput, ActionName, ActionResults } from '../../shared/actions.ts'
import { boardHandlers } from './board-handlers.ts'
import { gated } from './claim-gate.ts'
import { claimHandlers } from './claim-handlers.ts'
import type { ActionContext } from './context.ts'
import { mapHandlers } from './map-handlers.ts'

export type Handler<N extends ActionName> = (
  ctx: ActionContext,
  input: ActionInput<N>,
) => Promise<ActionResults[N]>

/** Handlers of one family of actions, keyed exactly like that family's table. */
export type HandlerMap<Names extends ActionName> = { [N in Names]: Handler<N> }

/** One handler per action of `shared/actions.ts`; the type makes a missing one a compile error. */
export const handlers: HandlerMap<ActionName> = {
  ...boardHandlers,
  ...claimHandlers,
  ...mapHandlers,
}

/**
 * Runs one action on validated input: the agent endpoint, MCP and the app's routes that
 * reuse an action all come here, so the claim gate applies to every caller.
 */
export function perform<N extends ActionName>(
  ctx: ActionContext,
  action: N,
  input: ActionInput<N>,
): Promise<ActionResults[N]> {
  const handler = handlers[action] as Handler<N>
  return handler(gated(ctx, action, input), input)
}
