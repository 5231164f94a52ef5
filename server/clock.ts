/** The time source of leases, rate budgets, throttles and webhook deliveries; tests inject one to move time. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }
