import type { claimActions } from '../../shared/actions/claims.ts'
import type { HandlerMap } from '../agent/handlers.ts'

export const claimHandlers: HandlerMap<keyof typeof claimActions> = {}
