import { createApp } from './app.ts'
import { loadConfig } from './config.ts'
import { createLogger } from './http/log.ts'

/** `npm start`: serves everything on PORT until SIGTERM or SIGINT, then drains and exits 0. */
const config = loadConfig()
// Start and stop lines are written at every LOG_LEVEL but silent: they say where it listens.
const say = createLogger(config.logLevel === 'silent' ? 'silent' : 'info')
const app = await createApp(config)
const url = await app.listen()
app.warmSite().catch(() => {})
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
