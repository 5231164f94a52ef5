import type { Db } from '../../persistence/types.ts'
import type { Clock } from '../clock.ts'
import { ApiError } from '../errors.ts'
import { addressKey } from '../http/client-address.ts'
import { type BucketRow, chargeSql } from './limiter.ts'

/** A budget of requests per client address in a sliding window (sign-ups, client registrations). */
export interface AddressBudget {
  /** The buckets' prefix in rate_limits. */
  name: string
  quota: number
  windowMs: number
  /** What is counted, for the 429's message: "sign-ups". */
  what: string
}

const CHARGE = chargeSql({ bucket: '$1', now: '$2', quota: '$3', window: '$4' })

/** Every this-many charges, a process drops the buckets nobody has used for a window. */
const SWEEP_EVERY = 64

const wait = (seconds: number) =>
  seconds < 60
    ? `${seconds} second${seconds === 1 ? '' : 's'}`
    : `${Math.ceil(seconds / 60)} minute${Math.ceil(seconds / 60) === 1 ? '' : 's'}`

/**
 * Counts requests per client address (an IPv6 /64 as one) in Postgres, so every server
 * process counts the same ones, as the sign-in throttle does: each attempt is counted
 * before anything is done for it (so concurrent attempts cannot all slip past one check),
 * and one over the budget is refused with 429 and Retry-After, uncounted.
 */
export class AddressLimit {
  private readonly db: Db
  private readonly clock: Clock
  readonly budget: AddressBudget
  private charges = 0

  constructor(db: Db, clock: Clock, budget: AddressBudget) {
    if (!Number.isInteger(budget.quota) || budget.quota < 1 || !(budget.windowMs > 0)) {
      throw new Error(`${budget.name}: at least 1 in a window over 0 ms`)
    }
    this.db = db
    this.clock = clock
    this.budget = budget
  }

  /** Counts one request from `address`, or throws the 429 when its budget is used up. */
  async charge(address: string): Promise<void> {
    const now = Math.floor(this.clock.now())
    const { name, quota, windowMs, what } = this.budget
    if (++this.charges % SWEEP_EVERY === 0) await this.sweep(now)
    const [row] = await this.db.query<BucketRow>(CHARGE, [
      `${name}:${addressKey(address)}`,
      now,
      quota,
      windowMs,
    ])
    if (!row) throw new Error(`${name} bucket returned no row`)
    if (row.allowed) return
    const pivot = row.pivot === null ? now : Number(row.pivot)
    const retryAfter = Math.max(1, Math.ceil((pivot + windowMs - now) / 1000))
    throw new ApiError(
      429,
      `Too many ${what} from your address (${quota} in ${wait(Math.round(windowMs / 1000))}); try again in ${wait(retryAfter)}`,
      { retryAfter },
      { 'retry-after': String(retryAfter) },
    )
  }

  /** Drops this budget's buckets with no hit left in the window. */
  private async sweep(now: number): Promise<void> {
    await this.db.query(
      `delete from rate_limits where bucket like $1
          and coalesce(hits[cardinality(hits)], 0) <= $2::bigint`,
      [`${this.budget.name}:%`, now - this.budget.windowMs],
    )
  }
}
