import { randomUUID } from 'node:crypto'
import type { Db } from '../../persistence/types.ts'
import { type Clock, systemClock } from '../clock.ts'
import type { Logger } from '../http/json.ts'
import type { Metrics } from '../metrics/metrics.ts'
import { Sender, type SendResult } from './sender.ts'
import { signatureHeaders, validSecrets } from './signature.ts'
import { DEFAULT_TIMING, type DeliveryTiming, retryDelay } from './timing.ts'

/** Seams for tests; production passes none. */
export interface WorkerHooks {
  /**
   * Runs after an attempt was sent and before its outcome is recorded. A rejection leaves
   * the outcome unrecorded, exactly like a process dying at that point: the claim lapses
   * and the delivery is sent again, with the same delivery id.
   */
  afterSend?: (deliveryId: string, attempt: number) => Promise<void>
}

export interface WorkerOptions {
  db: Db
  log: Logger
  allowPrivate: boolean
  clock?: Clock
  timing?: Partial<DeliveryTiming>
  hooks?: WorkerHooks
  metrics?: Metrics | undefined
}

type Claimed = {
  id: string
  webhook_id: string
  event_id: string
  /** When the event was raised, and the X-Request-Id of the request that raised it. */
  event_created_at: Date
  request_id: string | null
  attempts: number
  url: string
  secret: string
  /** The secret the last rotation replaced, while it still signs (else null). */
  previous_secret: string | null
  payload: string
}

/** What became of an attempt: delivered, to be tried again, or the last one failed. */
type Outcome = 'delivered' | 'retry' | 'failed'

/** After a nudge, how long to keep looking for rows whose transaction has not committed yet. */
const EXPECT_MS = 2_000
/** How often finished deliveries past their retention are removed. */
const PRUNE_EVERY_MS = 60 * 60_000

/**
 * Claims due deliveries, sends them outside any transaction, and records each outcome.
 *
 * One runs in every server process; they share the outbox safely: a claim is one
 * statement (`FOR UPDATE SKIP LOCKED`, so two workers never take the same row) that moves
 * the row's `next_attempt_at` to the end of a lease and counts the attempt. Recording is
 * fenced on (worker, attempt number), so a worker whose lease ran out cannot overwrite the
 * outcome of the worker that took the delivery over. Delivery is at least once: a worker
 * that dies after sending and before recording leaves the row to be sent again once the
 * lease passes, under the same delivery id.
 */
export class DeliveryWorker {
  readonly id = randomUUID()
  readonly timing: DeliveryTiming
  private readonly db: Db
  private readonly log: Logger
  private readonly clock: Clock
  private readonly hooks: WorkerHooks
  private readonly metrics: Metrics | undefined
  private readonly sender: Sender
  private readonly inflight = new Set<Promise<void>>()
  /** Delivery ids this process just enqueued (→ deadline): look again soon, not at the next poll. */
  private readonly expected = new Map<string, number>()
  private backoff = 0
  private running = false
  private stopping = false
  private dirty = false
  private saturated = false
  private wakeup: (() => void) | undefined
  private loopDone: Promise<void> = Promise.resolve()
  /** Successes waiting to be recorded together (group commit: one statement per batch). */
  private successes: {
    c: Claimed
    r: SendResult
    startedAt: Date
    resolve: () => void
    reject: (error: unknown) => void
  }[] = []
  private recordingSuccesses = false
  private pruneTimer: NodeJS.Timeout | undefined
  private pruning: Promise<void> = Promise.resolve()

  constructor(options: WorkerOptions) {
    this.db = options.db
    this.log = options.log
    this.clock = options.clock ?? systemClock
    this.timing = { ...DEFAULT_TIMING, ...options.timing }
    this.hooks = options.hooks ?? {}
    this.metrics = options.metrics
    if (this.timing.leaseMs <= this.timing.timeoutMs) {
      throw new Error('the delivery lease must be longer than the reply timeout')
    }
    if (!(this.timing.concurrency >= 1) || !(this.timing.pollMs > 0)) {
      throw new Error('WEBHOOK_CONCURRENCY must be at least 1 and WEBHOOK_POLL_MS above 0')
    }
    this.sender = new Sender({
      allowPrivate: options.allowPrivate,
      timeoutMs: this.timing.timeoutMs,
      maxSockets: this.timing.concurrency,
    })
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.loopDone = this.loop()
    this.prune()
    this.pruneTimer = setInterval(() => this.prune(), PRUNE_EVERY_MS)
    this.pruneTimer.unref()
  }

  /**
   * Looks for due deliveries now. With ids (rows this process's write is about to
   * commit), keeps looking briefly until they show up: the nudge comes from inside the
   * writing transaction, before its commit.
   */
  nudge(deliveryIds: readonly string[] = []): void {
    if (deliveryIds.length > 0) {
      const deadline = performance.now() + EXPECT_MS
      for (const id of deliveryIds) this.expected.set(id, deadline)
      this.backoff = 0
    }
    this.wake()
  }

  /** Stops claiming, lets in-flight deliveries finish (each is bounded by the reply timeout) and records them. */
  async stop(): Promise<void> {
    if (!this.running) return
    this.stopping = true
    this.wake()
    await this.loopDone
    await Promise.allSettled([...this.inflight])
    if (this.pruneTimer) clearInterval(this.pruneTimer)
    await this.pruning
    this.sender.close()
    this.running = false
  }

  private wake(): void {
    this.dirty = true
    const wakeup = this.wakeup
    this.wakeup = undefined
    wakeup?.()
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms)
      function done() {
        clearTimeout(timer)
        resolve()
      }
      this.wakeup = done
    })
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      this.dirty = false
      const free = this.timing.concurrency - this.inflight.size
      this.saturated = free <= 0
      if (free > 0) {
        let claimed: Claimed[]
        try {
          claimed = await this.claim(free)
        } catch (error) {
          if (this.stopping) break
          this.log.error('claiming webhook deliveries failed; retrying', error)
          await this.sleep(this.timing.pollMs)
          continue
        }
        for (const c of claimed) {
          this.expected.delete(c.id)
          const job = this.deliver(c).finally(() => {
            this.inflight.delete(job)
            // Saturated: claim again once half the slots are free, in one batch.
            if (this.saturated && this.inflight.size <= this.timing.concurrency / 2) this.wake()
          })
          this.inflight.add(job)
        }
        // A full batch: more may be due at once.
        if (claimed.length === free) continue
      }
      if (this.dirty || this.stopping) continue
      await this.sleep(this.saturated ? this.timing.pollMs : this.nextWait())
    }
  }

  /** Short, growing waits while this process's just-written rows have not shown up. */
  private nextWait(): number {
    const now = performance.now()
    for (const [id, deadline] of this.expected) if (deadline < now) this.expected.delete(id)
    if (this.expected.size === 0) return this.timing.pollMs
    const wait = Math.min(2 ** this.backoff, 50, this.timing.pollMs)
    this.backoff += 1
    return wait
  }

  private async claim(limit: number): Promise<Claimed[]> {
    const now = this.clock.now()
    return this.db.query<Claimed>(
      `with due as (
         select d.id from webhook_deliveries d
         where d.status = 'pending' and d.next_attempt_at <= $1
           and exists (select 1 from webhooks w where w.id = d.webhook_id and w.enabled)
         order by d.next_attempt_at
         limit $2
         for update skip locked
       ), claimed as (
         update webhook_deliveries d
         set attempts = d.attempts + 1, next_attempt_at = $3, locked_by = $4, last_attempt_at = $1
         from due where d.id = due.id
         returning d.id, d.webhook_id, d.event_id, d.attempts
       )
       select c.id, c.webhook_id, c.event_id, e.created_at as event_created_at, e.request_id,
         c.attempts, w.url, w.secret,
         case when w.previous_secret_expires_at > $1 then w.previous_secret end as previous_secret,
         e.payload
       from claimed c
       join webhooks w on w.id = c.webhook_id
       join webhook_events e on e.id = c.event_id`,
      [new Date(now), limit, new Date(now + this.timing.leaseMs), this.id],
    )
  }

  private async deliver(c: Claimed): Promise<void> {
    const startedAt = new Date(this.clock.now())
    const timestamp = Math.floor(startedAt.getTime() / 1000)
    const result = await this.sender.send(
      c.url,
      c.payload,
      signatureHeaders(validSecrets(c.secret, c.previous_secret), c.id, timestamp, c.payload),
    )
    try {
      await this.hooks.afterSend?.(c.id, c.attempts)
      const outcome = await this.record(c, result, startedAt)
      this.recorded(c, result, outcome)
    } catch (error) {
      this.log.error(
        `recording webhook delivery ${c.id} failed; it will be sent again after its lease`,
        error,
      )
    }
  }

  /**
   * One line per recorded attempt, naming the request that raised the event (its
   * X-Request-Id), and the delivery metrics.
   */
  private recorded(c: Claimed, r: SendResult, outcome: Outcome): void {
    this.metrics?.webhookDeliveries.inc({ outcome })
    if (outcome === 'delivered') {
      const lag = (this.clock.now() - new Date(c.event_created_at).getTime()) / 1000
      this.metrics?.webhookLag.observe(Math.max(0, lag))
    }
    this.log.info(`webhook delivery ${outcome}`, {
      requestId: c.request_id,
      deliveryId: c.id,
      eventId: c.event_id,
      webhookId: c.webhook_id,
      attempt: c.attempts,
      statusCode: r.statusCode,
      durationMs: r.durationMs,
      ...(r.error ? { error: r.error } : {}),
    })
  }

  /**
   * Records an attempt's outcome, fenced on this worker's claim. Success and a scheduled
   * retry are one statement each (the common paths: one round trip); the last failure of
   * an event also counts against the endpoint, and may switch it off, in one transaction.
   */
  private async record(c: Claimed, r: SendResult, startedAt: Date): Promise<Outcome> {
    const now = this.clock.now()
    const at = new Date(now)
    // $1..$3 fence the claim; $4..$8 describe the attempt; $9 is the outcome's time.
    const fence = `id = $1 and locked_by = $2 and attempts = $3 and status = 'pending'`
    const logged = `logged as (
      insert into webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, ok)
      select $1, $3, $4, $5, $6, $7, $8
      where exists (select 1 from webhook_deliveries where id = $1))`
    const params = (time: Date) => [
      c.id,
      this.id,
      c.attempts,
      startedAt,
      r.durationMs,
      r.statusCode,
      r.error,
      r.ok,
      time,
    ]
    if (r.ok) {
      await this.recordSuccess(c, r, startedAt)
      return 'delivered'
    }
    const wait = retryDelay(this.timing, c.attempts)
    if (wait !== undefined) {
      await this.db.query(
        `with retry as (
           update webhook_deliveries
           set next_attempt_at = $9, locked_by = null, last_status_code = $6, last_error = $7
           where ${fence} returning id
         ), ${logged}
         select count(*)::int as n from retry`,
        params(new Date(now + wait)),
      )
      return 'retry'
    }
    await this.db.transaction(async (tx) => {
      const [failed] = await tx.query<{ webhook_id: string }>(
        `with failed as (
           update webhook_deliveries
           set status = 'failed', finished_at = $9, locked_by = null,
               last_status_code = $6, last_error = $7
           where ${fence} returning webhook_id
         ), ${logged}
         select webhook_id from failed`,
        params(at),
      )
      if (!failed) return
      const [hook] = await tx.query<{ consecutive_failures: number; enabled: boolean }>(
        `update webhooks set consecutive_failures = consecutive_failures + 1
         where id = $1 returning consecutive_failures, enabled`,
        [failed.webhook_id],
      )
      if (!hook?.enabled || hook.consecutive_failures < this.timing.disableAfter) return
      const reason = `Switched off at ${at.toISOString()}: ${hook.consecutive_failures} events in a row could not be delivered (each was tried ${c.attempts} times); last error: ${r.error ?? 'unknown'}`
      await tx.query(
        'update webhooks set enabled = false, disabled_at = $2, disabled_reason = $3 where id = $1',
        [failed.webhook_id, at, reason],
      )
      await tx.query(
        `update webhook_deliveries set status = 'cancelled', finished_at = $2, locked_by = null
         where webhook_id = $1 and status = 'pending'`,
        [failed.webhook_id, at],
      )
      this.log.info(`webhook ${failed.webhook_id}: ${reason}`)
    })
    return 'failed'
  }

  /**
   * Queues a success; the first one starts a flush and those arriving meanwhile go in
   * the next, so under load many successes cost one statement and alone one costs no wait.
   */
  private recordSuccess(c: Claimed, r: SendResult, startedAt: Date): Promise<void> {
    return new Promise((resolve, reject) => {
      this.successes.push({ c, r, startedAt, resolve, reject })
      if (!this.recordingSuccesses) void this.flushSuccesses()
    })
  }

  private async flushSuccesses(): Promise<void> {
    this.recordingSuccesses = true
    while (this.successes.length > 0) {
      const batch = this.successes.splice(0, 500)
      try {
        // Fenced per row on this worker's claim; skipping endpoints already at 0 keeps
        // concurrent successes off their row lock.
        await this.db.query(
          `with input as (
             select * from unnest($1::uuid[], $2::int[], $3::timestamptz[], $4::int[], $5::int[])
               as t(id, attempts, started_at, duration_ms, status_code)
           ), done as (
             update webhook_deliveries d
             set status = 'delivered', finished_at = $7, locked_by = null,
                 last_status_code = i.status_code, last_error = null
             from input i
             where d.id = i.id and d.locked_by = $6 and d.attempts = i.attempts
               and d.status = 'pending'
             returning d.webhook_id
           ), logged as (
             insert into webhook_attempts (delivery_id, attempt, started_at, duration_ms, status_code, error, ok)
             select i.id, i.attempts, i.started_at, i.duration_ms, i.status_code, null, true
             from input i
             where exists (select 1 from webhook_deliveries d where d.id = i.id)
           ), reset as (
             update webhooks set consecutive_failures = 0
             where id in (select webhook_id from done) and consecutive_failures <> 0
           )
           select count(*)::int as n from done`,
          [
            batch.map((b) => b.c.id),
            batch.map((b) => b.c.attempts),
            batch.map((b) => b.startedAt.toISOString()),
            batch.map((b) => b.r.durationMs),
            batch.map((b) => b.r.statusCode),
            this.id,
            new Date(this.clock.now()),
          ],
        )
        for (const b of batch) b.resolve()
      } catch (error) {
        for (const b of batch) b.reject(error)
      }
    }
    this.recordingSuccesses = false
  }

  /**
   * The outbox as the metrics show it: deliveries pending, those due now and not taken by
   * a worker (a taken one's next attempt is its lease's end), and how long the oldest due
   * one has waited. One index scan (webhook_deliveries_due).
   */
  async outboxState(): Promise<{ pending: number; due: number; oldestDueSeconds: number }> {
    const now = new Date(this.clock.now())
    const [row] = await this.db.query<{ pending: number; due: number; oldest: Date | null }>(
      `select count(*)::int as pending,
              count(*) filter (where next_attempt_at <= $1)::int as due,
              min(next_attempt_at) as oldest
         from webhook_deliveries where status = 'pending'`,
      [now],
    )
    const oldest = row?.oldest ? new Date(row.oldest).getTime() : undefined
    return {
      pending: row?.pending ?? 0,
      due: row?.due ?? 0,
      oldestDueSeconds:
        oldest !== undefined && oldest <= now.getTime() ? (now.getTime() - oldest) / 1000 : 0,
    }
  }

  /** Removes finished deliveries past retention, and events nobody still needs. */
  private prune(): void {
    this.pruning = this.pruning.then(async () => {
      const cutoff = new Date(this.clock.now() - this.timing.retentionMs)
      try {
        await this.db.query(
          `delete from webhook_deliveries where id in (
             select id from webhook_deliveries
             where status <> 'pending' and finished_at < $1 limit 5000)`,
          [cutoff],
        )
        await this.db.query(
          `delete from webhook_events e where e.id in (
             select e2.id from webhook_events e2
             where e2.created_at < $1
               and not exists (select 1 from webhook_deliveries d where d.event_id = e2.id)
             limit 5000)`,
          [cutoff],
        )
      } catch (error) {
        if (!this.stopping) this.log.error('pruning old webhook deliveries failed', error)
      }
    })
  }
}
