import { readFileSync } from 'node:fs'
import * as Y from 'yjs'
import { migrate } from '../../persistence/migrate.ts'
import type { TestDb } from './storage.ts'

/**
 * A database an earlier version of the service wrote through its own actions
 * (test/fixtures/v<N>-database.json): its rows by table, and what the tests that open it
 * under today's service need to know of it.
 */
export interface DatabaseFixture {
  orgId: string
  apiKey: string
  person: { email: string; password: string }
  cards: Record<string, string>
  mapId: string
  /** The last migration that version had, and the data moves it had recorded. */
  lastMigration: string
  migrations: string[]
  /** The tables, in dependency order. */
  tableOrder: string[]
  tables: Record<string, Record<string, unknown>[]>
}

/** A fixture as its file holds it (`test/fixtures/<file>`). */
export function readFixture<F>(file: string): F {
  return JSON.parse(readFileSync(new URL(`../fixtures/${file}`, import.meta.url), 'utf8')) as F
}

/**
 * Loads the fixture into a database migrated only as far as its version went (created
 * without migrations), so that today's service finds it as that version left it.
 */
export async function loadFixture(storage: TestDb, fixture: DatabaseFixture): Promise<void> {
  await migrate(storage.db, { upTo: fixture.lastMigration })
  for (const name of fixture.migrations) {
    await storage.db.query('insert into schema_migrations (name) values ($1)', [name])
  }
  for (const table of fixture.tableOrder) {
    for (const row of fixture.tables[table] ?? []) {
      const columns = Object.keys(row)
      const values = columns.map((c) => {
        const v = row[c]
        if (typeof v === 'object' && v !== null && 'base64' in v)
          return Buffer.from(String((v as { base64: string }).base64), 'base64')
        // jsonb columns travel as text.
        return typeof v === 'object' && v !== null ? JSON.stringify(v) : v
      })
      await storage.db.query(
        `insert into ${table} (${columns.join(', ')}) values (${columns.map((_, i) => `$${i + 1}`).join(', ')})`,
        values,
      )
    }
  }
  // Sequences follow the rows copied in (bigserial ids).
  for (const table of ['doc_updates', 'changes']) {
    await storage.db.query(
      `select setval(pg_get_serial_sequence('${table}', 'id'), (select max(id) from ${table}))`,
    )
  }
}

/** A document as the fixture's own rows hold it (what a browser of that version kept). */
export function fixtureDoc(fixture: DatabaseFixture, docName: string): Y.Doc {
  const doc = new Y.Doc()
  for (const row of fixture.tables.doc_updates ?? []) {
    if (row.doc_name !== docName) continue
    Y.applyUpdate(doc, Buffer.from(String((row.data as { base64: string }).base64), 'base64'))
  }
  return doc
}
