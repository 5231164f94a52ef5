import type { Db, Queryable } from '../../persistence/types.ts'
import type { Clock } from '../clock.ts'
import { ApiError } from '../errors.ts'
import { type Budget, budgetsOf, RATE_WINDOW_MS, type RateBudgets } from './budgets.ts'

/** Where one budget stands after a request. */
export interface BudgetState {
  budget: Budget
  /** Requests still allowed in the current window. */
  remaining: number
  /** Seconds until the oldest counted request leaves the window (a unit comes back). */
  resetSeconds: number
  exceeded: boolean
  /** When exceeded: seconds until this request would be allowed. */
  retryAfterSeconds: number
}

export interface RateOutcome {
  allowed: boolean
  states: BudgetState[]
}

interface BucketResult {
  allowed: boolean
  /** Requests in the window after this one (this one included when allowed). */
  count: number
  oldest: number | null
  /** The counted request that must leave the window before one more fits. */
  pivot: number | null
}

/**
 * One bucket's sliding log in rate_limits, read, trimmed to the window and (when there is
 * room) appended to in a single upsert: the sign-in and sign-up throttles' small logs. The
 * row lock makes concurrent requests on any connection or process take turns, so the count
 * is exact. The arguments are SQL expressions (usually placeholders). With `hit`, that value
 * is appended instead of `now` (a caller that must tell its hits apart stamps each one
 * uniquely).
 */
export function chargeSql(a: {
  bucket: string
  now: string
  quota: string
  window: string
  hit?: string
}): string {
  const hit = a.hit ?? a.now
  const kept = `array(select h from unnest(r.hits) as h where h > ${a.now}::bigint - ${a.window}::bigint order by h)`
  const fits = `cardinality(${kept}) < ${a.quota}::int`
  const row = `${a.bucket}, array[${hit}::bigint], true`
  return `insert into rate_limits as r (bucket, hits, allowed)
    values (${row})
    on conflict (bucket) do update set
      allowed = ${fits},
      hits = ${kept} || case when ${fits} then array[${hit}::bigint] else array[]::bigint[] end
    returning allowed, cardinality(hits) as count, hits[1] as oldest,
              hits[greatest(1, cardinality(hits) - ${a.quota}::int + 1)] as pivot`
}

/**
 * The agent budgets' charge: the same sliding log, kept a row per second (migration 024,
 * `charge_rate`), so a request costs the same whatever the key's quota: the single array
 * above is rewritten whole at each request, 17 ms with 12,000 requests in it.
 */
const CHARGE = 'select allowed, count, oldest, pivot from charge_rate($1, $2, $3, $4)'

/** A bucket's row as the charge upsert returns it. */
export type BucketRow = {
  allowed: boolean
  count: number
  oldest: number | null
  pivot: number | null
}

function bucketResult(row: BucketRow): BucketResult {
  return {
    allowed: row.allowed,
    count: Number(row.count),
    oldest: row.oldest === null ? null : Number(row.oldest),
    pivot: row.pivot === null ? null : Number(row.pivot),
  }
}

async function chargeBucket(
  q: Queryable,
  bucket: string,
  now: number,
  quota: number,
): Promise<BucketResult> {
  const [row] = await q.query<BucketRow>(CHARGE, [bucket, now, quota, RATE_WINDOW_MS])
  if (!row) throw new Error(`rate bucket ${bucket} returned no row`)
  return bucketResult(row)
}

/**
 * Drops the seconds no charge came back to trim (a key gone quiet keeps its last minute of
 * rows until then): every one is out of any window at `now`. Returns how many went.
 */
export async function sweepRateSeconds(db: Queryable, now: number): Promise<number> {
  const [row] = await db.query<{ n: number }>(
    `with gone as (delete from rate_seconds where second < ($1::bigint - $2::bigint) / 1000 returning 1)
     select count(*)::int as n from gone`,
    [Math.floor(now), RATE_WINDOW_MS],
  )
  return row?.n ?? 0
}

/** Thrown inside the two-budget transaction to undo a request that one budget refused. */
const REFUSED = Symbol('refused')

const seconds = (ms: number) => Math.max(0, Math.ceil(ms / 1000))

/**
 * The rate budgets, kept in Postgres so every server process shares them. A request
 * refused by any budget counts against none: it is not served.
 */
export class RateLimiter {
  readonly budgets: RateBudgets
  private readonly db: Db
  private readonly clock: Clock

  constructor(db: Db, clock: Clock, budgets: RateBudgets) {
    this.db = db
    this.clock = clock
    this.budgets = budgets
  }

  /** Counts one request of this key for `action` (undefined: an unparseable request). */
  async charge(
    key: { id: string; orgId: string },
    action: string | undefined,
  ): Promise<RateOutcome> {
    const now = Math.floor(this.clock.now())
    const budgets = budgetsOf(this.budgets, action)
    const bucketOf = (b: Budget) =>
      b.scope === 'key' ? `key:${key.id}` : `org:${key.orgId}:${action ?? ''}`
    let results: BucketResult[] = []
    let undone = false
    if (budgets.length === 1) {
      const only = budgets[0] as Budget
      results = [await chargeBucket(this.db.lane, bucketOf(only), now, only.quota)]
    } else {
      // Both counters move together or not at all; always the key's first, so two requests
      // lock buckets in the same order.
      try {
        await this.db.transaction(async (tx) => {
          for (const b of budgets) results.push(await chargeBucket(tx, bucketOf(b), now, b.quota))
          if (results.some((r) => !r.allowed)) throw REFUSED
        })
      } catch (error) {
        if (error !== REFUSED) throw error
        undone = true
      }
    }
    return outcomeOf(budgets, results, now, undone)
  }

  /**
   * The per-key charge for a statement that authenticates the key itself: the query to
   * embed (it charges `'key:' || <keyId>` for each row of `from`), the parameters it
   * expects after the caller's own, and how to read its returned row. Single-budget
   * requests only (`budgetsOf(...).length === 1`): two budgets need a transaction. `also`:
   * columns of `from` the query returns too. Rows of `from` are charged in its order.
   */
  perKeyCharge(a: { keyId: string; from: string; firstParam: number; also?: string }) {
    const now = Math.floor(this.clock.now())
    const p = (i: number) => `$${a.firstParam + i}`
    const budget = this.budgets.perKey
    return {
      sql: `select ${a.also ? `${a.also}, ` : ''}c.allowed, c.count, c.oldest, c.pivot from ${a.from}
        cross join lateral charge_rate('key:' || ${a.keyId}, ${p(0)}::bigint, ${p(1)}::int, ${p(2)}::bigint) c`,
      params: [now, budget.quota, RATE_WINDOW_MS],
      outcome: (row: BucketRow) => outcomeOf([budget], [bucketResult(row)], now, false),
    }
  }
}

/** Where each budget stands after its bucket's upsert (`undone`: the request was refused and rolled back). */
function outcomeOf(
  budgets: readonly Budget[],
  results: readonly BucketResult[],
  now: number,
  undone: boolean,
): RateOutcome {
  const states = budgets.map((budget, i) => {
    const r = results[i] as BucketResult
    const count = undone && r.allowed ? r.count - 1 : r.count
    return {
      budget,
      remaining: Math.max(0, budget.quota - count),
      resetSeconds: count > 0 && r.oldest !== null ? seconds(r.oldest + RATE_WINDOW_MS - now) : 0,
      exceeded: !r.allowed,
      retryAfterSeconds:
        !r.allowed && r.pivot !== null ? Math.max(1, seconds(r.pivot + RATE_WINDOW_MS - now)) : 0,
    }
  })
  return { allowed: states.every((s) => !s.exceeded), states }
}

const WINDOW_SECONDS = RATE_WINDOW_MS / 1000

/** `RateLimit-Policy` for these budgets (draft-ietf-httpapi-ratelimit-headers). */
export function policyHeader(budgets: readonly Budget[]): string {
  return budgets.map((b) => `"${b.name}";q=${b.quota};w=${WINDOW_SECONDS}`).join(', ')
}

/** The response headers of an outcome: policy, current state, and Retry-After on a refusal. */
export function rateLimitHeaders(outcome: RateOutcome): Record<string, string> {
  const headers: Record<string, string> = {
    'RateLimit-Policy': policyHeader(outcome.states.map((s) => s.budget)),
    RateLimit: outcome.states
      .map((s) => `"${s.budget.name}";r=${s.remaining};t=${s.resetSeconds}`)
      .join(', '),
  }
  if (!outcome.allowed) {
    headers['Retry-After'] = String(Math.max(...outcome.states.map((s) => s.retryAfterSeconds)))
  }
  return headers
}

/** The 429 of a refused request: the message names every budget that is used up. */
export function rateLimitedError(outcome: RateOutcome): ApiError {
  const exceeded = outcome.states.filter((s) => s.exceeded)
  const wait = Math.max(...exceeded.map((s) => s.retryAfterSeconds))
  return new ApiError(
    429,
    `Rate limit exceeded: ${exceeded.map((s) => s.budget.describe).join(' and ')} ${exceeded.length > 1 ? 'are' : 'is'} used up. Wait ${wait} s before calling again, and slow down.`,
  )
}

/**
 * Charges one request of an authenticated key against its budgets: hands the rate-limit
 * headers to `onHeaders` (the HTTP transport sets them; others may ignore them) and
 * throws the 429 when a budget is used up. Every transport calls this before running an
 * action. Without a limiter nothing is counted.
 */
export async function chargeRequest(
  limiter: RateLimiter | undefined,
  key: { id: string; orgId: string },
  action: string | undefined,
  onHeaders?: (headers: Record<string, string>) => void,
): Promise<void> {
  if (!limiter) return
  enforce(await limiter.charge(key, action), onHeaders)
}

/** Hands an outcome's headers to `onHeaders` and throws the 429 if it was refused. */
export function enforce(
  outcome: RateOutcome,
  onHeaders?: (headers: Record<string, string>) => void,
): void {
  onHeaders?.(rateLimitHeaders(outcome))
  if (!outcome.allowed) throw rateLimitedError(outcome)
}
