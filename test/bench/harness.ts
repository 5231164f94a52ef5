import type { ChildProcess } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import * as Y from 'yjs'
import type { App } from '../../server/app.ts'
import { loadInto } from '../../server/live/doc-store.ts'
import { boardDocName } from '../../shared/doc-names.ts'
import { startProcess } from '../support/service-process.ts'
import type { StorageKind } from '../support/storage.ts'
import { TEST_DATABASE_URL } from '../support/storage.ts'

export interface BenchServer {
  url: string
  /** The server's database URL (Postgres) or data folder (PGlite). */
  storage: string
  child: ChildProcess
  close(): Promise<void>
}

/** A fresh database for a benchmark: its environment for the server, and how to drop it. */
export async function benchStorage(
  kind: StorageKind,
): Promise<{ env: Record<string, string>; drop(): Promise<void> }> {
  if (kind === 'postgres') {
    const name = `cb_bench_${process.pid}_${Date.now()}`
    const admin = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} })
    await admin.unsafe(`create database ${name}`)
    const url = new URL(TEST_DATABASE_URL)
    url.pathname = `/${name}`
    return {
      env: { DATABASE_URL: url.toString() },
      async drop() {
        await admin.unsafe(`drop database if exists ${name} with (force)`)
        await admin.end()
      },
    }
  }
  const dir = await mkdtemp(join(tmpdir(), 'cb-bench-'))
  return { env: { DATA_DIR: dir }, drop: () => rm(dir, { recursive: true, force: true }) }
}

/**
 * The service as it runs in production: `node server/main.ts` in its own process on port
 * 0, over a fresh database, so the load generator does not share its event loop.
 */
export async function spawnServer(
  kind: StorageKind,
  env: Record<string, string> = {},
): Promise<BenchServer> {
  const storage = await benchStorage(kind)
  const proc = await startProcess({ ...storage.env, ...env })
  return {
    url: proc.url,
    storage: storage.env.DATABASE_URL ?? storage.env.DATA_DIR ?? '',
    child: proc.child,
    async close() {
      await proc.stop()
      await storage.drop()
    },
  }
}

/** The resident memory of a process, in megabytes (Linux). */
export async function rssMb(pid: number | undefined): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN)
  return kb / 1024
}

/**
 * The board document's size: `bytes` as a provider receives it (update format 1), `stored`
 * as a snapshot holds it (format 2, migration 027), and how many rows a cold load reads now.
 */
export async function boardSize(
  app: App,
  orgId: string,
): Promise<{ bytes: number; stored: number; rows: number }> {
  const doc = new Y.Doc()
  const loaded = await loadInto(app.db, boardDocName(orgId), doc)
  const size = {
    bytes: Y.encodeStateAsUpdate(doc).length,
    stored: Y.encodeStateAsUpdateV2(doc).length,
    rows: loaded.rows.length,
  }
  doc.destroy()
  return size
}
