import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { loadConfig } from '../../server/config.ts'
import { boardDocName } from '../../shared/board-doc.ts'
import { connectProvider, Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import {
  authMessage,
  isAuthenticated,
  nextMessage,
  openSocket,
  syncMessageOfSize,
} from './support.ts'

const AUTH_MS = 500
const SLACK_MS = 1_500

describe('a live-sync WebSocket that authenticates no document is closed', () => {
  let server: TestServer
  let owner: Person

  beforeAll(async () => {
    server = await startServer('pglite', {
      syncAuthTimeoutMs: AUTH_MS,
      maxConnectionsPerAddress: 0,
    })
    owner = new Person(server.url)
    await owner.signUp()
  })
  afterAll(() => server.close())

  test('default: 15 seconds', () => {
    expect(loadConfig({}).syncAuthTimeoutMs).toBe(15_000)
    expect(loadConfig({ SYNC_AUTH_TIMEOUT_MS: '3000' }).syncAuthTimeoutMs).toBe(3_000)
  })

  test('a socket that sends nothing is closed (4408) once the time passes', async () => {
    const s = openSocket(server.url)
    await s.opened
    const { code, at } = await s.closed
    expect(code).toBe(4408)
    expect(at - s.openedAt()).toBeGreaterThanOrEqual(AUTH_MS - 50)
    expect(at - s.openedAt()).toBeLessThan(AUTH_MS + SLACK_MS)
  })

  test('traffic does not keep it open: a socket sending messages for documents it never authenticates is closed on time', async () => {
    const s = openSocket(server.url)
    await s.opened
    const timer = setInterval(() => s.ws.send(syncMessageOfSize('not/authenticated', 64)), 50)
    const { code, at } = await s.closed
    clearInterval(timer)
    expect(code).toBe(4408)
    expect(at - s.openedAt()).toBeLessThan(AUTH_MS + SLACK_MS)
  })

  test('a refused token does not count as authenticated', async () => {
    const s = openSocket(server.url)
    await s.opened
    s.ws.send(authMessage(boardDocName(owner.orgId), 'not a token'))
    const { code } = await s.closed
    expect(code).toBe(4408)
  })

  test('500 such sockets held at once are all closed', async () => {
    const sockets = Array.from({ length: 500 }, () => openSocket(server.url))
    await Promise.all(sockets.map((s) => s.opened))
    const closed = await Promise.all(sockets.map((s) => s.closed))
    for (const [i, c] of closed.entries()) {
      expect(c.code).toBe(4408)
      expect(c.at - (sockets[i]?.openedAt() ?? 0)).toBeLessThan(AUTH_MS + SLACK_MS * 2)
    }
  })

  test('a socket that authenticated a document stays open past the deadline, and keeps syncing', async () => {
    const token = await owner.syncToken()
    const raw = openSocket(server.url)
    await raw.opened
    const authenticated = nextMessage(raw.ws, isAuthenticated)
    raw.ws.send(authMessage(boardDocName(owner.orgId), token))
    await authenticated
    const provider = await connectProvider(server.url, boardDocName(owner.orgId), token)
    try {
      // Two unauthenticated sockets opened after these run out their time one after the
      // other: by then both authenticated sockets are older than twice the deadline.
      for (let i = 0; i < 2; i++) {
        const probe = openSocket(server.url)
        await probe.opened
        expect((await probe.closed).code).toBe(4408)
      }
      expect(raw.ws.readyState).toBe(WebSocket.OPEN)
      expect(provider.provider.isSynced).toBe(true)
      expect(provider.socket.status).toBe('connected')
    } finally {
      provider.destroy()
      raw.ws.close()
    }
  })
})
