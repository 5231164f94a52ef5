import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type Db, openDb } from '../persistence/db.ts'
import { migrate } from '../persistence/migrate.ts'
import { agentEndpoint } from './agent/endpoint.ts'
import { ApiError } from './api-error.ts'
import { appRoutes } from './app-api/routes.ts'
import { sharedSecret } from './auth/secrets.ts'
import type { Config } from './config.ts'
import { type Logger, sendError, sendJson } from './http/json.ts'
import { Router } from './http/router.ts'
import { LiveDocs } from './live/live-docs.ts'
import { syncAuthenticator } from './live/sync-auth.ts'
import { attachSync } from './live/sync-server.ts'

export interface App {
  readonly server: Server
  readonly db: Db
  readonly live: LiveDocs
  readonly config: Config
  /** Base URL once listening, e.g. http://127.0.0.1:8787 */
  url: string
  listen(): Promise<string>
  /** Finishes in-flight requests, flushes documents, closes storage. */
  close(): Promise<void>
}

function logger(level: Config['logLevel']): Logger {
  return {
    error: level === 'silent' ? () => {} : console.error,
    info: level === 'info' ? console.info : () => {},
  }
}

/** Builds the whole service on one port; `db` may be passed in (tests share nothing else). */
export async function createApp(config: Config, options: { db?: Db } = {}): Promise<App> {
  const log = logger(config.logLevel)
  const db =
    options.db ?? (await openDb({ databaseUrl: config.databaseUrl, dataDir: config.dataDir }))
  await migrate(db)
  const syncSecret = await sharedSecret(db, 'sync-token')
  const live = new LiveDocs({
    db,
    idleMs: config.docIdleMs,
    log,
    authenticate: syncAuthenticator(db, syncSecret),
  })
  const services = { db, live, config }

  const router = new Router()
  const agent = agentEndpoint(services, log)
  router.on('POST', '/api/agent', async (req, res) => agent(req, res))
  router.on('GET', '/healthz', async (_req, res) => {
    await db.query('select 1')
    sendJson(res, 200, { ok: true })
  })
  appRoutes(router, { db, live, config, syncSecret })

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const url = new URL(req.url ?? '/', 'http://localhost')
      // Every method on the agent endpoint reaches it, so it can answer 405 itself.
      if (url.pathname === '/api/agent') return await agent(req, res)
      const match = router.match(req.method ?? 'GET', url.pathname)
      if (!match) throw new ApiError(404, `No route ${req.method} ${url.pathname}`)
      if ('allowed' in match) {
        res.setHeader('allow', match.allowed.join(', '))
        throw new ApiError(405, `Method ${req.method} not allowed on ${url.pathname}`)
      }
      await match.handler(req, res, match.params)
    } catch (error) {
      sendError(res, error, log)
    }
  }
  const server = createServer((req, res) => void handle(req, res))
  server.keepAliveTimeout = 5_000
  const sync = attachSync(server, live, log)

  const app: App = {
    server,
    db,
    live,
    config,
    url: '',
    listen: () =>
      new Promise((resolve, reject) => {
        server.once('error', reject)
        server.listen(config.port, config.host, () => {
          const { port } = server.address() as AddressInfo
          app.url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`
          resolve(app.url)
        })
      }),
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeIdleConnections()
      await live.close()
      sync.closeAll()
      await closed
      if (!options.db) await db.close()
    },
  }
  return app
}
