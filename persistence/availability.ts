/**
 * Whether storage answers, as learned from real queries: a query that fails because the
 * database cannot be reached (connection refused, terminated, restarting) marks storage
 * unavailable, and from then on a probe on a connection of its own asks again every
 * `probeMs` until the database answers. While unavailable, queries fail at once with
 * StorageUnavailable instead of queueing for a connection that will not come: callers
 * answer 503 immediately, and nothing waits forever.
 */

/** The error every storage call fails with while the database does not answer. */
export class StorageUnavailable extends Error {
  readonly code = 'STORAGE_UNAVAILABLE'
  constructor(cause?: unknown) {
    super('The database is not answering', { cause })
  }
}

/** Postgres error classes and driver codes that mean "the database is away", not "this query is wrong". */
const CONNECTION_CODES = new Set([
  // postgres.js
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
  'CONNECT_TIMEOUT',
  // the operating system
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  // Postgres: admin_shutdown, crash_shutdown, cannot_connect_now, database_dropped
  '57P01',
  '57P02',
  '57P03',
  '57P04',
])

export function isConnectionError(error: unknown): boolean {
  if (error instanceof StorageUnavailable) return true
  if (typeof error !== 'object' || error === null) return false
  const code = (error as { code?: unknown }).code
  if (typeof code !== 'string') return false
  // Class 08: connection exceptions.
  return CONNECTION_CODES.has(code) || code.startsWith('08')
}

/**
 * Postgres errors that mean "the database is busy", not "this query is wrong" nor "the
 * database is away": a lock not granted within lock_timeout (55P03), a statement cut at
 * statement_timeout (57014), a deadlock broken (40P01), a serialization failure (40001).
 * The transaction was rolled back, so nothing of it was written, and the same request
 * sent again a moment later may well succeed: callers answer 503 with Retry-After.
 */
const BUSY_CODES = new Set(['55P03', '57014', '40P01', '40001'])

export function isBusyError(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && BUSY_CODES.has(code)
}

export interface StorageStatus {
  /** False from a connection failure until a probe succeeds. */
  readonly available: boolean
  /** Asks the database now (bounded by `timeoutMs`): readiness checks. */
  check(timeoutMs?: number): Promise<boolean>
}

/** How long a successful readiness check answers for the ones after it. */
const CHECK_REUSE_MS = 1_000

export class Availability implements StorageStatus {
  available = true
  private readonly probe: () => Promise<void>
  private readonly probeMs: number
  private readonly onChange: (available: boolean, cause?: unknown) => void
  private probing = false
  private stopped = false
  private timer: NodeJS.Timeout | undefined
  private lastCheck: { at: number; pending: boolean; result: Promise<boolean> } | undefined

  constructor(options: {
    /** One round trip on a connection of its own; rejects when the database does not answer. */
    probe: () => Promise<void>
    probeMs?: number
    onChange?: (available: boolean, cause?: unknown) => void
  }) {
    this.probe = options.probe
    this.probeMs = options.probeMs ?? 500
    this.onChange = options.onChange ?? (() => {})
  }

  /** A query failed: when it is for want of a database, storage is unavailable until a probe answers. */
  failed(error: unknown): void {
    if (!isConnectionError(error) || this.stopped) return
    if (this.available) {
      this.available = false
      this.onChange(false, error)
    }
    this.startProbing()
  }

  private startProbing(): void {
    if (this.probing || this.stopped) return
    this.probing = true
    const attempt = async () => {
      try {
        await this.probe()
        this.probing = false
        if (!this.available) {
          this.available = true
          this.onChange(true)
        }
      } catch {
        if (this.stopped) {
          this.probing = false
          return
        }
        this.timer = setTimeout(() => void attempt(), this.probeMs)
        this.timer.unref()
      }
    }
    void attempt()
  }

  /**
   * Asks the database now, bounded by `timeoutMs`. Callers at the same moment share one
   * probe, and a yes stays good for `CHECK_REUSE_MS` while no query has failed since: a
   * readiness endpoint polled hard (or by anyone, it needs no credentials) must not open a
   * database connection per request.
   */
  check(timeoutMs = 2_000): Promise<boolean> {
    const last = this.lastCheck
    const fresh =
      last && (last.pending || (this.available && Date.now() - last.at < CHECK_REUSE_MS))
    if (last && fresh) return last.result
    const check = { at: Date.now(), pending: true, result: this.checkNow(timeoutMs) }
    this.lastCheck = check
    void check.result.finally(() => {
      check.pending = false
      check.at = Date.now()
    })
    return check.result
  }

  private async checkNow(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StorageUnavailable()), timeoutMs)
    })
    try {
      await Promise.race([this.probe(), timeout])
      if (!this.available) {
        this.available = true
        this.onChange(true)
      }
      return true
    } catch (error) {
      this.failed(isConnectionError(error) ? error : new StorageUnavailable(error))
      return false
    } finally {
      clearTimeout(timer)
    }
  }

  stop(): void {
    this.stopped = true
    if (this.timer) clearTimeout(this.timer)
  }
}
