import { enableCompileCache, flushCompileCache } from 'node:module'

/**
 * `npm start`: serves everything on PORT until SIGTERM or SIGINT, then drains and exits 0.
 *
 * Node's compile cache first, before the service's modules load: they are stripped of
 * their types once and kept on disk (NODE_COMPILE_CACHE, by default in the system's
 * temporary folder). The transfer threads use it too (the variable is what they read):
 * a thread that finds its code there does not load the type stripper (measured: a server
 * grows 20 MB over its first, small export, where it grew 29; it idles in 156 MB, not 166).
 */
const cache = enableCompileCache()
if (cache.directory) process.env.NODE_COMPILE_CACHE ??= cache.directory
const { createApp } = await import('./app.ts')
const { loadConfig } = await import('./config.ts')
const { createLogger } = await import('./http/log.ts')
const { loadThreadModule } = await import('./transfer/threads.ts')

/**
 * The request thread's young generation, capped by `npm start` (package.json): V8 grows it
 * to 128 MB by default, and a server that touches all of it (a board's load, a minute of
 * requests) holds the pages: +47 MB over a minute of light requests, measured, where it now
 * holds +0 to +8. A flag rather than code: V8 reads it only when the heap is made. This one
 * caps the young generation without raising the transfer threads' smaller one
 * (`--max-semi-space-size` would set theirs too).
 */
const YOUNG_CAP = '--scavenger-max-new-space-capacity-mb'
const youngGenerationCapped = () =>
  [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((a) =>
    a.startsWith(YOUNG_CAP),
  )

const config = loadConfig()
// Start and stop lines are written at every LOG_LEVEL but silent: they say where it listens.
const say = createLogger(config.logLevel === 'silent' ? 'silent' : 'info')
const app = await createApp(config)
const url = await app.listen()
app.warmSite().catch(() => {})
// The transfer thread's own module, which the request's thread never loads otherwise.
loadThreadModule()
  .then(() => flushCompileCache())
  .catch(() => {})
if (!youngGenerationCapped()) {
  say.info(
    `started without ${YOUNG_CAP} (npm start sets it): the request thread's young generation may grow to 128 MB`,
  )
}
say.info(
  `Corkboard listening on ${url} (storage: ${config.databaseUrl ? 'Postgres' : `PGlite in ${config.dataDir}`})`,
  { url },
)

let stopping = false
const stop = async (signal: string) => {
  if (stopping) return
  stopping = true
  say.info(`${signal}: finishing in-flight requests and flushing documents`)
  // Bounded: a shutdown that cannot finish (a database gone for good) must not outlive
  // the orchestrator's patience, which would kill the process without a word.
  setTimeout(() => {
    say.error(
      `shutdown did not finish within ${config.shutdownTimeoutMs} ms (SHUTDOWN_TIMEOUT_MS); exiting with work undone`,
    )
    process.exit(1)
  }, config.shutdownTimeoutMs).unref()
  try {
    await app.close()
    process.exit(0)
  } catch (error) {
    say.error('shutdown failed', error)
    process.exit(1)
  }
}
process.on('SIGTERM', () => void stop('SIGTERM'))
process.on('SIGINT', () => void stop('SIGINT'))
