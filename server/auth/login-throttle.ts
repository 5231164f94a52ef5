import type { Db } from '../../persistence/types.ts'
import type { Clock } from '../clock.ts'
import { ApiError } from '../errors.ts'
import { addressKey } from '../http/client-address.ts'
import { type BucketRow, chargeSql } from '../rate-limit/limiter.ts'
import { sha256Hex } from './crypto.ts'

/** A budget of failed sign-ins in a sliding window. */
export interface FailureBudget {
  quota: number
  windowMs: number
}

export interface LoginBudgets {
  /** Failures from one address, whatever the accounts: slows one machine guessing many. */
  perAddress: FailureBudget
  /**
   * Failures on one account, whatever the addresses: slows many machines guessing one
   * password. Short, because anyone can use it up on purpose; a browser that signed in to
   * the account before is exempt (see device-cookie.ts).
   */
  perAccount: FailureBudget
}

export function loginBudgets(config: {
  loginFailuresPerAddress: number
  loginAddressWindowSeconds: number
  loginFailuresPerAccount: number
  loginAccountWindowSeconds: number
}): LoginBudgets {
  const budget = (name: string, quota: number, seconds: number): FailureBudget => {
    if (!Number.isInteger(quota) || quota < 1 || !(seconds > 0)) {
      throw new Error(
        `${name}: at least 1 failure in a window over 0 seconds, got ${quota} per ${seconds} s`,
      )
    }
    return { quota, windowMs: seconds * 1000 }
  }
  return {
    perAddress: budget(
      'LOGIN_FAILURES_PER_ADDRESS',
      config.loginFailuresPerAddress,
      config.loginAddressWindowSeconds,
    ),
    perAccount: budget(
      'LOGIN_FAILURES_PER_ACCOUNT',
      config.loginFailuresPerAccount,
      config.loginAccountWindowSeconds,
    ),
  }
}

/**
 * Hits are stamped in microseconds, each with its own offset within its millisecond, so
 * one attempt's hit can be found again and taken back out of every bucket it was put in.
 * The window is compared against the end of the current millisecond, which keeps its
 * edges exactly where a count in milliseconds puts them.
 */
const SUB = 1000
let sequence = Math.floor(Math.random() * (SUB - 1))
const stamp = (ms: number) => {
  sequence = (sequence + 1) % (SUB - 1)
  return ms * SUB + sequence
}

const CHARGE = chargeSql({ bucket: '$1', now: '$2', quota: '$3', window: '$4', hit: '$5' })
/** The pair's log has no quota of its own: it only records which hits are whose. */
const UNLIMITED = 2 ** 31 - 1

/** Thrown inside the charging transaction to undo the charges of a refused attempt. */
const REFUSED = Symbol('refused')

/** Every this-many attempts, a process drops the sign-in counters nobody has used for a window. */
const SWEEP_EVERY = 64

const wait = (seconds: number) =>
  seconds < 60
    ? `${seconds} second${seconds === 1 ? '' : 's'}`
    : `${Math.ceil(seconds / 60)} minute${Math.ceil(seconds / 60) === 1 ? '' : 's'}`

interface Charge {
  budget: FailureBudget | undefined
  bucket: string
  row: BucketRow
}

/**
 * Throttles failed sign-ins, per address and per account, in Postgres so that every
 * server process counts the same failures. Only failures count: an attempt is charged
 * before its password is checked (so concurrent guesses cannot all slip past one check),
 * a success takes its charge back together with every earlier failure of the same
 * account from the same address, and an attempt cut short by a fault takes back its own.
 * A refused attempt is not charged and its password is never checked.
 */
export class LoginThrottle {
  private readonly db: Db
  private readonly clock: Clock
  private readonly budgets: LoginBudgets
  private attempts = 0

  constructor(db: Db, clock: Clock, budgets: LoginBudgets) {
    this.db = db
    this.clock = clock
    this.budgets = budgets
  }

  /**
   * Runs `verify` (which throws a 401 ApiError for wrong credentials) unless a budget is
   * used up, in which case it throws a 429 with Retry-After. `account` is the normalised
   * e-mail; `knownDevice` exempts the attempt from the per-account budget.
   */
  async attempt<T>(
    who: { account: string; address: string; knownDevice: boolean },
    verify: () => Promise<T>,
  ): Promise<T> {
    const now = Math.floor(this.clock.now())
    const account = sha256Hex(`login:${who.account}`).slice(0, 32)
    const address = addressKey(who.address)
    const buckets = {
      address: `login:address:${address}`,
      account: `login:account:${account}`,
      pair: `login:pair:${account}:${address}`,
    }
    if (++this.attempts % SWEEP_EVERY === 0) await this.sweep(now)

    const hit = stamp(now)
    await this.charge(now, hit, [
      { budget: this.budgets.perAddress, bucket: buckets.address },
      ...(who.knownDevice ? [] : [{ budget: this.budgets.perAccount, bucket: buckets.account }]),
      { budget: undefined, bucket: buckets.pair },
    ])
    let result: T
    try {
      result = await verify()
    } catch (error) {
      // Wrong credentials: the charge stays, as the failure. Anything else was no attempt.
      if (!(error instanceof ApiError && error.status === 401)) {
        await this.takeBack([buckets.address, buckets.account, buckets.pair], [hit]).catch(() => {})
      }
      throw error
    }
    const [pair] = await this.db.query<{ hits: (string | number)[] }>(
      'select hits from rate_limits where bucket = $1',
      [buckets.pair],
    )
    await this.takeBack([buckets.address, buckets.account, buckets.pair], pair?.hits ?? [hit])
    return result
  }

  /** Charges every bucket, or none when one refuses (then throws the 429). */
  private async charge(
    now: number,
    hit: number,
    wanted: { budget: FailureBudget | undefined; bucket: string }[],
  ): Promise<void> {
    const longest = Math.max(this.budgets.perAddress.windowMs, this.budgets.perAccount.windowMs)
    const charges: Charge[] = []
    try {
      // Always in the same order (address, account, pair), so two attempts never deadlock.
      await this.db.transaction(async (tx) => {
        for (const { budget, bucket } of wanted) {
          const [row] = await tx.query<BucketRow>(CHARGE, [
            bucket,
            now * SUB + (SUB - 1),
            budget?.quota ?? UNLIMITED,
            (budget?.windowMs ?? longest) * SUB,
            hit,
          ])
          if (!row) throw new Error(`sign-in bucket ${bucket} returned no row`)
          charges.push({ budget, bucket, row })
        }
        if (charges.some((c) => !c.row.allowed)) throw REFUSED
      })
    } catch (error) {
      if (error !== REFUSED) throw error
      const refusals = charges.filter((c) => !c.row.allowed).map((c) => this.refusal(now, c))
      // The longest wait is the one that tells the truth.
      throw refusals.reduce((a, b) => (b.retryAfter > a.retryAfter ? b : a)).error
    }
  }

  private refusal(now: number, { budget, row }: Charge) {
    const windowMs = budget?.windowMs ?? 0
    const pivot = row.pivot === null ? now : Math.floor(Number(row.pivot) / SUB)
    const retryAfter = Math.max(1, Math.ceil((pivot + windowMs - now) / 1000))
    const limit = `${budget?.quota} in ${wait(Math.round(windowMs / 1000))}`
    const message =
      budget === this.budgets.perAddress
        ? `Too many failed sign-ins from your address (${limit}); try again in ${wait(retryAfter)}`
        : `Too many failed sign-ins to this account (${limit}); try again in ${wait(retryAfter)}, or sign in from a browser that signed in to it before`
    return {
      retryAfter,
      error: new ApiError(429, message, { retryAfter }, { 'retry-after': String(retryAfter) }),
    }
  }

  /**
   * Takes hits back out of buckets, one statement per bucket: each holds one row lock at a
   * time, so this never deadlocks with a charge. A hit left behind by a crash in between
   * only makes the count stricter.
   */
  private async takeBack(buckets: readonly string[], hits: readonly (string | number)[]) {
    const stamps = hits.map(String)
    for (const bucket of buckets) {
      await this.db.query(
        `update rate_limits set hits = array(select h from unnest(hits) as h where h <> all ($2::bigint[]))
          where bucket = $1`,
        [bucket, stamps],
      )
    }
  }

  /** Drops sign-in counters with no hit left in any window: every guessed e-mail makes one. */
  private async sweep(now: number): Promise<void> {
    const longest = Math.max(this.budgets.perAddress.windowMs, this.budgets.perAccount.windowMs)
    await this.db.query(
      `delete from rate_limits where bucket like 'login:%'
          and coalesce(hits[cardinality(hits)], 0) <= $1::bigint`,
      [(now - longest) * SUB + (SUB - 1)],
    )
  }
}
