import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

/**
 * The service's Prometheus series (docs/operations.md lists each with its labels). Every
 * label value comes from a closed set (action names, route patterns, document kinds,
 * outcomes, status codes, SQLSTATE codes), never from an id or a raw path, so the number of
 * series is bounded whatever clients send. One instance per service (tests start many in
 * one process); the process's own series (memory, event loop) live in one registry per
 * process, added to each scrape.
 */

/** Seconds, from a millisecond's tenth to ten seconds: requests, actions, commits. */
const LATENCY = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
/** Short waits: a pooled connection, a Redis round trip. */
const WAIT = [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5]
/** Writes per commit statement (group commit). */
const BATCH = [1, 2, 4, 8, 16, 32, 64, 128, 256]
/** From an event to its delivery: instant, one retry (~30 s), up to the last (~4 h). */
const DELIVERY_LAG = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 14400]

/** What the scrape reads from the running service (gauges of what it holds now). */
export interface MetricsSources {
  /** Documents in memory, per kind: how many, and their stored bytes (loaded plus updates since). */
  documents(): ReadonlyMap<string, { count: number; bytes: number }>
  /** The write lanes: work waiting at their gates, and writes waiting for their commit. */
  lanes(): { waiting: number; uncommitted: number; peoplePending: number }
  /** Open live-sync WebSockets. */
  sockets(): number
  /** Whether the database answers now. */
  databaseAvailable(): boolean
  /** The webhook outbox (one query): undefined when it could not be read. */
  outbox(): Promise<{ pending: number; due: number; oldestDueSeconds: number } | undefined>
}

export class Metrics {
  readonly registry = new Registry()
  private sources: MetricsSources | undefined

  private readonly r = [this.registry]

  readonly httpRequests = new Counter({
    name: 'corkboard_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status',
    labelNames: ['route', 'method', 'status'] as const,
    registers: this.r,
  })
  readonly httpDuration = new Histogram({
    name: 'corkboard_http_request_duration_seconds',
    help: 'Time from a request arriving to its answer sent, by route pattern and method',
    labelNames: ['route', 'method'] as const,
    buckets: LATENCY,
    registers: this.r,
  })
  readonly actions = new Counter({
    name: 'corkboard_actions_total',
    help: 'Actions run through the agent endpoint or MCP, by action, face and status',
    labelNames: ['action', 'face', 'status'] as const,
    registers: this.r,
  })
  readonly actionDuration = new Histogram({
    name: 'corkboard_action_duration_seconds',
    help: 'Time to answer an action (the whole request), by action and face',
    labelNames: ['action', 'face'] as const,
    buckets: LATENCY,
    registers: this.r,
  })
  readonly laneBatchSize = new Histogram({
    name: 'corkboard_lane_batch_size',
    help: 'Writes stored by one commit statement (group commit)',
    buckets: BATCH,
    registers: this.r,
  })
  readonly laneCommit = new Histogram({
    name: 'corkboard_lane_commit_seconds',
    help: 'Time from a commit statement sent to its transaction committed (or failed)',
    labelNames: ['outcome'] as const,
    buckets: LATENCY,
    registers: this.r,
  })
  readonly laneRecoveries = new Counter({
    name: 'corkboard_lane_recoveries_total',
    help: 'Failed commits after which documents were evicted and reloaded from storage',
    registers: this.r,
  })
  readonly peopleReviewed = new Counter({
    name: 'corkboard_people_edits_reviewed_total',
    help: "People's edits (live-sync transactions) reviewed, by document kind",
    labelNames: ['kind'] as const,
    registers: this.r,
  })
  readonly peopleReverted = new Counter({
    name: 'corkboard_people_edits_reverted_total',
    help: "People's edits of which something was reverted, by document kind",
    labelNames: ['kind'] as const,
    registers: this.r,
  })
  readonly redisPublish = new Histogram({
    name: 'corkboard_redis_publish_seconds',
    help: 'Time for Redis to acknowledge a live-document publish (sharing with other processes)',
    buckets: WAIT,
    registers: this.r,
  })
  readonly agentForwarded = new Counter({
    name: 'corkboard_agent_forwarded_total',
    help: 'Agent calls passed on to the process serving their organisation (with Redis), by outcome',
    labelNames: ['outcome'] as const,
    registers: this.r,
  })
  readonly webhookDeliveries = new Counter({
    name: 'corkboard_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome (delivered, retry, failed)',
    labelNames: ['outcome'] as const,
    registers: this.r,
  })
  readonly webhookLag = new Histogram({
    name: 'corkboard_webhook_delivery_lag_seconds',
    help: 'Time from a webhook event raised to its delivery acknowledged by the receiver',
    buckets: DELIVERY_LAG,
    registers: this.r,
  })
  readonly dbPoolWait = new Histogram({
    name: 'corkboard_db_pool_wait_seconds',
    help: 'Time a transaction waited for a database connection',
    buckets: WAIT,
    registers: this.r,
  })
  readonly dbErrors = new Counter({
    name: 'corkboard_db_statement_errors_total',
    help: 'Database statements that failed, by SQLSTATE (or "connection")',
    labelNames: ['code'] as const,
    registers: this.r,
  })

  constructor() {
    const sampled = <L extends string>(
      name: string,
      help: string,
      labelNames: readonly L[],
      read: (gauge: Gauge<L>) => void | Promise<void>,
    ) =>
      new Gauge<L>({
        name,
        help,
        labelNames,
        registers: this.r,
        async collect() {
          await read(this)
        },
      })
    sampled('corkboard_documents_loaded', 'Live documents in memory, by kind', ['kind'], (g) => {
      g.reset()
      for (const [kind, d] of this.sources?.documents() ?? []) g.set({ kind }, d.count)
    })
    sampled(
      'corkboard_document_bytes',
      'Stored size of the live documents in memory (rows loaded plus updates since), by kind',
      ['kind'],
      (g) => {
        g.reset()
        for (const [kind, d] of this.sources?.documents() ?? []) g.set({ kind }, d.bytes)
      },
    )
    sampled('corkboard_sync_sockets_open', 'Open live-sync WebSockets', [], (g) => {
      g.set(this.sources?.sockets() ?? 0)
    })
    sampled(
      'corkboard_lane_queue_depth',
      'Writes, reads and people’s messages waiting at the write lanes’ gates',
      [],
      (g) => {
        g.set(this.sources?.lanes().waiting ?? 0)
      },
    )
    sampled(
      'corkboard_lane_uncommitted_writes',
      'Writes computed and waiting for their commit',
      [],
      (g) => {
        g.set(this.sources?.lanes().uncommitted ?? 0)
      },
    )
    sampled(
      'corkboard_people_edits_pending',
      "People's reviewed updates waiting to be stored",
      [],
      (g) => {
        g.set(this.sources?.lanes().peoplePending ?? 0)
      },
    )
    sampled('corkboard_db_available', '1 while the database answers, 0 while not', [], (g) => {
      g.set(this.sources?.databaseAvailable() === false ? 0 : 1)
    })
    // One query per scrape for the three outbox gauges, shared by their collects.
    let outbox: ReturnType<MetricsSources['outbox']> | undefined
    const readOutbox = () => {
      outbox ??= (this.sources?.outbox() ?? Promise.resolve(undefined))
        .catch(() => undefined)
        .finally(() => setImmediate(() => (outbox = undefined)))
      return outbox
    }
    sampled(
      'corkboard_webhook_outbox_pending',
      'Webhook deliveries not yet delivered or given up (every process sees the same outbox)',
      [],
      async (g) => {
        const o = await readOutbox()
        if (o) g.set(o.pending)
      },
    )
    sampled(
      'corkboard_webhook_outbox_due',
      'Webhook deliveries due now and not yet taken by a worker',
      [],
      async (g) => {
        const o = await readOutbox()
        if (o) g.set(o.due)
      },
    )
    sampled(
      'corkboard_webhook_oldest_due_seconds',
      'How long the oldest due webhook delivery has waited (0 when none is due)',
      [],
      async (g) => {
        const o = await readOutbox()
        if (o) g.set(o.oldestDueSeconds)
      },
    )
  }

  /** Where the gauges read the service's state (set once the service is built). */
  watch(sources: MetricsSources): void {
    this.sources = sources
  }

  /** The scrape: this service's series and the process's, in the Prometheus text format. */
  async text(): Promise<string> {
    const [own, proc] = await Promise.all([this.registry.metrics(), processRegistry().metrics()])
    return `${own}\n${proc}`
  }

  readonly contentType = this.registry.contentType
}

let processWide: Registry | undefined

/** Memory, CPU, event-loop delay, GC: prom-client's defaults, once per process. */
function processRegistry(): Registry {
  if (!processWide) {
    processWide = new Registry()
    collectDefaultMetrics({ register: processWide })
  }
  return processWide
}

/** HTTP methods as a label: the standard ones, anything else as OTHER. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
export const methodLabel = (method: string | undefined) =>
  method && METHODS.has(method) ? method : 'OTHER'

/** The label of a failed statement: its SQLSTATE when the database gave one. */
export function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : 'connection'
}
