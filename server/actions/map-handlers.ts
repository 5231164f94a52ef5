import type { mapActions } from '../../shared/actions/maps.ts'
import type { HandlerMap } from '../agent/handlers.ts'

export const mapHandlers: HandlerMap<keyof typeof mapActions> = {}
