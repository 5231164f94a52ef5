import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { openDb } from '../../persistence/db.ts'
import { recordWrites, type WriteRecord } from '../../server/live/write-record.ts'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { Agent, connectProvider, eventually, Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function keyWithId(owner: Person, name: string) {
  const res = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, { name })
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status}`)
  return { id: res.body.apiKey.id as string, agent: new Agent(owner.url, res.body.key) }
}

const revoke = (owner: Person, keyId: string) =>
  owner.request('DELETE', `/api/app/orgs/${owner.orgId}/api-keys/${keyId}`)

/**
 * The statement that stores what live writes record (persistence/migrations/007): every
 * storage must take writes in order up to the first whose key is revoked.
 */
describe.each(STORAGES)('record_writes stores writes in order up to a revoked key (%s)', (kind) => {
  let server: TestServer
  let owner: Person

  beforeAll(async () => {
    server = await startServer(kind)
    owner = new Person(server.url)
    await owner.signUp()
  })
  afterAll(() => server.close())

  const record = (
    keyId: string,
    entityId: string,
    event?: string,
    doc = `${owner.orgId}/board-contract-${kind}`,
  ): WriteRecord => ({
    updates: [{ doc, update: new Uint8Array([1, 2, 3]), generation: 0 }],
    keyId,
    changes: [{ kind: 'task', entityId }],
    ops: [
      {
        t: 'comment',
        id: entityId,
        rec: {
          taskId: entityId,
          body: 'recorded with its write',
          authorEmail: 'key@agents.example.test',
          agentName: null,
          createdAt: new Date().toISOString(),
          editedAt: null,
        },
      },
    ],
    events: event
      ? {
          rows: [{ id: event, type: 'card.created', payload: JSON.stringify({ id: event }) }],
          createdAt: new Date(),
        }
      : undefined,
  })
  const ids = () => Array.from({ length: 4 }, () => crypto.randomUUID())

  test('writes before the first revoked key are stored with their rows; it and every later one are not', async () => {
    const good = await keyWithId(owner, 'good')
    const bad = await keyWithId(owner, 'bad')
    await revoke(owner, bad.id)
    const hook = await owner.request('POST', `/api/app/orgs/${owner.orgId}/webhooks`, {
      url: 'https://hooks.example.com/in',
      events: ['card.created'],
    })
    expect(hook.status).toBe(201)
    const docName = `${owner.orgId}/board-contract-${kind}`
    const tasks = ids()
    const events = ids()
    const recorded = await recordWrites(
      server.storage.db,
      { orgId: owner.orgId, allOrNothing: false },
      [
        record(good.id, tasks[0] as string, events[0]),
        record(good.id, tasks[1] as string, events[1]),
        record(bad.id, tasks[2] as string, events[2]),
        record(good.id, tasks[3] as string, events[3]),
      ],
    )
    expect(recorded.stored).toBe(2)
    expect(recorded.deliveryIds).toHaveLength(2)
    const updates = await server.storage.db.query(
      'select id from doc_updates where doc_name = $1',
      [docName],
    )
    expect(updates).toHaveLength(2)
    const changed = await server.storage.db.query<{ entity_id: string }>(
      'select entity_id from changes where entity_id = any($1::uuid[]) order by id',
      [tasks],
    )
    expect(changed.map((r) => r.entity_id)).toEqual(tasks.slice(0, 2))
    const comments = await server.storage.db.query<{ id: string }>(
      'select id from comments where id = any($1::uuid[])',
      [tasks],
    )
    expect(comments.map((r) => r.id).sort()).toEqual(tasks.slice(0, 2).sort())
    const stored = await server.storage.db.query<{ id: string }>(
      'select id from webhook_events where id = any($1::uuid[])',
      [events],
    )
    expect(stored.map((r) => r.id).sort()).toEqual(events.slice(0, 2).sort())
  })

  test('all or nothing: a revoked key raises CB401 and its transaction stores nothing', async () => {
    const good = await keyWithId(owner, 'good')
    const bad = await keyWithId(owner, 'bad')
    await revoke(owner, bad.id)
    const docName = `${owner.orgId}/board-strict-${kind}`
    const tasks = ids()
    const attempt = server.storage.db.transaction((tx) =>
      recordWrites(tx, { orgId: owner.orgId, allOrNothing: true }, [
        record(good.id, tasks[0] as string, undefined, docName),
        record(bad.id, tasks[1] as string, undefined, docName),
      ]),
    )
    await expect(attempt).rejects.toMatchObject({ code: 'CB401' })
    expect(
      await server.storage.db.query('select id from doc_updates where doc_name = $1', [docName]),
    ).toEqual([])
    expect(
      await server.storage.db.query('select id from changes where entity_id = any($1::uuid[])', [
        tasks,
      ]),
    ).toEqual([])
  })

  /** An Idempotency-Key row held by `attempt`, running, as a request's claim leaves it. */
  const claimed = async (keyId: string, key: string, attempt: string) => {
    const soon = new Date(Date.now() + 60_000).toISOString()
    await server.storage.db.query(
      `insert into agent_idempotency
         (key_id, idempotency_key, fingerprint, attempt, state, lease_until, expires_at)
       values ($1, $2, 'f', $3, 'running', $4, $4)`,
      [keyId, key, attempt, soon],
    )
  }
  const keyRow = async (key: string) =>
    (
      await server.storage.db.query<{ state: string; status: number | null; response: string }>(
        'select state, status, response from agent_idempotency where idempotency_key = $1',
        [key],
      )
    )[0]

  test('keyed records mark their Idempotency-Key done with their answer; the first whose key a retry took over is refused like a revoked key, it and every later one not stored', async () => {
    const { id } = await keyWithId(owner, 'keyed')
    const docName = `${owner.orgId}/board-keyed-${kind}`
    const tasks = ids()
    const keys = tasks.map((t) => `contract-${t}`)
    const attempts = ids()
    for (const [i, key] of keys.entries()) await claimed(id, key, attempts[i] as string)
    const keyed = (
      i: number,
      response: string | null,
      attempt = attempts[i] as string,
    ): WriteRecord => ({
      ...record(id, tasks[i] as string, undefined, docName),
      idempotency: { keyId: id, key: keys[i] as string, attempt, response },
    })
    const recorded = await recordWrites(
      server.storage.db,
      { orgId: owner.orgId, allOrNothing: false },
      [
        keyed(0, '{"n":0}'),
        // An answer the request stores itself: status 200, the key still running.
        keyed(1, null),
        // Its attempt no longer holds the key: a retry took it over.
        keyed(2, '{"n":2}', crypto.randomUUID()),
        keyed(3, '{"n":3}'),
      ],
    )
    expect(recorded).toMatchObject({ stored: 2, refused: 'idempotency' })
    expect(await keyRow(keys[0] as string)).toEqual({
      state: 'done',
      status: 200,
      response: '{"n":0}',
    })
    expect(await keyRow(keys[1] as string)).toEqual({
      state: 'running',
      status: 200,
      response: null,
    })
    for (const key of keys.slice(2))
      expect(await keyRow(key)).toEqual({ state: 'running', status: null, response: null })
    const changed = await server.storage.db.query<{ entity_id: string }>(
      'select entity_id from changes where entity_id = any($1::uuid[]) order by id',
      [tasks],
    )
    expect(changed.map((r) => r.entity_id)).toEqual(tasks.slice(0, 2))

    // A revoked key is still told apart: the refusal names its cause.
    const bad = await keyWithId(owner, 'revoked while keyed')
    await revoke(owner, bad.id)
    const revokedFirst = await recordWrites(
      server.storage.db,
      { orgId: owner.orgId, allOrNothing: false },
      [record(bad.id, crypto.randomUUID(), undefined, docName)],
    )
    expect(revokedFirst).toMatchObject({ stored: 0, refused: 'key' })
    const all = await recordWrites(server.storage.db, { orgId: owner.orgId, allOrNothing: false }, [
      record(id, crypto.randomUUID(), undefined, docName),
    ])
    expect(all).toMatchObject({ stored: 1, refused: undefined })
  })

  test('all or nothing: a taken-over Idempotency-Key raises CB409 and its transaction stores nothing, the earlier keys’ answers included', async () => {
    const { id } = await keyWithId(owner, 'keyed strict')
    const docName = `${owner.orgId}/board-keyed-strict-${kind}`
    const tasks = ids()
    const keys = tasks.map((t) => `strict-${t}`)
    const attempts = ids()
    for (const [i, key] of keys.slice(0, 2).entries()) await claimed(id, key, attempts[i] as string)
    const attempt = server.storage.db.transaction((tx) =>
      recordWrites(tx, { orgId: owner.orgId, allOrNothing: true }, [
        {
          ...record(id, tasks[0] as string, undefined, docName),
          idempotency: {
            keyId: id,
            key: keys[0] as string,
            attempt: attempts[0] as string,
            response: '{}',
          },
        },
        {
          ...record(id, tasks[1] as string, undefined, docName),
          idempotency: {
            keyId: id,
            key: keys[1] as string,
            attempt: crypto.randomUUID(),
            response: '{}',
          },
        },
      ]),
    )
    await expect(attempt).rejects.toMatchObject({ code: 'CB409' })
    expect(await keyRow(keys[0] as string)).toEqual({
      state: 'running',
      status: null,
      response: null,
    })
    expect(
      await server.storage.db.query('select id from changes where entity_id = any($1::uuid[])', [
        tasks,
      ]),
    ).toEqual([])
  })
})

/**
 * Group commit on Postgres: while one write commits, the writes computed meanwhile wait in
 * a batch that is stored in one statement and one transaction once it has committed.
 */
/**
 * A connection keeps its plans of record_writes' statements for its whole life, planned
 * generically with the statistics of their sixth call. Postgres only: the test reads its
 * index statistics, which PGlite does not keep.
 */
describe('record_writes finds each row it changes by its key, however small the organisation was when the connection first wrote (postgres)', () => {
  let server: TestServer
  let owner: Person

  beforeAll(async () => {
    server = await startServer('postgres')
    owner = new Person(server.url)
    await owner.signUp()
  })
  afterAll(() => server.close())

  test("a card's words are updated without reading the organisation's other cards", async () => {
    const { id: keyId } = await keyWithId(owner, 'texts')
    const text = (id: string, title: string): WriteRecord => ({
      updates: [],
      keyId,
      changes: [{ kind: 'task', entityId: id }],
      ops: [{ t: 'text', id, rec: { title, description: '', archived: false } }],
      events: undefined,
    })
    // One connection of its own, as each of the service's pool is.
    const db = await openDb({ databaseUrl: server.storage.url, maxConnections: 1 })
    try {
      const cards = Array.from({ length: 8 }, () => crypto.randomUUID())
      // The connection plans its statements while the organisation has a handful of cards.
      for (const id of cards) {
        await recordWrites(db, { orgId: owner.orgId, allOrNothing: true }, [text(id, 'small')])
      }
      // The organisation grows (no ANALYZE: the connection's plans stay).
      await db.query(
        `insert into task_texts (id, org_id, title, description, archived)
         select gen_random_uuid(), $1, 'grown', '', false from generate_series(1, 2000)`,
        [owner.orgId],
      )
      // Index entries read on task_texts: finding a card by its key reads one.
      const entriesRead = async () => {
        await db.query('select pg_stat_force_next_flush()')
        const [row] = await db.query<{ read: number }>(
          `select coalesce(sum(idx_tup_read), 0)::int as read from pg_stat_user_indexes
            where relname = 'task_texts'`,
        )
        return row?.read ?? 0
      }
      const before = await entriesRead()
      for (const id of cards) {
        await recordWrites(db, { orgId: owner.orgId, allOrNothing: true }, [text(id, 'renamed')])
      }
      // The renames reached their rows, and none read the organisation's 2,008 cards to find
      // them (a few entries a rename; the plan of the first calls read them all, each time).
      expect(await entriesRead()).toBeLessThan(before + 100)
      const renamed = await db.query<{ title: string }>(
        'select title from task_texts where id = any($1::uuid[])',
        [cards],
      )
      expect(renamed.map((r) => r.title)).toEqual(cards.map(() => 'renamed'))
    } finally {
      await db.close()
    }
  })
})

/**
 * Rows read by their ids within an organisation, as the service's prepared statements ask
 * for them: planned generically (as every connection does from a statement's sixth call),
 * each id is found through an index, never by reading the organisation's rows
 * (persistence/migrations/026).
 */
describe('a lookup by ids within an organisation reads those rows only, under a generic plan (postgres)', () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer('postgres')
  })
  afterAll(() => server.close())

  test.each([
    ['claims', 'task_id'],
    ['task_texts', 'id'],
    ['comments', 'id'],
    ['attachments', 'id'],
    ['archived_tasks', 'id'],
  ])('%s by %s', async (table, column) => {
    type Plan = { 'Node Type': string; 'Index Cond'?: string; Plans?: Plan[] }
    const db = await openDb({ databaseUrl: server.storage.url, maxConnections: 1 })
    try {
      await db.query('set plan_cache_mode = force_generic_plan')
      await db.query(
        `prepare by_ids (uuid, uuid[]) as select * from ${table} where org_id = $1 and ${column} = any($2::uuid[])`,
      )
      const [row] = await db.query<{ 'QUERY PLAN': { Plan: Plan }[] }>(
        `explain (format json) execute by_ids('${crypto.randomUUID()}', '{}')`,
      )
      const scans: Plan[] = []
      const walk = (p: Plan) => {
        if (/Scan/.test(p['Node Type'])) scans.push(p)
        for (const c of p.Plans ?? []) walk(c)
      }
      const plan = row?.['QUERY PLAN'][0]?.Plan
      if (!plan) throw new Error('EXPLAIN returned no plan')
      walk(plan)
      expect(scans.length).toBeGreaterThan(0)
      for (const scan of scans) expect(scan['Index Cond']).toContain(`${column} = ANY`)
    } finally {
      await db.close()
    }
  })
})

describe('writes computed while an earlier one commits are stored together (postgres)', () => {
  let server: TestServer
  let owner: Person

  beforeAll(async () => {
    server = await startServer('postgres', { rateLimitPerKey: 100_000 })
    // A card titled SLOW takes a second to commit: the writes sent meanwhile pile up behind it.
    await server.storage.db.query(`
      create function slow_commit() returns trigger language plpgsql as $$
      begin
        if position('SLOW'::bytea in new.data) > 0 then
          perform pg_sleep(1);
        end if;
        return new;
      end $$`)
    await server.storage.db.query(
      'create trigger slow_commit before insert on doc_updates for each row execute function slow_commit()',
    )
    owner = new Person(server.url)
    await owner.signUp()
  })
  afterAll(() => server.close())

  test('one transaction stores the batch, in the order the writes were computed, and each answered 200', async () => {
    const { agent } = await keyWithId(owner, 'writer')
    const columnId = (await agent.ok('list_columns')).columns[0].id
    // A provider takes the batch's updates in the order they were computed: each
    // integrates at once, none is held back waiting for one it was built on.
    const live = await connectProvider(
      server.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    let outOfOrder = 0
    live.doc.on('afterTransaction', () => {
      if (live.doc.store.pendingStructs !== null) outOfOrder++
    })
    const slow = agent.call('create_task', { columnId, title: 'SLOW first' })
    await sleep(100)
    const titles = Array.from({ length: 8 }, (_, i) => `batched ${i}`)
    const batched: Promise<{ status: number }>[] = []
    for (const title of titles) {
      batched.push(agent.call('create_task', { columnId, title }))
      await sleep(10)
    }
    expect((await slow).status).toBe(200)
    for (const r of await Promise.all(batched)) expect(r.status).toBe(200)

    // Rows of one transaction share its xmin; the batch's rows follow the SLOW one in the
    // order the server computed them, which is the order of its Yjs clock (the requests may
    // reach the server in another order than they were sent, so the titles say nothing).
    const rows = await server.storage.db.query<{ tx: string; data: Uint8Array }>(
      'select xmin::text as tx, data from doc_updates where doc_name = $1 order by id',
      [boardDocName(owner.orgId)],
    )
    const text = (d: Uint8Array) => Buffer.from(d).toString('latin1')
    const slowAt = rows.findIndex((r) => text(r.data).includes('SLOW first'))
    const after = rows.slice(slowAt + 1)
    expect(after.map((r) => titles.findIndex((t) => text(r.data).includes(t))).sort()).toEqual(
      titles.map((_, i) => i),
    )
    const firstClock = (d: Uint8Array) =>
      Math.min(...Y.decodeUpdate(d).structs.map((s) => s.id.clock))
    const clocks = [rows[slowAt], ...after].map((r) => firstClock((r as { data: Uint8Array }).data))
    expect(clocks).toEqual([...clocks].sort((a, b) => a - b))
    const transactions = new Set(after.map((r) => r.tx))
    expect(transactions.size).toBeLessThan(titles.length)
    expect(transactions.has(rows[slowAt]?.tx as string)).toBe(false)
    const board = await agent.ok('get_board')
    expect(board.tasks.map((t: { title: string }) => t.title)).toEqual(
      expect.arrayContaining(['SLOW first', ...titles]),
    )
    await eventually(() => boardMaps(live.doc).tasks.size >= titles.length + 1 || undefined)
    expect(outOfOrder).toBe(0)
    live.destroy()
  })

  test('a write reaches nobody before it commits: providers see it after, a read waits for it, a person editing meanwhile waits too', async () => {
    const { agent } = await keyWithId(owner, 'held')
    const columnId = (await agent.ok('list_columns')).columns[0].id
    const { task: other } = await agent.ok('create_task', { columnId, title: 'edited meanwhile' })
    const live = await connectProvider(
      server.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    const seen: string[] = []
    boardMaps(live.doc).tasks.observe((e) => {
      for (const [key, change] of e.changes.keys) if (change.action === 'add') seen.push(key)
    })
    let answered = false
    const slow = agent.call('create_task', { columnId, title: 'SLOW and held' }).then((r) => {
      answered = true
      return r
    })
    await sleep(300)
    // The write is computed (it sits in the live document) but not committed.
    expect(answered).toBe(false)
    const titles = () => [...boardMaps(live.doc).tasks.values()].map((m) => String(m.get('title')))
    expect(titles()).not.toContain('SLOW and held')
    // A person's edit sent now waits for the commit, then applies.
    boardMaps(live.doc).tasks.get(other.id)?.set('title', 'renamed by a person meanwhile')
    const read = agent.ok('get_board').then((b) => {
      expect(answered).toBe(true)
      return b
    })
    const board = await read
    expect(board.tasks.map((t: { title: string }) => t.title)).toContain('SLOW and held')
    expect((await slow).status).toBe(200)
    await eventually(() => (titles().includes('SLOW and held') ? true : undefined))
    const after = await agent.ok('get_task', { taskId: other.id })
    expect(after.task.title).toBe('renamed by a person meanwhile')
    live.destroy()
  })

  test('a key revoked while its write waits in a batch: the writes before it are stored, it answers 401, the ones built on it are refused', async () => {
    const a = await keyWithId(owner, 'stays')
    const b = await keyWithId(owner, 'revoked')
    const columnId = (await a.agent.ok('list_columns')).columns[0].id
    const slow = a.agent.call('create_task', { columnId, title: 'SLOW again' })
    await sleep(100)
    const first = a.agent.call('create_task', { columnId, title: 'before the revoked one' })
    await sleep(20)
    const revokedWrite = b.agent.call('create_task', { columnId, title: 'by the revoked key' })
    await sleep(20)
    const builtOn = a.agent.call('create_task', { columnId, title: 'built on it' })
    await sleep(20)
    // The batch is still waiting for the SLOW write: nothing holds key b yet.
    expect((await revoke(owner, b.id)).status).toBe(204)

    expect((await slow).status).toBe(200)
    expect((await first).status).toBe(200)
    expect((await revokedWrite).status).toBe(401)
    expect((await builtOn).status).toBe(500)
    const titles = async () =>
      ((await a.agent.ok('get_board')).tasks as { title: string }[]).map((t) => t.title)
    expect(await titles()).toEqual(expect.arrayContaining(['SLOW again', 'before the revoked one']))
    expect(await titles()).not.toContain('by the revoked key')
    expect(await titles()).not.toContain('built on it')
    // The document moved on from the committed state: the same write now goes through.
    expect((await a.agent.call('create_task', { columnId, title: 'retried' })).status).toBe(200)
    expect(await titles()).toContain('retried')
  })
})

/**
 * More concurrent writes on one board than the pool has connections, mixing writes that
 * query inside their transaction (claim checks) with ones that only record: every one must
 * finish (no write may wait on a connection held by a write waiting on it), and storage
 * must hold exactly what the live document shows.
 */
describe.each(STORAGES)('a crowd of mixed writes on one board (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(kind, { rateLimitPerKey: 100_000 })
  })
  afterAll(() => server.close())

  test('120 concurrent writes over 20 connections all answer 200 and are stored as shown', async () => {
    const owner = new Person(server.url)
    await owner.signUp()
    const { agent } = await keyWithId(owner, 'crowd')
    const columns = (await agent.ok('list_columns')).columns.map((c: { id: string }) => c.id)
    const seeded = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        agent.ok('create_task', { columnId: columns[0], title: `seed ${i}` }),
      ),
    )
    const ids = seeded.map((r) => r.task.id as string)
    const writes = Array.from({ length: 120 }, (_, i) => {
      const taskId = ids[i % ids.length]
      switch (i % 4) {
        case 0:
          return agent.call('create_task', { columnId: columns[i % 3], title: `crowd ${i}` })
        case 1:
          return agent.call('move_task', { taskId, columnId: columns[(i + 1) % 3] })
        case 2:
          return agent.call('update_task', { taskId, description: `edited by ${i}` })
        default:
          return agent.call('add_comment', { taskId, body: `comment ${i}` })
      }
    })
    const results = await Promise.all(writes)
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200))
    const shown = await agent.ok('get_board', { include: ['comments'], commentsPerCard: 50 })
    // Reload the document from storage alone.
    await server.app.live.close()
    const stored = await agent.ok('get_board', { include: ['comments'], commentsPerCard: 50 })
    expect(stored.tasks).toEqual(shown.tasks)
    expect(stored.tasks).toHaveLength(50)
  })
})
