import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { hostname } from 'node:os'
import { openDb } from '../persistence/db.ts'
import { migrate } from '../persistence/migrate.ts'
import type { Db } from '../persistence/types.ts'
import { OAuthSweeper } from './auth/oauth-sweep.ts'
import { sharedSecret } from './auth/secrets.ts'
import { Descriptions } from './board/descriptions.ts'
import { ClaimsFollower } from './claims/follow.ts'
import { type Clock, systemClock } from './clock.ts'
import { type Config, postgresLimits } from './config.ts'
import { ApiError } from './errors.ts'
import { agentEndpoint } from './faces/agent/endpoint.ts'
import { AgentForwarding } from './faces/agent/forward.ts'
import { IdempotencySweeper } from './faces/agent/idempotency-store.ts'
import { appApi } from './faces/app/app-api.ts'
import { IMPORT_TYPES } from './faces/app/data.ts'
import { MCP_PATH, mcpEndpoint } from './faces/mcp/http.ts'
import { metricsEndpoint } from './faces/metrics.ts'
import { oauthRoutes } from './faces/oauth/routes.ts'
import { openApiDocument } from './faces/openapi.ts'
import { staticSite } from './faces/static.ts'
import { syncAuthenticator } from './faces/sync/auth.ts'
import { attachSync } from './faces/sync/socket.ts'
import { capConnections, requestTimeouts } from './http/connection-limits.ts'
import { refuseCrossSite } from './http/cross-site.ts'
import { sendError, sendJson } from './http/json.ts'
import { createLogger, type LogDestination, type ServiceLogger } from './http/log.ts'
import { STATIC, serveRequest } from './http/request-log.ts'
import { type RegisteredRoute, Router } from './http/router.ts'
import { unavailableError } from './http/unavailable.ts'
import { expireBases } from './live/generations.ts'
import { type Authenticate, LiveDocs } from './live/live-docs.ts'
import { dropAbandonedStaging } from './live/rebase.ts'
import { errorCode, Metrics } from './metrics/metrics.ts'
import { rateBudgets } from './rate-limit/budgets.ts'
import { RateLimiter, sweepRateSeconds } from './rate-limit/limiter.ts'
import { PeopleEdits } from './review/people-edits.ts'
import { Sweeper } from './sweeper.ts'
import { TransferThreads } from './transfer/threads.ts'
import { migrateLayout } from './upgrades/layout-v2.ts'
import { moveDescriptions } from './upgrades/layout-v3.ts'
import { fillTaskTexts } from './upgrades/task-texts.ts'
import { type WebhookOptions, Webhooks } from './webhooks/webhooks.ts'

/** POST /api/app/orgs/:orgId/import, which takes an archive's bytes as they are. */
const IMPORT_PATH = /^\/api\/app\/orgs\/[^/]+\/import$/
const IMPORT_BODIES = ['application/json', ...IMPORT_TYPES]

/** The paths whose every request reads or writes the database. */
function needsStorage(path: string): boolean {
  return (
    path === '/api/agent' ||
    path === MCP_PATH ||
    path.startsWith('/api/app/') ||
    path.startsWith('/files/') ||
    path.startsWith('/oauth/')
  )
}

export interface App {
  readonly server: Server
  readonly db: Db
  readonly live: LiveDocs
  /** Cards' descriptions as this process knows them (board/descriptions.ts). */
  readonly descriptions: Descriptions
  readonly config: Config
  readonly webhooks: Webhooks
  /** The service's logger (JSON lines, each naming its request's id). */
  readonly log: ServiceLogger
  readonly metrics: Metrics
  /** Every route of the router, as GET /api/openapi.json reads them (its drift test does too). */
  routes(): readonly RegisteredRoute[]
  /** Compresses the web app's files ahead of the first visitor (npm start does, in the background). */
  warmSite(): Promise<void>
  /** Base URL once listening, e.g. http://127.0.0.1:8787 */
  url: string
  listen(): Promise<string>
  /** Finishes in-flight requests, flushes documents, closes storage. */
  close(): Promise<void>
}

/** Builds the whole service on one port; `db` may be passed in (tests share nothing else). */
export async function createApp(
  config: Config,
  options: {
    db?: Db
    webhooks?: WebhookOptions
    clock?: Clock
    /** A certificate authority to trust for MCP clients' metadata documents (tests' own). */
    oauthClientDocsCa?: string
    /** Where log lines go: stdout unless a test reads them. */
    logDestination?: LogDestination
    /** How long people's edits wait to be stored when no write takes them (tests widen it). */
    peopleFlushMs?: number
    /**
     * Compaction's thread at normal priority: for tests that wait on it, which a whole suite
     * on two cores would otherwise starve (it runs at the lowest priority in service).
     */
    compactionAtNormalPriority?: boolean
  } = {},
): Promise<App> {
  const log = createLogger(config.logLevel, options.logDestination)
  const metrics = new Metrics()
  const db =
    options.db ??
    (await openDb({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      limits: {
        ...postgresLimits(config),
        onAvailability: (available, cause) =>
          available
            ? log.info('the database answers again')
            : log.error('the database stopped answering; answering 503 until it is back', cause),
      },
    }))
  const unobserve = db.observe({
    poolWait: (ms) => metrics.dbPoolWait.observe(ms / 1000),
    statementFailed: (error) => metrics.dbErrors.inc({ code: errorCode(error) }),
  })
  await migrate(db)
  await migrateLayout(db, log)
  await fillTaskTexts(db, log)
  await moveDescriptions(db, log)
  const syncSecret = await sharedSecret(db, 'sync-token')
  // Several processes share organisations only through Redis: then every read asks storage.
  const descriptions = new Descriptions(db, { shared: config.redisUrl !== undefined })
  let authenticate: Authenticate | undefined
  const live = new LiveDocs({
    db,
    idleMs: config.docIdleMs,
    log,
    authenticate: (token, documentName) => (authenticate as Authenticate)(token, documentName),
    reviewer: (host) => new PeopleEdits(host, descriptions),
    redis: config.redisUrl ? { url: config.redisUrl, prefix: config.redisPrefix } : undefined,
    metrics,
    peopleFlushMs: options.peopleFlushMs,
    compactionLowPriority: options.compactionAtNormalPriority !== true,
    sharedBoardLoaded: (document, orgId) => claimsFollower.watch(document, orgId),
  })
  const claimsFollower = new ClaimsFollower({
    write: (docName, origin, fn) => live.write(docName, origin, fn),
    log,
  })
  authenticate = syncAuthenticator({ db, live, syncSecret })
  const webhooks = new Webhooks({ db, log, config, metrics }, options.webhooks)
  live.eventSink = webhooks.sink
  const clock = options.clock ?? systemClock
  const limiter = new RateLimiter(
    db,
    clock,
    rateBudgets({ perKey: config.rateLimitPerKey, imagesPerOrg: config.rateLimitImagesPerOrg }),
  )
  const services = { db, live, config, clock, limiter, descriptions }

  const router = new Router()
  // Scaled out, agent calls are computed by the process serving their organisation.
  const forwarding = live.owners && new AgentForwarding({ db, owners: live.owners, log, metrics })
  const agent = agentEndpoint(services, log, forwarding)
  router.on('POST', '/api/agent', async (req, res) => agent(req, res))
  const mcp = mcpEndpoint(services, log)
  // Liveness: the process serves requests (whatever its database does).
  router.on('GET', '/healthz', async (_req, res) => {
    sendJson(res, 200, { ok: true })
  })
  // Readiness: the database (and Redis, when configured) answer now.
  router.on('GET', '/readyz', async (_req, res) => {
    const [postgres, redis] = await Promise.all([db.availability.check(), live.redisAnswers()])
    const ready = postgres && redis !== false
    sendJson(res, ready ? 200 : 503, {
      ready,
      postgres,
      ...(redis === undefined ? {} : { redis }),
    })
  })
  // On Postgres, exports and imports run on threads of their own, over connections of their own.
  const transfers =
    db.kind === 'postgres' && config.databaseUrl
      ? new TransferThreads({
          databaseUrl: config.databaseUrl,
          limits: postgresLimits(config),
        })
      : undefined
  appApi(router, {
    db,
    live,
    config,
    clock,
    syncSecret,
    webhooks,
    descriptions,
    transfers,
  })
  // MCP sign-in (OAuth); described by its own metadata documents, not by the OpenAPI one.
  oauthRoutes(router, {
    db,
    config,
    clock,
    onGrantRevoked: (keyId) => live.closeConnections({ keyId }),
    clientDocsCa: options.oauthClientDocsCa,
  })
  const oauthSweeper = new OAuthSweeper({ db, log })
  const idempotencySweeper = new IdempotencySweeper({ db, log, clock })
  // Ended generations' bases (live/generations.ts): a replica offline longer starts afresh;
  // and snapshots staged by re-bases that never swapped (live/rebase.ts).
  const baseSweeper = new Sweeper({
    what: "ended generations' bases and abandoned re-base snapshots",
    log,
    sweep: async () =>
      (await expireBases(db, new Date(clock.now()))) + (await dropAbandonedStaging(db)),
  })
  // Rate logs of keys gone quiet (a charge trims its own bucket; nothing else comes back).
  const rateSweeper = new Sweeper({
    what: 'rate logs out of every window',
    log,
    sweep: () => sweepRateSeconds(db, clock.now()),
  })
  // The HTTP API as OpenAPI 3.1: the agent endpoint from the action table, the app API and
  // the files from the routes' own registrations (built once, every route registered).
  const openApi = openApiDocument(router.registered())
  router.on('GET', '/api/openapi.json', async (_req, res) => {
    sendJson(res, 200, openApi)
  })
  router.on('GET', '/metrics', metricsEndpoint(metrics, config.metricsToken))
  const site = staticSite()

  // Each request is served in a context of its own (its id, route and caller): every answer
  // carries X-Request-Id, and its log line and metrics follow once it is sent.
  const handle = (req: IncomingMessage, res: ServerResponse) =>
    serveRequest(req, res, { log, metrics }, async (request) => {
      // Every answer, whoever writes it (the MCP transport, a file, an error): a browser must
      // never guess another type than the one declared and run it as script or page.
      res.setHeader('x-content-type-options', 'nosniff')
      try {
        const url = new URL(req.url ?? '/', 'http://localhost')
        // The app API is authenticated by a cookie: nothing another site sends gets through.
        // The import takes a file's bytes as they are; its Origin and Sec-Fetch-Site are
        // checked all the same (a type other than a form's needs a preflight, never granted).
        if (url.pathname.startsWith('/api/app/')) {
          refuseCrossSite(req, config, IMPORT_PATH.test(url.pathname) ? IMPORT_BODIES : undefined)
        }
        // While the database does not answer, every request that needs it is answered at once.
        if (!db.availability.available && needsStorage(url.pathname)) throw unavailableError()
        // Every method on the agent endpoint reaches it, so it can answer 405 itself.
        if (url.pathname === '/api/agent') {
          request.route = url.pathname
          return await agent(req, res)
        }
        if (url.pathname === MCP_PATH) {
          request.route = MCP_PATH
          return await mcp(req, res)
        }
        const match = router.match(req.method ?? 'GET', url.pathname)
        if (match) request.route = match.path
        if (!match) {
          if (await site.serve(req, res, url.pathname)) {
            request.route = STATIC
            return
          }
          throw new ApiError(404, `No route ${req.method} ${url.pathname}`)
        }
        if ('allowed' in match) {
          res.setHeader('allow', match.allowed.join(', '))
          throw new ApiError(405, `Method ${req.method} not allowed on ${url.pathname}`)
        }
        await match.handler(req, res, match.params)
      } catch (error) {
        sendError(res, error, log)
      }
    })
  const limits = {
    headersTimeoutMs: config.httpHeadersTimeoutMs,
    requestTimeoutMs: config.httpRequestTimeoutMs,
    maxPerAddress: config.maxConnectionsPerAddress,
  }
  const server = createServer(requestTimeouts(limits), (req, res) => void handle(req, res))
  server.keepAliveTimeout = 5_000
  capConnections(server, limits, log)
  const sync = attachSync(server, live, log, {
    authTimeoutMs: config.syncAuthTimeoutMs,
    maxMessageBytes: config.syncMaxMessageBytes,
  })
  metrics.watch({
    documents: () => live.stats().documents,
    lanes: () => live.stats().lanes,
    sockets: () => sync.open(),
    databaseAvailable: () => db.availability.available,
    outbox: () =>
      db.availability.available ? webhooks.worker.outboxState() : Promise.resolve(undefined),
  })

  const app: App = {
    server,
    db,
    live,
    descriptions,
    config,
    webhooks,
    log,
    metrics,
    routes: () => router.registered(),
    url: '',
    warmSite: () => site.warm(),
    listen: () =>
      new Promise((resolve, reject) => {
        server.once('error', reject)
        server.listen(config.port, config.host, () => {
          const { port } = server.address() as AddressInfo
          app.url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`
          live.owners?.listening(config.internalUrl ?? internalUrl(config.host, port))
          webhooks.start()
          oauthSweeper.start()
          idempotencySweeper.start()
          baseSweeper.start()
          rateSweeper.start()
          resolve(app.url)
        })
      }),
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      // Kept-alive connections idle now close at once; those still answering a request go
      // idle once it is answered, and are closed then (server.close alone waited for their
      // clients to hang up: a shutdown with requests in flight ran out its whole timeout).
      server.closeIdleConnections()
      const idle = setInterval(() => server.closeIdleConnections(), 50)
      try {
        await live.close()
        forwarding?.close()
        descriptions.close()
        sync.closeAll()
        await closed
      } finally {
        clearInterval(idle)
      }
      await transfers?.close()
      await webhooks.stop()
      await oauthSweeper.stop()
      await idempotencySweeper.stop()
      await baseSweeper.stop()
      await rateSweeper.stop()
      unobserve()
      if (!options.db) await db.close()
    },
  }
  return app
}

/**
 * The address other processes reach this one at when INTERNAL_URL is unset: the listening
 * address, or the host's name when listening on every interface.
 */
function internalUrl(host: string, port: number): string {
  const name = host === '0.0.0.0' || host === '::' ? hostname() : host
  return `http://${name.includes(':') ? `[${name}]` : name}:${port}`
}
