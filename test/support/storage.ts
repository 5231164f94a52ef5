import { randomBytes } from 'node:crypto'
import { PGlite } from '@electric-sql/pglite'
import postgres from 'postgres'
import { openDb } from '../../persistence/db.ts'
import { migrate } from '../../persistence/migrate.ts'
import { openPglite, pgliteDb } from '../../persistence/pglite.ts'
import type { Db, PostgresLimits } from '../../persistence/types.ts'

/** Every storage test runs against both; real Postgres is required (unreachable is a failure). */
export const STORAGES = ['pglite', 'postgres'] as const
export type StorageKind = (typeof STORAGES)[number]

export const TEST_DATABASE_URL =
  process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

export interface TestDb {
  db: Db
  /** Set for Postgres: the URL of this test's own database. */
  url: string | undefined
  drop(): Promise<void>
}

let migrated: Promise<Blob> | undefined

/**
 * The data of a PGlite database with every migration applied, made once a test process:
 * each migrated PGlite of the tests starts from it. Creating one (initdb in memory) and
 * migrating it took ~2.3 s, starting from this ~0.5 s. A test of the migrations themselves
 * asks for an unmigrated database, which is made afresh.
 */
function migratedPglite(): Promise<Blob> {
  migrated ??= (async () => {
    const pg = await PGlite.create()
    try {
      await migrate(pgliteDb(pg))
      return await pg.dumpDataDir('none')
    } finally {
      await pg.close()
    }
  })().catch((error: unknown) => {
    migrated = undefined
    throw error
  })
  return migrated
}

/** A fresh, migrated database: in-memory PGlite, or a new Postgres database dropped afterwards. */
export async function freshDb(
  kind: StorageKind,
  options: { migrate?: boolean; limits?: PostgresLimits } = {},
): Promise<TestDb> {
  if (kind === 'pglite') {
    const from = options.migrate === false ? undefined : await migratedPglite()
    const db = await openPglite('memory://', from)
    return { db, url: undefined, drop: () => db.close() }
  }
  const name = `cb_test_${randomBytes(6).toString('hex')}`
  const admin = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} })
  try {
    await admin.unsafe(`create database ${name}`)
  } catch (error) {
    await admin.end()
    throw new Error(`Postgres at ${TEST_DATABASE_URL} is required for the tests: ${String(error)}`)
  }
  const url = new URL(TEST_DATABASE_URL)
  url.pathname = `/${name}`
  const db = await openDb({
    databaseUrl: url.toString(),
    maxConnections: 20,
    limits: options.limits,
  })
  if (options.migrate !== false) await migrate(db)
  return {
    db,
    url: url.toString(),
    async drop() {
      await db.close()
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end()
    },
  }
}
