import type { Logger } from './http/json.ts'

/** How often each process sweeps; several processes sweeping at once only share the work. */
export const SWEEP_EVERY_MS = 60 * 60 * 1000

/**
 * Deletes rows that are no longer in use (spent OAuth rows, expired Idempotency-Keys) at
 * start and once an hour, one sweep at a time; a failed sweep is logged, never thrown, and
 * tried again at the next turn.
 */
export class Sweeper {
  private readonly what: string
  private readonly log: Logger
  private readonly run: () => Promise<unknown>
  private timer: NodeJS.Timeout | undefined
  private sweeping: Promise<void> = Promise.resolve()
  private stopping = false

  constructor(options: { what: string; log: Logger; sweep: () => Promise<unknown> }) {
    this.what = options.what
    this.log = options.log
    this.run = options.sweep
  }

  start(): void {
    if (this.timer) return
    this.stopping = false
    this.sweep()
    this.timer = setInterval(() => this.sweep(), SWEEP_EVERY_MS)
    this.timer.unref()
  }

  /** Stops the timer and waits for a sweep under way. */
  async stop(): Promise<void> {
    this.stopping = true
    if (this.timer) clearInterval(this.timer)
    this.timer = undefined
    await this.sweeping
  }

  private sweep(): void {
    this.sweeping = this.sweeping.then(async () => {
      if (this.stopping) return
      try {
        await this.run()
      } catch (error) {
        if (!this.stopping) this.log.error(`sweeping ${this.what} failed; trying next hour`, error)
      }
    })
  }
}
