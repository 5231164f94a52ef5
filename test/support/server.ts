import { type App, createApp } from '../../server/app.ts'
import { type Config, loadConfig, postgresLimits } from '../../server/config.ts'
import { freshDb, type StorageKind, type TestDb } from './storage.ts'

export interface TestServer {
  app: App
  url: string
  storage: TestDb
  close(): Promise<void>
}

/** A real server on port 0 over a fresh database of the given kind (`options`: createApp's seams). */
export async function startServer(
  kind: StorageKind,
  overrides: Partial<Config> = {},
  options: Omit<Parameters<typeof createApp>[1], 'db'> = {},
): Promise<TestServer> {
  const base = loadConfig({})
  // The database's limits as configured (a test may shorten the lock timeout).
  const storage = await freshDb(kind, { limits: postgresLimits({ ...base, ...overrides }) })
  const config: Config = {
    ...base,
    port: 0,
    host: '127.0.0.1',
    logLevel: 'error',
    // Cheap password hashing keeps sign-ups fast; the format and the code path are the same.
    scryptN: 1024,
    // Every test signs its people up from 127.0.0.1; the limits' own tests set them low.
    signupsPerAddress: 1_000_000,
    oauthRegistrationsPerAddress: 1_000_000,
    // As a server configured with DATABASE_URL: its own database (what a thread opens).
    databaseUrl: storage.url,
    ...overrides,
  }
  const app = await createApp(config, { ...options, db: storage.db })
  const url = await app.listen()
  return {
    app,
    url,
    storage,
    async close() {
      await app.close()
      await storage.drop()
    },
  }
}
