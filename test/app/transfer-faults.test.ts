import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { connect } from 'node:net'
import { gunzipSync, gzipSync } from 'node:zlib'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest'
import { Agent, eventuallyAsync, Person } from '../support/client.ts'
import { seededOrg } from '../support/fixtures.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/**
 * Exports and imports meet the faults of the outside: an upload or a download cut off half
 * way, the database going away while one runs, a record larger than an import may hold in
 * memory. Each time the answer names the problem (or the download is cut, never complete-
 * looking), nothing is written, the organisation is not left locked, and the server goes
 * on serving.
 */

async function upload(person: Person, bytes: Buffer) {
  const res = await fetch(`${person.url}/api/app/orgs/${person.orgId}/import`, {
    method: 'POST',
    headers: { cookie: person.cookie, 'content-type': 'application/octet-stream' },
    body: new Uint8Array(bytes),
  })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : undefined }
}

/** An upload of `bytes` that sends the first `sent` and then waits: `finish` sends the rest, `cut` drops the connection. */
function partialUpload(person: Person, bytes: Buffer, sent: number) {
  const handle = {
    answer: undefined as unknown as Promise<{ status: number; body: string } | Error>,
    finish: () => {},
    cut: () => {},
  }
  handle.answer = new Promise<{ status: number; body: string } | Error>((resolve) => {
    const req = request(
      `${person.url}/api/app/orgs/${person.orgId}/import`,
      {
        method: 'POST',
        headers: {
          cookie: person.cookie,
          'content-type': 'application/octet-stream',
          'content-length': String(bytes.length),
        },
      },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => {
          body += c
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
        res.on('error', resolve)
      },
    )
    req.on('error', resolve)
    req.write(bytes.subarray(0, sent))
    handle.finish = () => req.end(bytes.subarray(sent))
    handle.cut = () => req.destroy()
  })
  return handle
}

/**
 * Two requests written back to back on one connection (the second after the first's whole
 * body): the answers read from it, as many as came within `ms`. The second is answered only
 * if the server read the first's body to its end.
 */
async function twoOnOneConnection(
  url: string,
  first: { head: string; body: Buffer },
  second: string,
  ms: number,
): Promise<string[]> {
  const { hostname, port } = new URL(url)
  const socket = connect(Number(port), hostname)
  let text = ''
  socket.setEncoding('latin1')
  socket.on('data', (c: string) => {
    text += c
  })
  socket.on('error', () => {})
  socket.write(first.head)
  socket.write(first.body)
  socket.write(second)
  const deadline = Date.now() + ms
  while (Date.now() < deadline && text.split('HTTP/1.1 ').length - 1 < 2 && !socket.destroyed) {
    await new Promise((r) => setTimeout(r, 20))
  }
  socket.destroy()
  return text.split(/(?=HTTP\/1\.1 )/).filter((a) => a.startsWith('HTTP/1.1 '))
}

/**
 * Waits until an import has written part of the archive and waits for the rest: on
 * Postgres, its connection is the one in a transaction holding an id; returns its pid. On
 * PGlite (one connection, which the open transaction holds) there is nothing to ask: a
 * moment's wait.
 */
async function underway(server: TestServer): Promise<number | undefined> {
  if (server.storage.db.kind !== 'postgres') {
    await new Promise((r) => setTimeout(r, 500))
    return undefined
  }
  const [backend] = await eventuallyAsync(async () => {
    const rows = await server.storage.db.query<{ pid: number }>(
      `select pid from pg_stat_activity
        where datname = current_database() and pid <> pg_backend_pid()
          and state like 'idle in transaction%' and backend_xid is not null`,
    )
    return rows.length === 1 ? rows : undefined
  })
  return backend?.pid
}

/** What the organisation holds, in rows: 0 for one nothing was imported into. */
async function rowsOf(server: TestServer, orgId: string): Promise<number> {
  const [row] = await server.storage.db.query<{ n: number }>(
    `select (select count(*) from task_texts where org_id = $1)
          + (select count(*) from comments where org_id = $1)
          + (select count(*) from archived_tasks where org_id = $1)
          + (select count(*) from files where org_id = $1)
          + (select count(*) from maps where org_id = $1) as n`,
    [orgId],
  )
  return Number(row?.n)
}

describe.each(STORAGES)('an import meets faults (%s)', (kind) => {
  let from: TestServer
  let archive: Buffer
  /** A server of its own for each test: an archive's ids import once per server. */
  let to: TestServer

  beforeAll(async () => {
    from = await startServer(kind)
    const { owner, agent, backlog, done } = await seededOrg(from.url)
    // Enough that half the archive is a part of it, not all: descriptions that do not compress.
    for (let i = 0; i < 40; i++) {
      const { task } = await agent.ok('create_task', {
        columnId: i % 2 ? backlog : done,
        title: `Card ${i}`,
        description: randomBytes(1500).toString('base64'),
      })
      await agent.ok('add_comment', { taskId: task.id, body: `comment on ${i}` })
      if (i % 4 === 0) await agent.ok('archive_task', { taskId: task.id })
    }
    const res = await fetch(`${from.url}/api/app/orgs/${owner.orgId}/export`, {
      headers: { cookie: owner.cookie },
    })
    expect(res.status).toBe(200)
    archive = Buffer.from(await res.arrayBuffer())
  }, 120_000)
  afterAll(async () => {
    await from?.close()
  })
  beforeEach(async () => {
    to = await startServer(kind)
  })
  afterEach(async () => {
    await to?.close()
  })

  test('an upload cut off half way writes nothing, leaves the organisation unlocked, and the whole archive imports afterwards', async () => {
    const person = new Person(to.url)
    await person.signUp()
    const partial = partialUpload(person, archive, Math.floor(archive.length / 2))
    await underway(to)
    partial.cut()
    await partial.answer
    expect(await rowsOf(to, person.orgId)).toBe(0)
    const reader = new Agent(to.url, await person.createKey('check'))
    expect((await reader.ok('get_board')).tasks).toEqual([])
    const whole = await upload(person, archive)
    expect(whole.status, JSON.stringify(whole.body)).toBe(200)
    expect(whole.body.counts.cards).toBe(30)
    expect((await reader.ok('get_board')).tasks).toHaveLength(30)
  })

  test('a large archive refused at its first entry gets its answer naming the problem, not a cut connection; nothing is written', async () => {
    const person = new Person(to.url)
    await person.signUp()
    const now = new Date().toISOString()
    const org = JSON.stringify({
      format: 'corkboard-export',
      version: 99,
      id: crypto.randomUUID(),
      name: 'From the future',
      createdAt: now,
      exportedAt: now,
    })
    // 8 MB that do not compress follow the entry the import refuses.
    const bytes = gzipSync(
      tar([
        ['organization.json', Buffer.from(org)],
        ['files/00000000-0000-4000-8000-000000000000.png', randomBytes(8 * 1024 * 1024)],
      ]),
    )
    // The refusal is sent, and the rest of the body read and dropped: the connection then
    // serves the request that follows on it.
    const answers = await twoOnOneConnection(
      to.url,
      {
        head: `POST /api/app/orgs/${person.orgId}/import HTTP/1.1\r\nHost: x\r\nCookie: ${person.cookie}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${bytes.length}\r\n\r\n`,
        body: bytes,
      },
      `GET /api/app/me HTTP/1.1\r\nHost: x\r\nCookie: ${person.cookie}\r\n\r\n`,
      20_000,
    )
    expect(answers).toHaveLength(2)
    expect(answers[0]).toMatch(
      /^HTTP\/1\.1 400 [\s\S]*format version 99; this server reads version 1/,
    )
    expect(answers[1]).toMatch(/^HTTP\/1\.1 200 /)
    expect(await rowsOf(to, person.orgId)).toBe(0)
    expect((await upload(person, archive)).status).toBe(200)
  })

  test.runIf(kind === 'postgres')(
    "an import's memory is bounded on its thread: a record beyond it (one card with 300,000 comments) is refused with 413 saying so, nothing is written, and the server goes on serving",
    async () => {
      const person = new Person(to.url)
      await person.signUp()
      const now = new Date().toISOString()
      const org = JSON.stringify({
        format: 'corkboard-export',
        version: 1,
        id: crypto.randomUUID(),
        name: 'Huge',
        createdAt: now,
        exportedAt: now,
      })
      const comment = (i: number) =>
        `{"id":"${crypto.randomUUID()}","body":"comment ${i}","authorEmail":"a@example.com","agentName":null,"createdAt":"${now}","editedAt":null}`
      const comments = Array.from({ length: 300_000 }, (_, i) => comment(i)).join(',')
      // One line of ~45 MB: within the 64 MB an entry of the format may hold.
      const line = `{"id":"${crypto.randomUUID()}","card":{},"title":"x","description":"","comments":[${comments}],"attachments":[]}\n`
      const res = await upload(
        person,
        gzipSync(
          tar([
            ['organization.json', Buffer.from(org)],
            ['cards/000000.jsonl', Buffer.from(line)],
          ]),
        ),
      )
      expect(res.status, JSON.stringify(res.body)).toBe(413)
      expect(res.body.error).toMatch(/a record larger than an import can read.*nothing was written/)
      expect(await rowsOf(to, person.orgId)).toBe(0)
      const whole = await upload(person, archive)
      expect(whole.status, JSON.stringify(whole.body)).toBe(200)
    },
    120_000,
  )

  test.runIf(kind === 'postgres')(
    "the database going away while an import's transaction is open: 503 saying so, nothing written, and the next import succeeds",
    async () => {
      const person = new Person(to.url)
      await person.signUp()
      const partial = partialUpload(person, archive, Math.floor(archive.length / 2))
      await to.storage.db.query('select pg_terminate_backend($1)', [await underway(to)])
      partial.finish()
      const answer = await partial.answer
      if (answer instanceof Error) throw answer
      expect(answer.status, answer.body).toBe(503)
      expect(JSON.parse(answer.body).error).toMatch(
        /database is not answering; nothing was written/,
      )
      expect(await rowsOf(to, person.orgId)).toBe(0)
      const whole = await upload(person, archive)
      expect(whole.status, JSON.stringify(whole.body)).toBe(200)
    },
    60_000,
  )
})

/** A ustar archive of the entries, in order (regular files). */
function tar(entries: [string, Buffer][]): Buffer {
  const blocks: Buffer[] = []
  for (const [name, bytes] of entries) {
    const header = Buffer.alloc(512)
    header.write(name, 0, 100, 'utf8')
    header.write('0000644\0', 100)
    header.write('0000000\0', 108)
    header.write('0000000\0', 116)
    header.write(`${bytes.length.toString(8).padStart(11, '0')}\0`, 124)
    header.write(
      `${Math.floor(Date.now() / 1000)
        .toString(8)
        .padStart(11, '0')}\0`,
      136,
    )
    header.write('        ', 148)
    header.write('0', 156)
    header.write('ustar\0', 257)
    header.write('00', 263)
    let sum = 0
    for (const b of header) sum += b
    header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148)
    blocks.push(header, bytes, Buffer.alloc((512 - (bytes.length % 512)) % 512))
  }
  blocks.push(Buffer.alloc(1024))
  return Buffer.concat(blocks)
}

/**
 * fetch, sent once more when a kept-alive connection it reused was closed by the server at
 * that very moment (ECONNRESET before any answer): what every HTTP client does.
 */
async function fetchAgain(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init)
  } catch (error) {
    const code = ((error as Error).cause as { code?: string } | undefined)?.code
    if (code !== 'ECONNRESET' || init.signal?.aborted) throw error
    return fetch(url, init)
  }
}

describe.each(STORAGES)('an export meets faults (%s)', (kind) => {
  let server: TestServer
  let owner: Person

  beforeAll(async () => {
    server = await startServer(kind)
    const seeded = await seededOrg(server.url)
    owner = seeded.owner
    for (let i = 0; i < 100; i++) {
      await seeded.agent.ok('create_task', {
        columnId: seeded.backlog,
        title: `Card ${i}`,
        description: randomBytes(1_000).toString('base64'),
      })
    }
    // 32 MB of stored files that do not compress: far more than fits in flight between the
    // threads and in the sockets' buffers, so a download read slowly is one the export
    // waits for, and storage is still being read when the database goes away.
    for (let i = 0; i < 128; i++) {
      await server.storage.db.query(
        `insert into files (id, org_id, visibility, mime_type, extension, size, sha256, data)
         values ($1, $2, 'private', 'image/png', 'png', $3, encode(sha256($4), 'hex'), $4)`,
        [crypto.randomUUID(), owner.orgId, 256 * 1024, randomBytes(256 * 1024)],
      )
    }
  }, 120_000)
  afterAll(async () => {
    await server?.close()
  })

  /** A download begun: its first bytes read, the rest waiting. */
  async function begun(controller: AbortController) {
    const res = await fetchAgain(`${server.url}/api/app/orgs/${owner.orgId}/export`, {
      headers: { cookie: owner.cookie },
      signal: controller.signal,
    })
    expect(res.status).toBe(200)
    const reader = (res.body as ReadableStream<Uint8Array>).getReader()
    const first = await reader.read()
    expect(first.done).toBe(false)
    return { reader, first: first.value as Uint8Array }
  }

  /** A whole download: a gzip that ends, whose tar ends with the manifest. */
  async function whole(): Promise<void> {
    const res = await fetchAgain(`${server.url}/api/app/orgs/${owner.orgId}/export`, {
      headers: { cookie: owner.cookie },
    })
    expect(res.status).toBe(200)
    const tar = gunzipSync(Buffer.from(await res.arrayBuffer()))
    expect(tar.includes(Buffer.from('manifest.json'))).toBe(true)
    expect(tar.includes(Buffer.from('Card 99'))).toBe(true)
  }

  /** The database's connections other than the test's own. */
  const connections = async () =>
    (
      await server.storage.db.query<{ n: number }>(
        `select count(*)::int as n from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid()`,
      )
    )[0]?.n ?? 0

  test('a download cut part way stops its export (on Postgres, its thread lets its connection go), and the next download is whole', async () => {
    const before = kind === 'postgres' ? await connections() : 0
    const controller = new AbortController()
    await begun(controller)
    if (kind === 'postgres') expect(await connections()).toBeGreaterThan(before)
    controller.abort()
    if (kind === 'postgres') {
      await eventuallyAsync(async () => ((await connections()) <= before ? true : undefined))
    }
    await whole()
  })

  test.runIf(kind === 'postgres')(
    'the database going away during an export either cuts the download or, the driver having reconnected, completes it whole: never a complete-looking archive that is not; the next download is whole',
    async () => {
      const { reader, first } = await begun(new AbortController())
      await server.storage.db.query(
        `select pg_terminate_backend(pid) from pg_stat_activity
          where datname = current_database() and pid <> pg_backend_pid()`,
      )
      const received = [Buffer.from(first)]
      let failed = false
      try {
        for (;;) {
          const next = await reader.read()
          if (next.done) break
          received.push(Buffer.from(next.value))
        }
      } catch {
        failed = true
      }
      if (failed) {
        // Cut: what arrived is not an archive a tool would take for whole.
        expect(() => gunzipSync(Buffer.concat(received))).toThrow()
      } else {
        // The export's next page went out on a new connection: the archive is whole.
        const tar = gunzipSync(Buffer.concat(received))
        expect(tar.includes(Buffer.from('manifest.json'))).toBe(true)
        expect(tar.includes(Buffer.from('Card 99'))).toBe(true)
      }
      await eventuallyAsync(async () => {
        const res = await fetchAgain(`${server.url}/api/app/orgs/${owner.orgId}/export`, {
          headers: { cookie: owner.cookie },
        })
        await res.arrayBuffer()
        return res.status === 200 ? true : undefined
      }, 20_000)
      await whole()
    },
    60_000,
  )
})
