import type { StorageStatus } from './availability.ts'

/**
 * The one storage interface. Two implementations: embedded PGlite (a data folder, one
 * transaction at a time) and real Postgres (a connection pool). The same SQL, with `$n`
 * placeholders, runs on both; the contract suite in test/persistence proves it.
 */
export type Row = Record<string, unknown>

export interface Queryable {
  /** Runs one statement. Timestamps come back as `Date`, `bytea` as `Uint8Array`. */
  query<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>
}

/** A transaction's connection. */
export interface Transaction extends Queryable {
  /**
   * Issues the transaction's last statement. When nothing else was issued, it runs on its
   * own, without BEGIN and COMMIT (one statement is atomic by itself): one message and one
   * reply. Nothing may be issued after it.
   */
  final<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>
}

/** Told what the storage does, for the service's metrics (server/metrics/). */
export interface DbObserver {
  /** A transaction waited this long (ms) for its connection (PGlite: for the one it has). */
  poolWait(ms: number): void
  /** A statement failed (a constraint, a timeout, a lost connection, a refusal it raised). */
  statementFailed(error: unknown): void
}

export interface Db extends Queryable {
  readonly kind: 'pglite' | 'postgres'
  /** Whether the database answers (embedded PGlite always does). */
  readonly availability: StorageStatus
  /**
   * For the short statements every request makes (admitting an agent request): a few
   * connections of their own, so concurrent requests' statements pipeline on one
   * connection and leave and return in one system call each way instead of one per
   * request, and never queue behind a long query of the main pool.
   */
  readonly lane: Queryable
  /**
   * Runs `fn` in one transaction: committed when it resolves, rolled back when it throws.
   * Statements issued without awaiting each other are pipelined on Postgres.
   */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>
  /** Adds an observer until the returned function is called. */
  observe(observer: DbObserver): () => void
  close(): Promise<void>
}

/** The bounds of every wait on Postgres (see docs/operations.md). */
export interface PostgresLimits {
  connectTimeoutMs: number
  statementTimeoutMs: number
  lockTimeoutMs: number
  idleInTransactionMs: number
  /** Told when the database stops or starts answering. */
  onAvailability?: (available: boolean, cause?: unknown) => void
}
