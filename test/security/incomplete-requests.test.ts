import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { loadConfig } from '../../server/config.ts'
import { startServer, type TestServer } from '../support/server.ts'

const HEADERS_MS = 400
const REQUEST_MS = 800
/** What the server may take beyond a timeout: it checks its connections periodically. */
const SLACK_MS = 1_500

interface Held {
  socket: Socket
  /** What the server wrote before closing, and how long after connecting it closed. */
  closed: Promise<{ reply: string; afterMs: number }>
}

/** A raw TCP connection that sends `bytes` and then nothing more. */
function hold(url: string, bytes: string): Held {
  const { hostname, port } = new URL(url)
  const started = Date.now()
  const socket = connect(Number(port), hostname, () => {
    if (bytes) socket.write(bytes)
  })
  let reply = ''
  socket.on('data', (d: Buffer) => {
    reply += d.toString()
  })
  socket.on('error', () => {})
  const closed = new Promise<{ reply: string; afterMs: number }>((resolve) => {
    socket.on('close', () => resolve({ reply, afterMs: Date.now() - started }))
  })
  return { socket, closed }
}

describe('an HTTP request that never completes is closed (slowloris)', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer('pglite', {
      httpHeadersTimeoutMs: HEADERS_MS,
      httpRequestTimeoutMs: REQUEST_MS,
      maxConnectionsPerAddress: 0,
    })
  })
  afterAll(() => server.close())

  test('defaults: headers within 10 s, the whole request within 30 s', () => {
    const config = loadConfig({})
    expect(config.httpHeadersTimeoutMs).toBe(10_000)
    expect(config.httpRequestTimeoutMs).toBe(30_000)
    expect(loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '5000' }).httpHeadersTimeoutMs).toBe(5_000)
  })

  test('headers that stop half-way are answered 408 and closed once the headers timeout passes', async () => {
    const { reply, afterMs } = await hold(server.url, 'GET /api/app/me HTTP/1.1\r\nHost: x\r\n')
      .closed
    expect(reply).toMatch(/^HTTP\/1\.1 408/)
    expect(afterMs).toBeGreaterThanOrEqual(HEADERS_MS - 50)
    expect(afterMs).toBeLessThan(HEADERS_MS + SLACK_MS)
  })

  test('a connection that sends nothing at all is closed just the same', async () => {
    const { afterMs } = await hold(server.url, '').closed
    expect(afterMs).toBeLessThan(HEADERS_MS + SLACK_MS)
  })

  test('a body that never arrives in full is closed once the request timeout passes', async () => {
    const { reply, afterMs } = await hold(
      server.url,
      'POST /api/agent HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"act',
    ).closed
    expect(reply).toMatch(/408/)
    expect(afterMs).toBeLessThan(REQUEST_MS + SLACK_MS)
  })

  test('300 incomplete requests held open at once are all closed', async () => {
    const held = Array.from({ length: 300 }, (_, i) =>
      hold(server.url, `GET /healthz?${i} HTTP/1.1\r\nHost: x\r\nX-Slow: `),
    )
    const results = await Promise.all(held.map((h) => h.closed))
    for (const r of results) expect(r.afterMs).toBeLessThan(HEADERS_MS + SLACK_MS * 2)
    const res = await fetch(`${server.url}/healthz`)
    expect(res.status).toBe(200)
  })

  test('a complete request is answered as usual, and its keep-alive connection is not cut mid-answer', async () => {
    for (let i = 0; i < 3; i++) {
      expect((await fetch(`${server.url}/healthz`)).status).toBe(200)
    }
  })
})
