import type { Services } from '../../actions/context.ts'
import {
  type ApiKeyRow,
  authenticateCredentials,
  invalidKeyError,
  type KeyCredentials,
  type KeyLookupRow,
  keyLookupCtes,
  keyRowOf,
} from '../../auth/api-keys.ts'
import { budgetsOf } from '../../rate-limit/budgets.ts'
import type { BucketRow } from '../../rate-limit/limiter.ts'
import { chargeRequest, enforce } from '../../rate-limit/limiter.ts'

/**
 * Admits one request to the agent endpoint: authenticates its key (401) and charges it
 * against its rate budgets (429), so that only an authenticated request spends a budget
 * and a refused one runs nothing. `action` is undefined for a request that names no valid
 * action: it still spends the key's budget.
 *
 * A request with only the per-key budget (every action but the image ones) is admitted
 * in one statement, one round trip: the key lookup and the charge of its bucket, which
 * happens only when the lookup found the key.
 */
export async function admit(
  services: Services,
  credentials: KeyCredentials,
  action: string | undefined,
  onHeaders: (headers: Record<string, string>) => void,
): Promise<ApiKeyRow> {
  const { limiter, db } = services
  if (!limiter || budgetsOf(limiter.budgets, action).length > 1) {
    const key = await authenticateCredentials(db, credentials)
    await chargeRequest(limiter, key, action, onHeaders)
    return key
  }
  const charge = limiter.perKeyCharge({ keyId: 'k.id::text', from: 'k', firstParam: 3 })
  const [row] = await db.lane.query<KeyLookupRow & BucketRow>(
    `with ${keyLookupCtes('$1', '$2')}, charge as (${charge.sql})
     select k.*, c.allowed, c.count, c.oldest, c.pivot from k cross join charge c`,
    [credentials.keyId, credentials.hash, ...charge.params],
  )
  if (!row) throw invalidKeyError()
  enforce(charge.outcome(row), onHeaders)
  return keyRowOf(row)
}
