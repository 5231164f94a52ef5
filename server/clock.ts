/** The time source of leases, rate budgets, throttles and webhook deliveries; tests inject one to move time. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/**
 * Waits for `p` at most `ms`: past that, answers what `late` returns, or fails with what it
 * throws. `p` still runs; its outcome is ignored.
 */
export function within<T, L>(p: Promise<T>, ms: number, late: () => L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<L>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late())
      } catch (error) {
        reject(error)
      }
    }, ms)
  })
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer))
}
