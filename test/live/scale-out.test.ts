import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import * as encoding from 'lib0/encoding'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { type App, createApp } from '../../server/app.ts'
import { loadConfig } from '../../server/config.ts'
import { boardDocName, boardMaps, mapDocName } from '../../shared/board-doc.ts'
import { CLOSE, parseNotice } from '../../shared/live-protocol.ts'
import { generationOf } from '../../shared/rebase.ts'
import { Agent, connectProvider, eventually, eventuallyAsync, Person } from '../support/client.ts'
import { freshDb, type TestDb } from '../support/storage.ts'

/**
 * Two server processes' worth of the service (two apps, two connection pools, one
 * Postgres, one Redis) behind an imaginary load balancer: live documents meet through
 * Redis; claims, keys and the change log through Postgres.
 */
describe('several server processes share one service (postgres + redis)', () => {
  let storage: TestDb
  let a: App
  let b: App
  const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
  const prefix = `cb-test-${randomBytes(4).toString('hex')}`

  beforeAll(async () => {
    storage = await freshDb('postgres', { migrate: false })
    const config = {
      ...loadConfig({}),
      port: 0,
      logLevel: 'error' as const,
      scryptN: 1024,
      databaseUrl: storage.url,
      redisUrl,
      redisPrefix: prefix,
    }
    ;[a, b] = await Promise.all([createApp(config), createApp(config)])
    await Promise.all([a.listen(), b.listen()])
  })
  afterAll(async () => {
    await Promise.all([a.close(), b.close()])
    await storage.drop()
  })

  test('an agent write sent to process A appears in a provider connected to process B', async () => {
    const owner = new Person(a.url)
    await owner.signUp()
    const agentOnA = new Agent(a.url, await owner.createKey())
    const onB = await connectProvider(b.url, boardDocName(owner.orgId), await owner.syncToken())
    try {
      const { columns } = await agentOnA.ok('list_columns')
      const { task } = await agentOnA.ok('create_task', {
        columnId: columns[0].id,
        title: 'crossed processes',
      })
      const seen = await eventually(
        () => boardMaps(onB.doc).tasks.get(task.id)?.get('title'),
        10_000,
      )
      expect(seen).toBe('crossed processes')
    } finally {
      onB.destroy()
    }
  })

  test('a document re-based by A: B closes its connections with "re-based" and drops its copy; writes through either process land on the new generation', async () => {
    const owner = new Person(a.url)
    await owner.signUp()
    const agentOnA = new Agent(a.url, await owner.createKey())
    const agentOnB = new Agent(b.url, await owner.createKey())
    const { columns } = await agentOnA.ok('list_columns')
    for (let i = 0; i < 5; i++)
      await agentOnB.ok('create_task', { columnId: columns[0].id, title: `before ${i}` })
    const name = boardDocName(owner.orgId)
    const onB = await connectProvider(b.url, name, await owner.syncToken())
    const closed: string[] = []
    onB.provider.on('close', ({ event }: { event: { reason: string } }) => {
      closed.push(event.reason)
    })
    try {
      const done = await a.live.rebase(name)
      await eventually(() => (closed.includes(CLOSE.rebased.reason) ? true : undefined), 10_000)
      // Writes through B (whose copy was of the ended generation) and A, after the re-base.
      const { task: viaB } = await agentOnB.ok('create_task', {
        columnId: columns[0].id,
        title: 'after, through B',
      })
      const { task: viaA } = await agentOnA.ok('create_task', {
        columnId: columns[0].id,
        title: 'after, through A',
      })
      // Each process's copy holds both (B hears of A's write through Redis).
      for (const app of [a, b]) {
        const state = await eventuallyAsync(async () => {
          const now = await app.live.read(name, (doc) => ({
            generation: generationOf(doc),
            ids: [...boardMaps(doc).tasks.keys()],
          }))
          return now.ids.length === 7 ? now : undefined
        }, 10_000)
        expect(state.generation).toBe(done.generation)
        expect(state.ids).toEqual(expect.arrayContaining([viaA.id, viaB.id]))
      }
    } finally {
      onB.destroy()
    }
  })

  test("a copy of an ended generation never syncs with the new one through Redis: what it sends, on its document's channel or as an answer, leaves the new generation's copies untouched", async () => {
    const owner = new Person(a.url)
    await owner.signUp()
    const agentOnA = new Agent(a.url, await owner.createKey())
    const agentOnB = new Agent(b.url, await owner.createKey())
    const { columns } = await agentOnA.ok('list_columns')
    const columnId = columns[0].id
    for (let i = 0; i < 5; i++) await agentOnA.ok('create_task', { columnId, title: `card ${i}` })
    const name = boardDocName(owner.orgId)
    // What a process still holding the ended generation would send: its whole state.
    const ended = await a.live.read(name, (doc) => Y.encodeStateAsUpdate(doc))
    const endedClients = [...Y.decodeStateVector(Y.encodeStateVectorFromUpdate(ended)).keys()]
    await a.live.rebase(name)
    // Both processes load the new generation; A's identifier is read off its publishes.
    const watcher = new Redis(redisUrl)
    const publisher = new Redis(redisUrl)
    const identifiers = new Set<string>()
    watcher.on('pmessageBuffer', (_pattern: Buffer, channel: Buffer, data: Buffer) => {
      if (channel.toString().startsWith(`${prefix}:${name}`))
        identifiers.add(data.toString('utf8', 1, 1 + (data[0] ?? 0)))
    })
    await watcher.psubscribe(`${prefix}:*`)
    // A person on B keeps B's copy loaded (agent calls may all be served by one process).
    const onB = await connectProvider(b.url, name, await owner.syncToken())
    try {
      await agentOnA.ok('create_task', { columnId, title: 'after, through A' })
      await agentOnB.ok('create_task', { columnId, title: 'after, through B' })
      await eventually(() => (identifiers.size >= 2 ? true : undefined), 10_000)
      const sent = (documentName: string, update: Uint8Array) => {
        const message = encoding.createEncoder()
        encoding.writeVarString(message, documentName)
        encoding.writeVarUint(message, 0) // sync
        encoding.writeVarUint(message, 1) // step 2: "here is what you lack"
        encoding.writeVarUint8Array(message, update)
        const from = Buffer.from('host-of-the-ended-generation')
        return Buffer.concat([Buffer.from([from.length]), from, encoding.toUint8Array(message)])
      }
      const stale = sent(name, ended)
      // On the channel the document had before generations named theirs, on the ended
      // generation's, and as an answer to each process's own request.
      await publisher.publish(`${prefix}:${name}`, stale)
      await publisher.publish(`${prefix}:${name}@g0`, stale)
      for (const id of identifiers) await publisher.publish(`${prefix}#reply:${id}`, stale)
      // A write through each process after them: by the time both copies show both writes,
      // each process has handled what reached it before.
      await agentOnA.ok('create_task', { columnId, title: 'later, through A' })
      await agentOnB.ok('create_task', { columnId, title: 'later, through B' })
      for (const app of [a, b]) {
        const state = await eventuallyAsync(async () => {
          const now = await app.live.read(name, (doc) => ({
            generation: generationOf(doc),
            titles: [...boardMaps(doc).tasks.values()].map((t) => t.get('title') as string),
            clients: [...Y.decodeStateVector(Y.encodeStateVector(doc)).keys()],
          }))
          return now.titles.length === 9 ? now : undefined
        }, 10_000)
        expect(state.generation).toBe(1)
        expect(state.clients.filter((c) => endedClients.includes(c))).toEqual([])
        expect(state.titles.sort()).toEqual([
          'after, through A',
          'after, through B',
          'card 0',
          'card 1',
          'card 2',
          'card 3',
          'card 4',
          'later, through A',
          'later, through B',
        ])
      }
    } finally {
      onB.destroy()
      watcher.disconnect()
      publisher.disconnect()
    }
  })

  test('a map created, renamed or deleted through A tells people with the board open on B to read the map list again', async () => {
    const owner = new Person(a.url)
    await owner.signUp()
    const agentOnA = new Agent(a.url, await owner.createKey())
    const onB = await connectProvider(b.url, boardDocName(owner.orgId), await owner.syncToken())
    const notices: string[] = []
    onB.provider.on('stateless', ({ payload }: { payload: string }) => notices.push(payload))
    try {
      const { map } = await agentOnA.ok('create_map', { title: 'told everywhere' })
      await eventually(() => (notices.length >= 1 ? true : undefined), 10_000)
      expect(notices.map((n) => parseNotice(n))).toEqual([{ type: 'maps-changed' }])
      await agentOnA.ok('rename_map', { mapId: map.id, title: 'renamed' })
      await eventually(() => (notices.length >= 2 ? true : undefined), 10_000)
      await agentOnA.ok('delete_map', { mapId: map.id })
      await eventually(() => (notices.length >= 3 ? true : undefined), 10_000)
      expect(new Set(notices.map((n) => parseNotice(n)?.type))).toEqual(new Set(['maps-changed']))
    } finally {
      onB.destroy()
    }
  })

  test('a claim taken through A blocks a write through B', async () => {
    const owner = new Person(a.url)
    await owner.signUp()
    const holder = new Agent(a.url, await owner.createKey('holder'))
    const other = new Agent(b.url, await owner.createKey('other'))
    const { columns } = await holder.ok('list_columns')
    const { task } = await holder.ok('create_task', { columnId: columns[0].id, title: 'contested' })
    await holder.ok('claim_task', { taskId: task.id, agentName: 'Holder' })
    const refused = await other.call('update_task', { taskId: task.id, title: 'stolen' })
    expect(refused.status).toBe(409)
    expect(refused.body.holder.agentName).toBe('Holder')
    expect((await other.ok('get_task', { taskId: task.id })).task.title).toBe('contested')
  })

  test("a copy loading while the previous copy's unload finishes stays subscribed: the other process's edits keep reaching it", async () => {
    const owner = new Person(b.url)
    await owner.signUp()
    const name = boardDocName(owner.orgId)
    const onB = await connectProvider(b.url, name, await owner.syncToken())
    const shared = (
      a.live as unknown as { shared: { afterUnloadDocument(data: unknown): Promise<void> } }
    ).shared
    const held = (shared as unknown as { documents: Map<string, Y.Doc> }).documents
    const instance = a.live.hocuspocus as unknown as { loadingDocuments: Map<string, unknown> }
    try {
      // A loads the board. Once its copy is subscribed-to-be (the extension holds it) and
      // still loading, the hooks after an earlier copy's unload arrive, as they do when a
      // new load starts while they still run.
      const opening = a.live.hocuspocus.openDirectConnection(name)
      while (!(held.has(name) && instance.loadingDocuments.has(name))) {
        await new Promise((r) => setImmediate(r))
      }
      await shared.afterUnloadDocument({ instance: a.live.hocuspocus, documentName: name })
      const connection = await opening
      try {
        const columnId = [...boardMaps(onB.doc).columns.keys()][0] as string
        boardMaps(onB.doc).columns.get(columnId)?.set('title', 'Renamed on B')
        const copy = a.live.hocuspocus.documents.get(name) as Y.Doc
        const renamed = () =>
          boardMaps(copy).columns.get(columnId)?.get('title') === 'Renamed on B' ? true : undefined
        expect(await eventually(renamed, 5_000)).toBe(true)
      } finally {
        await connection.disconnect()
      }
    } finally {
      onB.destroy()
    }
  })

  test("a person's edit on B of a card claimed through A is reverted for everyone", async () => {
    const owner = new Person(a.url)
    await owner.signUp()
    const agent = new Agent(a.url, await owner.createKey())
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: 'held' })
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Holder' })
    const onA = await connectProvider(a.url, boardDocName(owner.orgId), await owner.syncToken())
    const onB = await connectProvider(b.url, boardDocName(owner.orgId), await owner.syncToken())
    try {
      await eventually(() => boardMaps(onB.doc).claims.get(task.id), 10_000)
      boardMaps(onB.doc).tasks.get(task.id)?.set('title', 'edited on B')
      await eventually(
        () => (boardMaps(onB.doc).tasks.get(task.id)?.get('title') === 'held' ? true : undefined),
        10_000,
      )
      expect(boardMaps(onA.doc).tasks.get(task.id)?.get('title')).toBe('held')
      expect((await agent.ok('get_task', { taskId: task.id })).task.title).toBe('held')
    } finally {
      onA.destroy()
      onB.destroy()
    }
  })

  test('revoking a key through B closes the live connection it opened on A, and only that one', async () => {
    const owner = new Person(b.url)
    await owner.signUp()
    const created = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
      name: 'live on A',
    })
    const keyOnA = await connectProvider(a.url, boardDocName(owner.orgId), created.body.key)
    const personOnA = await connectProvider(
      a.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    try {
      const closed = new Promise<void>((resolve) => keyOnA.provider.on('close', () => resolve()))
      const revoked = await owner.request(
        'DELETE',
        `/api/app/orgs/${owner.orgId}/api-keys/${created.body.apiKey.id}`,
      )
      expect(revoked.status).toBe(204)
      await closed
      expect(personOnA.socket.status).toBe('connected')
    } finally {
      keyOnA.destroy()
      personOnA.destroy()
    }
  })

  test('a map deleted through A closes the connections to it on B, with the reason', async () => {
    const owner = new Person(a.url)
    await owner.signUp()
    const agent = new Agent(a.url, await owner.createKey())
    const { map } = await agent.ok('create_map', { title: 'short-lived' })
    const onB = await connectProvider(
      b.url,
      mapDocName(owner.orgId, map.id),
      await owner.syncToken(),
    )
    try {
      const closed = new Promise<string>((resolve) =>
        onB.provider.on('close', ({ event }: { event: { reason: string } }) =>
          resolve(event.reason),
        ),
      )
      await agent.ok('delete_map', { mapId: map.id })
      expect(await closed).toBe('This map was deleted')
    } finally {
      onB.destroy()
    }
  })
})
