import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import type { StorageKind } from '../support/storage.ts'
import { TEST_DATABASE_URL } from '../support/storage.ts'

export interface BenchServer {
  url: string
  /** The server's database URL (Postgres) or data folder (PGlite). */
  storage: string
  child: ChildProcess
  close(): Promise<void>
}

/**
 * The service as it runs in production: `node server/main.ts` in its own process on port
 * 0, over a fresh database, so the load generator does not share its event loop.
 */
export async function spawnServer(
  kind: StorageKind,
  env: Record<string, string> = {},
): Promise<BenchServer> {
  const name = `cb_bench_${process.pid}_${Date.now()}`
  let storageEnv: Record<string, string>
  let cleanup: () => Promise<void>
  if (kind === 'postgres') {
    const admin = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} })
    await admin.unsafe(`create database ${name}`)
    const url = new URL(TEST_DATABASE_URL)
    url.pathname = `/${name}`
    storageEnv = { DATABASE_URL: url.toString() }
    cleanup = async () => {
      await admin.unsafe(`drop database if exists ${name} with (force)`)
      await admin.end()
    }
  } else {
    const dir = await mkdtemp(join(tmpdir(), 'cb-bench-'))
    storageEnv = { DATA_DIR: dir }
    cleanup = () => rm(dir, { recursive: true, force: true })
  }
  const child = spawn(process.execPath, ['server/main.ts'], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SCRYPT_N: '1024',
      ...storageEnv,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const url = await new Promise<string>((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const m = /listening on (http:\/\/\S+)/.exec(out)
      if (m?.[1]) resolve(m[1])
    })
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)))
  })
  return {
    url,
    storage: storageEnv.DATABASE_URL ?? storageEnv.DATA_DIR ?? '',
    child,
    async close() {
      const exited = new Promise((r) => child.once('exit', r))
      child.kill('SIGTERM')
      await exited
      await cleanup()
    },
  }
}
