import { randomBytes, randomUUID } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createApp } from '../../server/app.ts'
import { loadConfig } from '../../server/config.ts'
import { createAgentClient } from '../../shared/agent-client.ts'
import { Person } from '../support/client.ts'
import { startProcess } from '../support/service-process.ts'
import { benchStorage, rssMb } from './harness.ts'
import { type OrgShape, seedOrg } from './history-seed.ts'
import { line, type Stats, stats } from './stats.ts'

/**
 * Export and import at scale (issue 30): an organisation with the growth bench's long
 * history (cards on the board, archived cards, their comments and claims) and screenshots,
 * exported from one server process and imported into another over a fresh database, each
 * a real `node server/main.ts`. Reported: time, MB/s of archive, and the server's resident
 * memory before, at its peak during the transfer (sampled every 50 ms), and the growth,
 * which must stay bounded (≤ 100 MB) whatever the organisation's size.
 *
 * BENCH_SCALE=full is the shape (2,000 on the board, 50,000 archived, 150,000
 * comments, 500 MB of screenshots); the default is a tenth of the history and screenshots,
 * which finishes in a few minutes on a shared two-core machine.
 */

const FULL = process.env.BENCH_SCALE === 'full'
const SHAPE: OrgShape = {
  onBoard: 2_000,
  commentsOnBoard: 0,
  archived: FULL ? 50_000 : 5_000,
  commentsPerArchived: 3,
  claimedArchived: FULL ? 20_000 : 2_000,
}
/** BENCH_SERVER_NODE_OPTIONS: the server processes' NODE_OPTIONS (a heap cap, to tell a live set from garbage). */
const SERVER_OPTIONS: Record<string, string> = process.env.BENCH_SERVER_NODE_OPTIONS
  ? { NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS }
  : {}
const SCREENSHOT_BYTES = 200 * 1024
/** How long the control runs the requests alone (about as long as a full-scale export). */
const CONTROL_MS = FULL ? 60_000 : 10_000
const SCREENSHOTS = ((FULL ? 500 : 50) * 1024 * 1024) / SCREENSHOT_BYTES

/**
 * Another person's requests while a transfer runs: `/api/app/me` one after another, each
 * timed, until stopped. What a transfer on the server's own thread would delay.
 */
function prober(url: string, person: Person) {
  const times: number[] = []
  let running = true
  const loop = (async () => {
    while (running) {
      const t0 = performance.now()
      const res = await fetch(`${url}/api/app/me`, { headers: { cookie: person.cookie } })
      await res.arrayBuffer()
      times.push(performance.now() - t0)
      await new Promise((r) => setTimeout(r, 20))
    }
  })()
  return {
    async stop(): Promise<Stats> {
      running = false
      await loop
      return stats(times)
    },
  }
}

/** The same requests on the server idle, for three seconds. */
async function idleProbe(url: string, person: Person): Promise<Stats> {
  const p = prober(url, person)
  await new Promise((r) => setTimeout(r, 3_000))
  return p.stop()
}

/** Samples a process's RSS until stopped; returns the peak. */
function sampler(pid: number | undefined) {
  let peak = 0
  let running = true
  const loop = (async () => {
    while (running) {
      peak = Math.max(peak, await rssMb(pid))
      await new Promise((r) => setTimeout(r, 50))
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      return peak
    },
  }
}

/** Screenshots on archived cards, as attach_screenshot stores them (their rows and bytes). */
async function addScreenshots(
  db: { query: (t: string, p?: unknown[]) => Promise<unknown[]> },
  orgId: string,
  cards: string[],
) {
  for (let i = 0; i < SCREENSHOTS; i++) {
    const id = randomUUID()
    const bytes = randomBytes(SCREENSHOT_BYTES)
    const taskId = cards[(i * 7) % cards.length] as string
    await db.query(
      `insert into files (id, org_id, visibility, mime_type, extension, size, sha256, data)
       values ($1, $2, 'private', 'image/png', 'png', $3, encode(sha256($4), 'hex'), $4)`,
      [id, orgId, bytes.length, bytes],
    )
    await db.query(
      `insert into attachments (id, org_id, task_id, filename, mime_type, size, created_at)
       values ($1, $2, $3, $4, 'image/png', $5, now())`,
      [id, orgId, taskId, `shot-${i}.png`, bytes.length],
    )
  }
}

/** An organisation's archive, written to `file`. */
async function download(url: string, person: Person, orgId: string, file: string) {
  const res = await fetch(`${url}/api/app/orgs/${orgId}/export`, {
    headers: { cookie: person.cookie },
  })
  if (res.status !== 200 || !res.body) throw new Error(`export answered ${res.status}`)
  await pipeline(Readable.fromWeb(res.body as never), createWriteStream(file))
}

/** Imports the archive in `file` into the person's organisation. */
async function importInto(
  url: string,
  person: Person,
  file: string,
): Promise<{ counts?: Record<string, number> }> {
  const res = await fetch(`${url}/api/app/orgs/${person.orgId}/import`, {
    method: 'POST',
    headers: { cookie: person.cookie, 'content-type': 'application/octet-stream' },
    body: Readable.toWeb(createReadStream(file)) as never,
    duplex: 'half',
  } as RequestInit)
  const answer = (await res.json()) as { counts?: Record<string, number>; error?: string }
  if (res.status !== 200) throw new Error(`import answered ${res.status}: ${answer.error}`)
  return answer
}

export async function run(log: (line: string) => void): Promise<void> {
  const source = await benchStorage('postgres')
  const target = await benchStorage('postgres')
  const dir = await mkdtemp(join(tmpdir(), 'cb-export-bench-'))
  const file = join(dir, 'org.tar.gz')
  const small = join(dir, 'small.tar.gz')
  try {
    const config = {
      ...loadConfig({ ...process.env, ...source.env }),
      port: 0,
      host: '127.0.0.1',
      logLevel: 'error' as const,
      scryptN: 1024,
    }
    const app = await createApp(config)
    const url = await app.listen()
    const t0 = performance.now()
    const org = await seedOrg(app, url, SHAPE)
    await addScreenshots(app.db, org.orgId, org.archived)
    await app.live.flushPeople()
    const admin = new Person(url)
    await admin.signUp()
    await app.db.query(`insert into memberships (org_id, user_id, role) values ($1, $2, 'admin')`, [
      org.orgId,
      admin.user?.id,
    ])
    await app.close()
    if (SERVER_OPTIONS.NODE_OPTIONS)
      log(`server processes with NODE_OPTIONS=${SERVER_OPTIONS.NODE_OPTIONS}`)
    log(
      `seeded ${SHAPE.onBoard.toLocaleString('en')} cards on the board, ${SHAPE.archived.toLocaleString('en')} archived, ${(SHAPE.archived * SHAPE.commentsPerArchived).toLocaleString('en')} comments, ${SHAPE.claimedArchived.toLocaleString('en')} claims, ${SCREENSHOTS} screenshots (${((SCREENSHOTS * SCREENSHOT_BYTES) / 1024 / 1024).toFixed(0)} MB) in ${((performance.now() - t0) / 1000).toFixed(0)} s${FULL ? '' : ' (a tenth of the issue’s scale; BENCH_SCALE=full for all of it)'}`,
    )

    // Export, from a process that has served nothing yet but one read.
    const from = await startProcess({
      ...source.env,
      ...SERVER_OPTIONS,
      HTTP_REQUEST_TIMEOUT_MS: '3600000',
    })
    try {
      const warm = await fetch(`${from.url}/api/app/me`, { headers: { cookie: admin.cookie } })
      await warm.arrayBuffer()
      // What holding the board costs, apart: a running server holds it while anyone looks.
      const before = await rssMb(from.child.pid)
      const api = createAgentClient({ url: from.url, apiKey: org.key })
      await api.get_board({ summary: true, limit: 1 })
      log(
        `the board loaded (${SHAPE.onBoard.toLocaleString('en')} cards): server RSS ${before.toFixed(0)} → ${(await rssMb(from.child.pid)).toFixed(0)} MB`,
      )
      // The first export also compiles the code it runs; the second is a running server's
      // (the growth the issue bounds).
      const idle = await idleProbe(from.url, admin)
      // The control: the same requests for as long, with no transfer. What they alone add
      // is part of what the first export's growth counts.
      {
        const before = await rssMb(from.child.pid)
        const peak = sampler(from.child.pid)
        const probe = prober(from.url, admin)
        await new Promise((r) => setTimeout(r, CONTROL_MS))
        const top = await peak.stop()
        const during = await probe.stop()
        log(
          `control, the same requests for ${CONTROL_MS / 1000} s and no transfer: server RSS ${before.toFixed(0)} → peak ${top.toFixed(0)} MB (+${(top - before).toFixed(0)} MB, ${during.n} requests)`,
        )
      }
      for (const which of ['first export', 'second export']) {
        const before = await rssMb(from.child.pid)
        const peak = sampler(from.child.pid)
        const probe = prober(from.url, admin)
        const e0 = performance.now()
        await download(from.url, admin, org.orgId, file)
        const seconds = (performance.now() - e0) / 1000
        const top = await peak.stop()
        const during = await probe.stop()
        const size = (await stat(file)).size / 1024 / 1024
        log(
          `${which}: ${size.toFixed(1)} MB in ${seconds.toFixed(1)} s (${(size / seconds).toFixed(1)} MB/s); server RSS ${before.toFixed(0)} → peak ${top.toFixed(0)} MB (+${(top - before).toFixed(0)} MB)`,
        )
        log(line(`  GET /api/app/me meanwhile`, during, idle))
      }
      log(line('  GET /api/app/me, the server idle (baseline)', idle))
      const fresh = new Person(from.url)
      await fresh.signUp()
      await download(from.url, fresh, fresh.orgId, small)
    } finally {
      await from.stop()
    }

    // Import, into an empty organisation of another server over a fresh database.
    const to = await startProcess({
      ...target.env,
      ...SERVER_OPTIONS,
      HTTP_REQUEST_TIMEOUT_MS: '3600000',
      IMPORT_MAX_BYTES: String(4 * 1024 * 1024 * 1024),
    })
    try {
      // A first, small import runs the code once (compiled, the compaction thread started):
      // the growth measured next is a running server's.
      const first = new Person(to.url)
      await first.signUp()
      const warm0 = await rssMb(to.child.pid)
      await importInto(to.url, first, small)
      log(
        `a first, small import (a new organisation's): server RSS ${warm0.toFixed(0)} → ${(await rssMb(to.child.pid)).toFixed(0)} MB`,
      )
      const person = new Person(to.url)
      await person.signUp()
      const idle = await idleProbe(to.url, person)
      const before = await rssMb(to.child.pid)
      const peak = sampler(to.child.pid)
      const probe = prober(to.url, first)
      const i0 = performance.now()
      const answer = await importInto(to.url, person, file)
      const seconds = (performance.now() - i0) / 1000
      const top = await peak.stop()
      const during = await probe.stop()
      const size = (await stat(file)).size / 1024 / 1024
      log(
        `import: ${size.toFixed(1)} MB in ${seconds.toFixed(1)} s (${(size / seconds).toFixed(1)} MB/s); server RSS ${before.toFixed(0)} → peak ${top.toFixed(0)} MB (+${(top - before).toFixed(0)} MB); ${answer.counts?.archived} archived, ${answer.counts?.comments} comments, ${answer.counts?.files} files`,
      )
      log(line('  GET /api/app/me meanwhile', during, idle))
      log(line('  GET /api/app/me, the server idle (baseline)', idle))
    } finally {
      await to.stop()
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
    await source.drop()
    await target.drop()
  }
}
