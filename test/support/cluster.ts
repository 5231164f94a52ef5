import { execFile } from 'node:child_process'
import { chown, mkdtemp, readdir, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'

const run = promisify(execFile)

/** The machine's PostgreSQL programs (Debian keeps them per version). */
async function binDir(): Promise<string> {
  const versions = (await readdir('/usr/lib/postgresql')).sort((a, b) => Number(b) - Number(a))
  const latest = versions[0]
  if (!latest) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql')
  return `/usr/lib/postgresql/${latest}/bin`
}

/** A free TCP port on loopback, as the kernel hands one out. */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      )
    })
  })
}

export interface Cluster {
  /** A database of its own on the cluster, for the service. */
  url: string
  /** The superuser's connection, for the test's own statements. */
  admin: postgres.Sql
  /** A statement on the service's database (`url`), on a connection of its own. */
  query(text: string, params?: unknown[]): Promise<Record<string, unknown>[]>
  stop(): Promise<void>
  start(): Promise<void>
  destroy(): Promise<void>
}

/**
 * A throwaway PostgreSQL cluster for fault injection: initdb into a temporary folder, its
 * own port, the machine's binaries. Tests stop and start it at will; the machine's own
 * cluster is never touched. PostgreSQL refuses to run as root, so as root the cluster runs
 * as the `postgres` user.
 */
export async function throwawayCluster(): Promise<Cluster> {
  const bin = await binDir()
  const dir = await mkdtemp(join(tmpdir(), 'cb-cluster-'))
  const data = join(dir, 'data')
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres'])
    const { stdout: gid } = await run('id', ['-g', 'postgres'])
    await chown(dir, Number(stdout), Number(gid))
  }
  const pg = (program: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(bin, program), ...args])
      : run(join(bin, program), args)
  await pg('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
  const port = await freePort()
  const options = [
    `-p ${port}`,
    '-c listen_addresses=127.0.0.1',
    `-c unix_socket_directories=${dir}`,
    '-c max_connections=100',
    '-c fsync=off',
    '-c synchronous_commit=off',
  ].join(' ')
  const start = async () => {
    await pg('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start'])
  }
  const stop = async () => {
    await pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop'])
  }
  await start()
  const admin = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, {
    max: 1,
    onnotice: () => {},
  })
  await admin.unsafe('create database corkboard')
  const url = `postgres://postgres@127.0.0.1:${port}/corkboard`
  return {
    url,
    admin,
    async query(text, params = []) {
      const sql = postgres(url, { max: 1, onnotice: () => {} })
      try {
        return [...(await sql.unsafe(text, params as postgres.ParameterOrJSON<never>[]))]
      } finally {
        await sql.end({ timeout: 1 })
      }
    },
    stop,
    start,
    async destroy() {
      await admin.end({ timeout: 1 }).catch(() => {})
      await stop().catch(() => {})
      await rm(dir, { recursive: true, force: true })
    },
  }
}
