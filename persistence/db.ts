import type { Db, PostgresLimits } from './types.ts'

export const DEFAULT_POSTGRES_LIMITS: PostgresLimits = {
  connectTimeoutMs: 5_000,
  statementTimeoutMs: 15_000,
  lockTimeoutMs: 5_000,
  idleInTransactionMs: 30_000,
}

export interface OpenDbOptions {
  /** Real Postgres when set. */
  databaseUrl?: string | undefined
  limits?: PostgresLimits | undefined
  /** PGlite data folder; `memory://` keeps everything in memory (tests). */
  dataDir?: string | undefined
  /** Postgres pool size. */
  maxConnections?: number | undefined
}

export async function openDb(options: OpenDbOptions): Promise<Db> {
  if (options.databaseUrl) {
    const { openPostgres } = await import('./postgres.ts')
    return openPostgres(
      options.databaseUrl,
      options.maxConnections ?? 20,
      options.limits ?? DEFAULT_POSTGRES_LIMITS,
    )
  }
  const { openPglite } = await import('./pglite.ts')
  return openPglite(options.dataDir ?? './data')
}
