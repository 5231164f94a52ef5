import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { loadConfig } from '../../server/config.ts'
import { boardDocName } from '../../shared/board-doc.ts'
import { Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import {
  authMessage,
  isAuthenticated,
  nextMessage,
  openSocket,
  syncMessageOfSize,
} from './support.ts'

describe('a live-sync message above the maximum closes the socket (1009)', () => {
  let server: TestServer
  let small: TestServer

  beforeAll(async () => {
    server = await startServer('pglite')
    small = await startServer('pglite', { syncMaxMessageBytes: 64 * 1024 })
  })
  afterAll(async () => {
    await server.close()
    await small.close()
  })

  test('default: 4 MiB', () => {
    expect(loadConfig({}).syncMaxMessageBytes).toBe(4 * 1024 * 1024)
  })

  test.each([20, 50])('a %i MB message is refused with 1009 under the default', async (mb) => {
    const s = openSocket(server.url)
    await s.opened
    s.ws.send(new Uint8Array(mb * 1_000_000))
    expect((await s.closed).code).toBe(1009)
  })

  test('a message of exactly the maximum is taken, and the socket goes on to authenticate; one byte more is refused', async () => {
    const owner = new Person(small.url)
    await owner.signUp()
    const s = openSocket(small.url)
    await s.opened
    s.ws.send(syncMessageOfSize('some/other-document', 64 * 1024))
    const authenticated = nextMessage(s.ws, isAuthenticated)
    s.ws.send(authMessage(boardDocName(owner.orgId), await owner.syncToken()))
    await authenticated
    s.ws.send(syncMessageOfSize('some/other-document', 64 * 1024 + 1))
    expect((await s.closed).code).toBe(1009)
  })
})
