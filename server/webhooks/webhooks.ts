import type { Db } from '../../persistence/types.ts'
import { type Clock, systemClock } from '../clock.ts'
import type { Config } from '../config.ts'
import type { Logger } from '../http/json.ts'
import type { EventSink } from '../live/events.ts'
import type { Metrics } from '../metrics/metrics.ts'
import { outboxSink } from './outbox.ts'
import { DEFAULT_TIMING, type DeliveryTiming } from './timing.ts'
import { DeliveryWorker, type WorkerHooks } from './worker.ts'

/** What tests may inject; production passes nothing. */
export interface WebhookOptions {
  clock?: Clock
  timing?: Partial<DeliveryTiming>
  hooks?: WorkerHooks
}

/**
 * The webhooks of one server process: the outbox sink the write path calls inside each
 * write's transaction, and the delivery worker that sends what the outbox holds.
 */
export class Webhooks {
  readonly worker: DeliveryWorker
  readonly sink: EventSink
  /** The clock deliveries are signed and timed by (a rotation's window, a ping's duration). */
  readonly clock: Clock
  /** How long a receiver has to answer. */
  readonly timeoutMs: number

  constructor(
    deps: { db: Db; log: Logger; config: Config; metrics?: Metrics | undefined },
    options: WebhookOptions = {},
  ) {
    const clock = options.clock ?? systemClock
    this.clock = clock
    this.timeoutMs = options.timing?.timeoutMs ?? DEFAULT_TIMING.timeoutMs
    this.worker = new DeliveryWorker({
      db: deps.db,
      log: deps.log,
      allowPrivate: deps.config.webhookAllowPrivate,
      clock,
      timing: {
        pollMs: deps.config.webhookPollMs,
        concurrency: deps.config.webhookConcurrency,
        leaseMs: deps.config.webhookLeaseMs,
        ...options.timing,
      },
      ...(options.hooks ? { hooks: options.hooks } : {}),
      metrics: deps.metrics,
    })
    this.sink = outboxSink({ clock, enqueued: (ids) => this.worker.nudge(ids) })
  }

  start(): void {
    this.worker.start()
  }

  /** Waits for in-flight deliveries to be sent and recorded. */
  stop(): Promise<void> {
    return this.worker.stop()
  }
}
