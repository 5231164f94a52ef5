import { randomUUID } from 'node:crypto'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { mapDocName } from '../../shared/board-doc.ts'
import {
  type Agent,
  connectProvider,
  drawNode,
  eventuallyAsync,
  ownerWithAgent,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { startProcess } from '../support/service-process.ts'

/**
 * A database that is there but busy: a row another transaction holds past the lock
 * timeout. Real Postgres only: PGlite runs one connection, so nothing there ever waits for
 * a lock. The lock timeout is shortened to one second so that a wait that never ends on
 * its own (the deadlock below, before its fix) ends within the test.
 */
const LOCK_TIMEOUT_MS = 1_000
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('a busy database (Postgres)', () => {
  let server: TestServer
  let agent: Agent
  let owner: Awaited<ReturnType<typeof ownerWithAgent>>['owner']
  let admin: postgres.Sql

  beforeAll(async () => {
    server = await startServer('postgres', { dbLockTimeoutMs: LOCK_TIMEOUT_MS })
    ;({ agent, owner } = await ownerWithAgent(server.url))
    admin = postgres(server.storage.url as string, { max: 2, onnotice: () => {} })
  }, 30_000)
  afterAll(async () => {
    await admin?.end()
    await server?.close()
  })

  const newMapWithNode = async () => {
    const { map } = await agent.ok('create_map', { title: 'Plans' })
    const { node } = await agent.ok('create_node', { mapId: map.id, text: 'first' })
    return { map, node }
  }

  test('a write whose row stays locked past the lock timeout is a 503 with Retry-After saying nothing was written, and the same write sent again succeeds', async () => {
    const { map, node } = await newMapWithNode()
    const holder = await admin.reserve()
    try {
      await holder`begin`
      await holder`select 1 from maps where id = ${map.id} for update`
      const refused = await agent.call('update_node', { nodeId: node.id, text: 'changed' })
      expect(refused.status).toBe(503)
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
      expect(refused.body.error).toMatch(/database is busy.*nothing was written/)
      // A write after it on the same lane, while the row is still held: refused alike, not a 500.
      const next = await agent.call('update_node', { nodeId: node.id, text: 'changed again' })
      expect(next.status).toBe(503)
    } finally {
      await holder`rollback`
      holder.release()
    }
    const read = await agent.ok('get_map', { mapId: map.id })
    expect(read.nodes.map((n: { text: string }) => n.text)).toEqual(['first'])
    const retried = await agent.ok('update_node', { nodeId: node.id, text: 'changed' })
    expect(retried.node.text).toBe('changed')
    const after = await agent.ok('get_map', { mapId: map.id })
    expect(after.nodes.map((n: { text: string }) => n.text)).toEqual(['changed'])
  })

  test('a write refused because the database was busy is logged as a warning naming the write, not as a fault', async () => {
    // The service as it runs, logging at LOG_LEVEL=warn, on the same database.
    const service = await startProcess({
      DATABASE_URL: server.storage.url as string,
      DB_LOCK_TIMEOUT_MS: String(LOCK_TIMEOUT_MS),
      LOG_LEVEL: 'warn',
    })
    const holder = await admin.reserve()
    try {
      const { agent: there, owner: person } = await ownerWithAgent(service.url)
      const { map } = await there.ok('create_map', { title: 'Plans' })
      const { node } = await there.ok('create_node', { mapId: map.id, text: 'first' })
      await holder`begin`
      await holder`select 1 from maps where id = ${map.id} for update`
      const refused = await there.call('update_node', { nodeId: node.id, text: 'changed' })
      expect(refused.status).toBe(503)
      await holder`rollback`
      const lines = service
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { level: string; msg: string })
      expect(lines).toContainEqual(
        expect.objectContaining({ level: 'warn', msg: `a write of ${person.orgId} failed` }),
      )
      expect(lines.filter((l) => l.level === 'error')).toEqual([])
    } finally {
      await holder`rollback`
      holder.release()
      await service.stop()
    }
  })

  test("an agent's write to a map while people's edits of it are being stored waits for them, rather than lock the map's row they need (no deadlock until the lock timeout)", async () => {
    const { map, node } = await newMapWithNode()
    const docName = mapDocName(owner.orgId, map.id)
    const live = await connectProvider(server.url, docName, await owner.syncToken())
    const holder = await admin.reserve()
    try {
      // Held here, the generation lock stops the store of the person's edit (it takes it,
      // shared, before it moves the map's updated_at) while it is on its way.
      await holder`begin`
      await holder`select pg_advisory_xact_lock(hashtext(${`generation:${docName}`}))`
      const drawn = randomUUID()
      drawNode(live.doc, drawn, 'drawn by hand')
      await eventuallyAsync(async () => {
        const [row] = await admin`select count(*)::int as n from pg_stat_activity
          where datname = current_database() and wait_event_type = 'Lock'
            and wait_event = 'advisory'`
        return (row?.n ?? 0) > 0 ? true : undefined
      }, 10_000)
      // The agent's write comes while the person's edit waits to be stored.
      const write = agent.call('update_node', { nodeId: node.id, text: 'edited by an agent' })
      await sleep(300)
      await holder`rollback`
      const answer = await write
      expect(answer.status, JSON.stringify(answer.body)).toBe(200)
      const read = await agent.ok('get_map', { mapId: map.id })
      expect(new Set(read.nodes.map((n: { text: string }) => n.text))).toEqual(
        new Set(['edited by an agent', 'drawn by hand']),
      )
    } finally {
      await holder`rollback`
      holder.release()
      live.destroy()
    }
  })
})
