import type { Services } from '../../actions/context.ts'
import {
  type ApiKeyRow,
  authenticateCredentials,
  invalidKeyError,
  type KeyCredentials,
  type KeyLookupRow,
  keyRowOf,
  keysLookupCtes,
} from '../../auth/api-keys.ts'
import { budgetsOf } from '../../rate-limit/budgets.ts'
import type { BucketRow, RateOutcome } from '../../rate-limit/limiter.ts'
import { chargeRequest, enforce } from '../../rate-limit/limiter.ts'

/**
 * Admits one request to the agent endpoint: authenticates its key (401) and charges it
 * against its rate budgets (429), so that only an authenticated request spends a budget
 * and a refused one runs nothing. `action` is undefined for a request that names no valid
 * action: it still spends the key's budget.
 *
 * A request with only the per-key budget (every action but the image ones) is admitted
 * together with the others that asked in the same turn of the event loop: one statement,
 * one round trip, looks up their keys and charges each found key's bucket once per request
 * (in key order, so two such statements never wait on each other in a circle). A fleet's
 * admissions were half of what Postgres executed for it, one statement a request.
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
  const admitted = await admissionsOf(services).admit(credentials)
  if (!admitted) throw invalidKeyError()
  enforce(admitted.outcome, onHeaders)
  return keyRowOf(admitted.row)
}

interface Admitted {
  row: KeyLookupRow
  outcome: RateOutcome
}

interface Asking {
  credentials: KeyCredentials
  resolve(admitted: Admitted | undefined): void
  reject(error: unknown): void
}

/** The requests of one turn of the event loop waiting to be admitted together. */
class Admissions {
  private asking: Asking[] = []
  private readonly services: Services

  constructor(services: Services) {
    this.services = services
  }

  /** The request's key and its charge, or undefined for a key unknown or revoked. */
  admit(credentials: KeyCredentials): Promise<Admitted | undefined> {
    return new Promise((resolve, reject) => {
      this.asking.push({ credentials, resolve, reject })
      if (this.asking.length === 1) setImmediate(() => this.send())
    })
  }

  private send(): void {
    const batch = this.asking
    this.asking = []
    try {
      sendTogether(this.services, batch)
    } catch (error) {
      for (const asking of batch) asking.reject(error)
    }
  }
}

const admissions = new WeakMap<Services, Admissions>()

function admissionsOf(services: Services): Admissions {
  let queue = admissions.get(services)
  if (!queue) {
    queue = new Admissions(services)
    admissions.set(services, queue)
  }
  return queue
}

function sendTogether(services: Services, batch: readonly Asking[]): void {
  const limiter = services.limiter
  if (!limiter)
    throw new Error('only requests charged against a rate limiter are admitted together')
  const charge = limiter.perKeyCharge({
    keyId: 'k.id::text',
    from: '(select * from k order by id, i) k',
    firstParam: 3,
    also: 'k.*',
  })
  services.db.lane
    .query<KeyLookupRow & BucketRow & { i: number }>(
      `with ${keysLookupCtes('(select * from unnest($1::uuid[], $2::text[]) with ordinality as u(key_id, key_hash, i))')}
       ${charge.sql}`,
      [
        batch.map((a) => a.credentials.keyId),
        batch.map((a) => a.credentials.hash),
        ...charge.params,
      ],
    )
    .then(
      (rows) => {
        const byRequest = new Map(rows.map((row) => [Number(row.i), row]))
        for (const [n, asking] of batch.entries()) {
          const row = byRequest.get(n + 1)
          asking.resolve(row ? { row, outcome: charge.outcome(row) } : undefined)
        }
      },
      (error: unknown) => {
        for (const asking of batch) asking.reject(error)
      },
    )
}
