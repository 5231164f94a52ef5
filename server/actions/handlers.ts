import type { ActionName } from '../../shared/actions.ts'
import { boardHandlers } from './board-handlers.ts'
import { claimHandlers } from './claim-handlers.ts'
import type { HandlerMap } from './context.ts'
import { mapHandlers } from './map-handlers.ts'

/** One handler per action of `shared/actions.ts`; the type makes a missing one a compile error. */
export const handlers: HandlerMap<ActionName> = {
  ...boardHandlers,
  ...claimHandlers,
  ...mapHandlers,
}
