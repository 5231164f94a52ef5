import { isUuid } from '../../../shared/ids.ts'
import { badRequest } from '../../errors.ts'
import type { Params } from '../../http/router.ts'

/** A path id, lower-cased; a malformed one is a 400 naming it, as the agent endpoint answers. */
export function pathId(params: Params, name: string): string {
  const value = params[name] ?? ''
  if (!isUuid(value)) throw badRequest(`${name} must be a UUID (malformed id)`)
  return value.toLowerCase()
}
