/** Everything about when deliveries happen; tests shorten it, production uses the defaults. */
export interface DeliveryTiming {
  /** The receiver must answer within this (the specification's 8 seconds). */
  timeoutMs: number
  /** Waits before each retry; its length is the number of retries. */
  retryDelaysMs: readonly number[]
  /** Each wait is varied by up to ± this fraction, so failed deliveries do not retry in lockstep. */
  jitter: number
  /** How long a worker's claim on a delivery lasts; a worker that dies loses it after this. */
  leaseMs: number
  /** How often each worker looks for due deliveries it was not told about. */
  pollMs: number
  /** Deliveries in flight at once per worker. */
  concurrency: number
  /** Events in a row whose delivery finally failed that switch an endpoint off. */
  disableAfter: number
  /** Finished deliveries (and their attempt logs) are kept this long. */
  retentionMs: number
}

const MINUTE = 60_000

/**
 * Five retries over about four hours (1 min, 5 min, 30 min, 1 h, 2.5 h: 4 h 6 min in
 * all, ± 10 %), an 8 s reply window, and a lease well beyond the reply window.
 */
export const DEFAULT_TIMING: DeliveryTiming = {
  timeoutMs: 8_000,
  retryDelaysMs: [1 * MINUTE, 5 * MINUTE, 30 * MINUTE, 60 * MINUTE, 150 * MINUTE],
  jitter: 0.1,
  leaseMs: 2 * MINUTE,
  pollMs: 1_000,
  concurrency: 16,
  disableAfter: 5,
  retentionMs: 14 * 24 * 60 * MINUTE,
}

/** The wait before retry number `retry` (1-based), jittered; undefined when none is left. */
export function retryDelay(
  timing: DeliveryTiming,
  retry: number,
  random: () => number = Math.random,
): number | undefined {
  const base = timing.retryDelaysMs[retry - 1]
  if (base === undefined) return undefined
  return Math.round(base * (1 + timing.jitter * (2 * random() - 1)))
}
