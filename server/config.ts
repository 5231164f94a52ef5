import type { PostgresLimits } from '../persistence/types.ts'
import { LOG_LEVELS, type LogLevel } from './http/log.ts'

/** Every environment variable the service reads; the README's configuration table mirrors this. */
export interface Config {
  port: number
  host: string
  /** Real Postgres when set; embedded PGlite in `dataDir` otherwise. */
  databaseUrl: string | undefined
  dataDir: string
  /** Bounds of every wait on Postgres: connecting (and getting a connection), a statement, a lock, an idle transaction. */
  dbConnectTimeoutMs: number
  dbStatementTimeoutMs: number
  dbLockTimeoutMs: number
  dbIdleInTransactionMs: number
  /** Base URL the service is reached at; links and robot e-mails derive from it. */
  publicUrl: string | undefined
  claimLeaseSeconds: number
  /** Requests per minute per API key, every action (the specification's 240). */
  rateLimitPerKey: number
  /** set_node_image and attach_screenshot calls per minute per organisation, each (30). */
  rateLimitImagesPerOrg: number
  /** The longest MCP answer, in tokens (three characters each); a longer one is paged. */
  mcpAnswerTokens: number
  /** How long a live document with no connection stays in memory. */
  docIdleMs: number
  /** The longest a graceful shutdown may take before the process exits anyway. */
  shutdownTimeoutMs: number
  syncTokenTtlSeconds: number
  sessionTtlDays: number
  /** scrypt cost parameter N (a power of two). */
  scryptN: number
  redisUrl: string | undefined
  /** Namespace of this deployment's keys and channels in Redis. */
  redisPrefix: string
  /**
   * Where other processes reach this one to pass on agent calls of the organisations it
   * serves (with Redis); derived from HOST and PORT when unset.
   */
  internalUrl: string | undefined
  webhookAllowPrivate: boolean
  /** Lets MCP clients' metadata documents live on loopback and private addresses. */
  oauthAllowPrivateClientDocs: boolean
  /** How often each process's webhook worker looks for due deliveries written elsewhere. */
  webhookPollMs: number
  /** Webhook deliveries in flight at once per process. */
  webhookConcurrency: number
  /**
   * How long a worker's claim on a delivery lasts: a delivery whose worker died, or whose
   * claim was cut off by a database fault, is sent again after this (with the same id).
   */
  webhookLeaseMs: number
  logLevel: LogLevel
  /** The bearer token GET /metrics asks for; unset: /metrics answers 404. */
  metricsToken: string | undefined
  /**
   * A reverse proxy is in front (TRUST_PROXY=1): the client's address is the first
   * X-Forwarded-For entry rather than the socket's (which is the proxy's).
   */
  trustProxy: boolean
  /** An HTTP request's headers must arrive within this, counted from the connection or the previous request; 0 = no limit. */
  httpHeadersTimeoutMs: number
  /** An HTTP request (headers and body) must arrive in full within this; 0 = no limit. */
  httpRequestTimeoutMs: number
  /** Open TCP connections per remote address; 0 = no cap. */
  maxConnectionsPerAddress: number
  /** A live-sync WebSocket must authenticate a document within this of opening; 0 = no limit. */
  syncAuthTimeoutMs: number
  /** Largest live-sync WebSocket message; a larger one closes the socket (1009). */
  syncMaxMessageBytes: number
  /** The largest archive or file POST /api/app/orgs/:orgId/import takes. */
  importMaxBytes: number
  /** Failed sign-ins per address per window, whatever the accounts. */
  loginFailuresPerAddress: number
  loginAddressWindowSeconds: number
  /** Failed sign-ins per account per window, except from a browser that signed in to it before. */
  loginFailuresPerAccount: number
  loginAccountWindowSeconds: number
  /** Sign-ups (new accounts) per client address per window. */
  signupsPerAddress: number
  signupWindowSeconds: number
  /** OAuth client registrations (POST /oauth/register) per client address per window. */
  oauthRegistrationsPerAddress: number
  oauthRegistrationWindowSeconds: number
}

/** A whole number of at least `min` (a count, a size, a duration; 0 often means "no limit"). */
function whole(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isFinite(n)) throw new Error(`${name} must be a number, got "${raw}"`)
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`
    throw new Error(`${name} must be a whole number ${range}, got "${raw}"`)
  }
  return n
}

/** scrypt's cost: a power of two of at least 2 (the algorithm takes nothing else). */
function powerOfTwo(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const n = whole(env, name, fallback, 2)
  if ((n & (n - 1)) !== 0 || n > 2 ** 30) {
    throw new Error(
      `${name} must be a power of two from 2 to 2^30 (e.g. 32768), got "${env[name]}"`,
    )
  }
  return n
}

/** A switch: 1 or 0 (unset is 0); anything else is refused rather than read as off. */
function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = env[name]
  if (raw === undefined || raw === '' || raw === '0') return false
  if (raw === '1') return true
  throw new Error(`${name} must be 1 or 0, got "${raw}"`)
}

/** PUBLIC_URL: an absolute http(s) URL, since cookies' Secure flag and the app's own origin derive from it. */
function publicUrlOf(env: NodeJS.ProcessEnv): string | undefined {
  return httpUrlOf(env, 'PUBLIC_URL', 'https://board.example.com')
}

/** An absolute http or https URL, or unset. */
function httpUrlOf(env: NodeJS.ProcessEnv, name: string, example: string): string | undefined {
  const raw = env[name]
  if (!raw) return undefined
  let url: URL | undefined
  try {
    url = new URL(raw)
  } catch {
    url = undefined
  }
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
    throw new Error(
      `${name} must be an absolute http or https URL such as ${example}, got "${raw}"`,
    )
  }
  return raw
}

/** LOG_LEVEL: one of pino's levels that we use, or silent. */
function logLevelOf(env: NodeJS.ProcessEnv): LogLevel {
  const raw = env.LOG_LEVEL || 'info'
  const level = LOG_LEVELS.find((l) => l === raw)
  if (!level) throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`)
  return level
}

/**
 * METRICS_TOKEN: anyone holding it reads /metrics, so a guessable one is refused (at least
 * 16 characters); no whitespace, since it travels in a header.
 */
function metricsTokenOf(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.METRICS_TOKEN
  if (!raw) return undefined
  if (raw.length < 16 || /\s/.test(raw)) {
    throw new Error(
      'METRICS_TOKEN must be at least 16 characters without spaces (e.g. openssl rand -hex 24)',
    )
  }
  return raw
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const logLevel = logLevelOf(env)
  const trustProxy = flag(env, 'TRUST_PROXY')
  return {
    port: whole(env, 'PORT', 8787, 0, 65_535),
    host: env.HOST || '127.0.0.1',
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: env.DATA_DIR || './data',
    dbConnectTimeoutMs: whole(env, 'DB_CONNECT_TIMEOUT_MS', 5_000, 1),
    dbStatementTimeoutMs: whole(env, 'DB_STATEMENT_TIMEOUT_MS', 15_000, 1),
    dbLockTimeoutMs: whole(env, 'DB_LOCK_TIMEOUT_MS', 5_000, 1),
    dbIdleInTransactionMs: whole(env, 'DB_IDLE_IN_TRANSACTION_MS', 30_000, 1),
    publicUrl: publicUrlOf(env),
    claimLeaseSeconds: whole(env, 'CLAIM_LEASE_SECONDS', 900, 1),
    rateLimitPerKey: whole(env, 'RATE_LIMIT_PER_KEY', 240, 1),
    rateLimitImagesPerOrg: whole(env, 'RATE_LIMIT_IMAGES_PER_ORG', 30, 1),
    mcpAnswerTokens: whole(env, 'MCP_ANSWER_TOKENS', 20_000, 1_000, 1_000_000),
    docIdleMs: whole(env, 'DOC_IDLE_MS', 30_000),
    shutdownTimeoutMs: whole(env, 'SHUTDOWN_TIMEOUT_MS', 25_000, 1),
    syncTokenTtlSeconds: whole(env, 'SYNC_TOKEN_TTL_SECONDS', 3600, 1),
    sessionTtlDays: whole(env, 'SESSION_TTL_DAYS', 30, 1),
    scryptN: powerOfTwo(env, 'SCRYPT_N', 2 ** 15),
    redisUrl: env.REDIS_URL || undefined,
    redisPrefix: env.REDIS_PREFIX || 'corkboard',
    internalUrl: httpUrlOf(env, 'INTERNAL_URL', 'http://10.0.0.5:8787'),
    webhookAllowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE'),
    oauthAllowPrivateClientDocs: flag(env, 'OAUTH_ALLOW_PRIVATE_CLIENT_DOCS'),
    webhookPollMs: whole(env, 'WEBHOOK_POLL_MS', 1000, 1),
    webhookConcurrency: whole(env, 'WEBHOOK_CONCURRENCY', 16, 1),
    webhookLeaseMs: whole(env, 'WEBHOOK_LEASE_MS', 120_000, 1),
    logLevel,
    metricsToken: metricsTokenOf(env),
    trustProxy,
    httpHeadersTimeoutMs: whole(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000),
    httpRequestTimeoutMs: whole(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000),
    // Behind a proxy every client shares the proxy's address: the cap is the proxy's job.
    maxConnectionsPerAddress: whole(env, 'MAX_CONNECTIONS_PER_ADDRESS', trustProxy ? 0 : 256),
    syncAuthTimeoutMs: whole(env, 'SYNC_AUTH_TIMEOUT_MS', 15_000),
    syncMaxMessageBytes: whole(env, 'SYNC_MAX_MESSAGE_BYTES', 4 * 1024 * 1024, 1),
    importMaxBytes: whole(env, 'IMPORT_MAX_BYTES', 2 * 1024 * 1024 * 1024, 1),
    loginFailuresPerAddress: whole(env, 'LOGIN_FAILURES_PER_ADDRESS', 30, 1),
    loginAddressWindowSeconds: whole(env, 'LOGIN_ADDRESS_WINDOW_SECONDS', 900, 1),
    loginFailuresPerAccount: whole(env, 'LOGIN_FAILURES_PER_ACCOUNT', 10, 1),
    loginAccountWindowSeconds: whole(env, 'LOGIN_ACCOUNT_WINDOW_SECONDS', 300, 1),
    signupsPerAddress: whole(env, 'SIGNUPS_PER_ADDRESS', 30, 1),
    signupWindowSeconds: whole(env, 'SIGNUP_WINDOW_SECONDS', 3600, 1),
    oauthRegistrationsPerAddress: whole(env, 'OAUTH_REGISTRATIONS_PER_ADDRESS', 30, 1),
    oauthRegistrationWindowSeconds: whole(env, 'OAUTH_REGISTRATION_WINDOW_SECONDS', 3600, 1),
  }
}

/** The Postgres session limits the configuration sets (every connection of the service). */
export function postgresLimits(config: Config): PostgresLimits {
  return {
    connectTimeoutMs: config.dbConnectTimeoutMs,
    statementTimeoutMs: config.dbStatementTimeoutMs,
    lockTimeoutMs: config.dbLockTimeoutMs,
    idleInTransactionMs: config.dbIdleInTransactionMs,
  }
}
