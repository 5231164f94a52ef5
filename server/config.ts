/** Every environment variable the service reads; the README's configuration table mirrors this. */
export interface Config {
  port: number
  host: string
  /** Real Postgres when set; embedded PGlite in `dataDir` otherwise. */
  databaseUrl: string | undefined
  dataDir: string
  /** Base URL the service is reached at; links and robot e-mails derive from it. */
  publicUrl: string | undefined
  claimLeaseSeconds: number
  /** Requests per minute per API key, every action (the specification's 240). */
  rateLimitPerKey: number
  /** set_node_image and attach_screenshot calls per minute per organisation, each (30). */
  rateLimitImagesPerOrg: number
  /** How long a live document with no connection stays in memory. */
  docIdleMs: number
  syncTokenTtlSeconds: number
  sessionTtlDays: number
  /** scrypt cost parameter N (a power of two). */
  scryptN: number
  redisUrl: string | undefined
  /** Namespace of this deployment's keys and channels in Redis. */
  redisPrefix: string
  webhookAllowPrivate: boolean
  /** How often each process's webhook worker looks for due deliveries written elsewhere. */
  webhookPollMs: number
  /** Webhook deliveries in flight at once per process. */
  webhookConcurrency: number
  logLevel: 'silent' | 'error' | 'info'
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got "${raw}"`)
  return n
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const logLevel = env.LOG_LEVEL ?? 'info'
  if (logLevel !== 'silent' && logLevel !== 'error' && logLevel !== 'info') {
    throw new Error(`LOG_LEVEL must be silent, error or info, got "${logLevel}"`)
  }
  return {
    port: int(env, 'PORT', 8787),
    host: env.HOST || '127.0.0.1',
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: env.DATA_DIR || './data',
    publicUrl: env.PUBLIC_URL || undefined,
    claimLeaseSeconds: int(env, 'CLAIM_LEASE_SECONDS', 900),
    rateLimitPerKey: int(env, 'RATE_LIMIT_PER_KEY', 240),
    rateLimitImagesPerOrg: int(env, 'RATE_LIMIT_IMAGES_PER_ORG', 30),
    docIdleMs: int(env, 'DOC_IDLE_MS', 30_000),
    syncTokenTtlSeconds: int(env, 'SYNC_TOKEN_TTL_SECONDS', 3600),
    sessionTtlDays: int(env, 'SESSION_TTL_DAYS', 30),
    scryptN: int(env, 'SCRYPT_N', 2 ** 15),
    redisUrl: env.REDIS_URL || undefined,
    redisPrefix: env.REDIS_PREFIX || 'corkboard',
    webhookAllowPrivate: env.WEBHOOK_ALLOW_PRIVATE === '1',
    webhookPollMs: int(env, 'WEBHOOK_POLL_MS', 1000),
    webhookConcurrency: int(env, 'WEBHOOK_CONCURRENCY', 16),
    logLevel,
  }
}
