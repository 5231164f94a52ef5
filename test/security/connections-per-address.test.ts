import { request } from 'node:http'
import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { loadConfig } from '../../server/config.ts'
import { startServer, type TestServer } from '../support/server.ts'

const CAP = 5

function open(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => resolve(socket))
    socket.on('error', reject)
  })
}

/** One request on a connection of its own (fetch would reuse one from its pool). */
function once(
  url: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        agent: false,
        method: body === undefined ? 'GET' : 'POST',
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
      },
      (res) => {
        let text = ''
        res.on('data', (d: Buffer) => {
          text += d.toString()
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
      },
    )
    req.on('error', reject)
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })
}

/** What the server says to a connection that sent nothing, up to its close. */
function readUntilClose(socket: Socket): Promise<string> {
  let text = ''
  socket.on('data', (d: Buffer) => {
    text += d.toString()
  })
  return new Promise((resolve) => socket.on('close', () => resolve(text)))
}

describe('open connections are capped per remote address', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer('pglite', { maxConnectionsPerAddress: CAP })
  })
  afterAll(() => server.close())

  test('defaults: 256 per address; none behind a trusted proxy (every client shares its address) unless set', () => {
    expect(loadConfig({}).maxConnectionsPerAddress).toBe(256)
    expect(loadConfig({ TRUST_PROXY: '1' }).maxConnectionsPerAddress).toBe(0)
    expect(
      loadConfig({ TRUST_PROXY: '1', MAX_CONNECTIONS_PER_ADDRESS: '2000' })
        .maxConnectionsPerAddress,
    ).toBe(2000)
  })

  test('beyond the cap a connection is answered 503 naming the limit and closed; one freed slot serves again', async () => {
    const held = await Promise.all(Array.from({ length: CAP }, () => open(server.url)))
    // Every connection above is served: none was left over from an earlier request.
    const refused = await open(server.url)
    const reply = await readUntilClose(refused)
    expect(reply).toMatch(/^HTTP\/1\.1 503/)
    expect(reply).toMatch(/retry-after: \d+/i)
    const body = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))
    expect(body.error).toMatch(/5 open connections/)

    const viaHttp = await once(server.url, '/healthz')
    expect(viaHttp.status).toBe(503)

    const first = held.shift() as Socket
    const gone = new Promise((r) => first.on('close', r))
    first.destroy()
    await gone
    // The server sees the close a moment after the client: poll rather than sleep.
    const deadline = Date.now() + 5_000
    let status = 0
    while (Date.now() < deadline) {
      status = (await once(server.url, '/healthz')).status
      if (status === 200) break
    }
    expect(status).toBe(200)
    for (const s of held) s.destroy()
  })

  test('a refused connection never reaches the service: the request it carried is not run', async () => {
    const held = await Promise.all(Array.from({ length: CAP }, () => open(server.url)))
    try {
      const res = await once(server.url, '/api/app/signup', {
        email: 'refused@example.test',
        password: 'correct horse battery',
        name: 'R',
        organizationName: 'R',
      })
      expect(res.status).toBe(503)
    } finally {
      for (const s of held) s.destroy()
    }
    const rows = await server.storage.db.query('select 1 from users where email = $1', [
      'refused@example.test',
    ])
    expect(rows).toEqual([])
  })
})
