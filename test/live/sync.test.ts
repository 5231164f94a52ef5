import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { sharedSecret } from '../../server/auth/secrets.ts'
import { signSyncToken } from '../../server/auth/sync-tokens.ts'
import { MERGE_AFTER, MERGED_MAX, REPLAY_FROM_BYTES } from '../../server/live/compaction.ts'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { cardDocName } from '../../shared/doc-names.ts'
import { connectProvider, eventually, ownerWithAgent } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

describe.each(STORAGES)('live documents (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(kind, { docIdleMs: 50 })
  })
  afterAll(() => server.close())

  test('a person opens their organisation board with a sync token and sees its shape', async () => {
    const { owner } = await ownerWithAgent(server.url)
    const live = await connectProvider(
      server.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    try {
      const columns = boardMaps(live.doc).columns
      expect(columns.size).toBe(4)
      const first = [...columns.values()][0]
      expect(Object.keys(first?.toJSON() ?? {}).sort()).toEqual(
        ['createdAt', 'onFire', 'position', 'projectId', 'role', 'title', 'updatedAt'].sort(),
      )
    } finally {
      live.destroy()
    }
  })

  test('a program opens the board with its API key', async () => {
    const { owner, agent } = await ownerWithAgent(server.url)
    const live = await connectProvider(server.url, boardDocName(owner.orgId), agent.key)
    try {
      const { columns } = await agent.ok('list_columns')
      const { task } = await agent.ok('create_task', {
        columnId: columns[1].id,
        title: 'via key',
        description: 'text',
      })
      const m = await eventually(() => boardMaps(live.doc).tasks.get(task.id))
      expect(m.get('columnId')).toBe(columns[1].id)
      // Version 3: the board card carries what the board shows; the description is the
      // card document's.
      expect(m.has('description')).toBe(false)
      const card = await connectProvider(server.url, cardDocName(owner.orgId, task.id), agent.key)
      try {
        expect(cardMaps(card.doc).description.toString()).toBe('text')
      } finally {
        card.destroy()
      }
    } finally {
      live.destroy()
    }
  })

  test("a connection may not open another organisation's documents", async () => {
    const a = await ownerWithAgent(server.url)
    const b = await ownerWithAgent(server.url)
    await expect(
      connectProvider(server.url, boardDocName(b.orgId), await a.owner.syncToken()),
    ).rejects.toThrow(/authentication failed/)
    await expect(connectProvider(server.url, boardDocName(b.orgId), a.agent.key)).rejects.toThrow(
      /authentication failed/,
    )
  })

  test('an expired or forged sync token is refused', async () => {
    const { owner } = await ownerWithAgent(server.url)
    const secret = await sharedSecret(server.storage.db, 'sync-token')
    const expired = signSyncToken(secret, {
      userId: owner.user?.id ?? '',
      orgId: owner.orgId,
      exp: Date.now() - 1,
    })
    await expect(connectProvider(server.url, boardDocName(owner.orgId), expired)).rejects.toThrow(
      /authentication failed/,
    )
    const forged = signSyncToken('not the secret', {
      userId: owner.user?.id ?? '',
      orgId: owner.orgId,
      exp: Date.now() + 60_000,
    })
    await expect(connectProvider(server.url, boardDocName(owner.orgId), forged)).rejects.toThrow(
      /authentication failed/,
    )
  })

  test('a revoked key cannot open a live connection', async () => {
    const { owner } = await ownerWithAgent(server.url)
    const created = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
      name: 'gone',
    })
    await owner.request('DELETE', `/api/app/orgs/${owner.orgId}/api-keys/${created.body.apiKey.id}`)
    await expect(
      connectProvider(server.url, boardDocName(owner.orgId), created.body.key),
    ).rejects.toThrow(/authentication failed/)
  })

  test('a document name outside the two shapes is refused', async () => {
    const { owner } = await ownerWithAgent(server.url)
    await expect(
      connectProvider(server.url, `${owner.orgId}/secrets`, await owner.syncToken()),
    ).rejects.toThrow(/authentication failed/)
  })

  test("handing out a sync token starts loading the board (the page's socket follows), and the board unloads again if nobody comes", async () => {
    const { owner } = await ownerWithAgent(server.url)
    const name = boardDocName(owner.orgId)
    await eventually(() => (server.app.live.hocuspocus.documents.has(name) ? undefined : true))
    await owner.syncToken()
    await eventually(() => (server.app.live.hocuspocus.documents.has(name) ? true : undefined))
    await eventually(() => (server.app.live.hocuspocus.documents.has(name) ? undefined : true))
  })

  test('a document with no connection is unloaded when idle and loads back the same', async () => {
    const { owner, agent } = await ownerWithAgent(server.url)
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', {
      columnId: columns[0].id,
      title: 'survives unload',
    })
    const name = boardDocName(owner.orgId)
    await eventually(() => (server.app.live.hocuspocus.documents.has(name) ? undefined : true))
    const again = await agent.ok('get_task', { taskId: task.id })
    expect(again.task.title).toBe('survives unload')
  })

  test("memory follows use: the cards' documents an agent wrote to, and then the board, unload when idle", async () => {
    const { owner, agent } = await ownerWithAgent(server.url)
    const { columns } = await agent.ok('list_columns')
    const ids: string[] = []
    for (let i = 0; i < 5; i++) {
      const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: `c${i}` })
      await agent.ok('add_comment', { taskId: task.id, body: `thread ${i}` })
      ids.push(task.id)
    }
    const loaded = () =>
      [...server.app.live.hocuspocus.documents.keys()].filter((n) => n.startsWith(owner.orgId))
    await eventually(() => (loaded().length === 0 ? true : undefined))
    // Everything comes back from storage as it was.
    const again = await agent.ok('get_task', { taskId: ids[4] })
    expect(again.comments.map((c: { body: string }) => c.body)).toEqual(['thread 4'])
    expect(again.task.commentCount).toBe(1)
  })

  test("a person's edits are stored and survive the document's unload", async () => {
    const { owner, agent } = await ownerWithAgent(server.url)
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: 'before' })
    const name = boardDocName(owner.orgId)
    const live = await connectProvider(server.url, name, await owner.syncToken())
    boardMaps(live.doc).tasks.get(task.id)?.set('title', 'edited by a person')
    await eventually(() => (live.provider.hasUnsyncedChanges ? undefined : true))
    live.destroy()
    await eventually(() => (server.app.live.hocuspocus.documents.has(name) ? undefined : true))
    expect((await agent.ok('get_task', { taskId: task.id })).task.title).toBe('edited by a person')
  })

  test('stored rows stay bounded: runs of appended updates are merged, then replayed into a snapshot', async () => {
    const { owner, agent } = await ownerWithAgent(server.url)
    const name = boardDocName(owner.orgId)
    // 1,010 separate writes through the one write path, each appending one row.
    for (let i = 0; i < 1010; i++) {
      await server.app.live.write(name, { type: 'server', orgId: owner.orgId }, async (w) => {
        w.mutate((doc) =>
          boardMaps(doc).projects.set(crypto.randomUUID(), new Y.Map([['name', `p${i}`]])),
        )
      })
    }
    const count = async () =>
      (
        await server.storage.db.query<{ n: number }>(
          'select count(*)::int as n from doc_updates where doc_name = $1',
          [name],
        )
      )[0]?.n ?? 0
    // A cold load reads at most this many rows, however long the document has lived.
    const bound = MERGE_AFTER + MERGED_MAX + 1
    // Compaction runs in the background at low priority: on a loaded machine it may lag.
    const deadline = Date.now() + 30_000
    while ((await count()) > bound && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20))
    expect(await count()).toBeLessThanOrEqual(bound)
    const levels = await server.storage.db.query<{ level: number }>(
      'select distinct level from doc_updates where doc_name = $1',
      [name],
    )
    expect(levels.some((r) => r.level > 0)).toBe(true)
    await eventually(() => (server.app.live.hocuspocus.documents.has(name) ? undefined : true))
    expect((await agent.ok('list_projects')).projects).toHaveLength(1010)
  }, 90_000)

  test('a few large writes are replayed into a snapshot once their bytes reach REPLAY_FROM_BYTES, so a cold load does not replay what they deleted', async () => {
    const { owner, agent } = await ownerWithAgent(server.url)
    const name = boardDocName(owner.orgId)
    const rows = () =>
      server.storage.db.query<{ level: number; bytes: number }>(
        'select level, length(data)::int as bytes from doc_updates where doc_name = $1',
        [name],
      )
    // Each write adds a batch of long-named projects and deletes the previous batch: a few
    // rows, far fewer than MERGE_AFTER, most of whose bytes are content deleted since.
    const batch = (i: number) =>
      Array.from({ length: 40 }, (_, j) => [`p${i}-${j}`, `${i}-${j} `.padEnd(2_000, 'x')] as const)
    const writes = Math.ceil((1.5 * REPLAY_FROM_BYTES) / (40 * 2_000))
    for (let i = 0; i < writes; i++) {
      await server.app.live.write(name, { type: 'server', orgId: owner.orgId }, async (w) => {
        w.mutate((doc) => {
          const { projects } = boardMaps(doc)
          for (const [id] of batch(i - 1)) projects.delete(id)
          for (const [id, title] of batch(i)) projects.set(id, new Y.Map([['name', title]]))
        })
      })
    }
    expect(writes).toBeLessThan(MERGE_AFTER)
    const deadline = Date.now() + 30_000
    while (!(await rows()).some((r) => r.level === 2) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20))
    const stored = await rows()
    expect(stored.some((r) => r.level === 2)).toBe(true)
    // What is left is the snapshot and the rows appended after it, not every batch written.
    const appended = writes * 40 * 2_000
    expect(stored.reduce((sum, r) => sum + r.bytes, 0)).toBeLessThan(appended / 2)
    const { projects } = await agent.ok('list_projects')
    expect(
      projects.filter((p: { name: string }) => p.name.startsWith(`${writes - 1}-`)),
    ).toHaveLength(40)
  }, 60_000)
})

describe.each(STORAGES)('losing access closes live connections (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(kind)
  })
  afterAll(() => server.close())

  test('revoking a key closes the live connections opened with it', async () => {
    const { owner } = await ownerWithAgent(server.url)
    const created = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
      name: 'live',
    })
    const live = await connectProvider(server.url, boardDocName(owner.orgId), created.body.key)
    const person = await connectProvider(
      server.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    try {
      const closed = new Promise<void>((resolve) => live.provider.on('close', () => resolve()))
      await owner.request(
        'DELETE',
        `/api/app/orgs/${owner.orgId}/api-keys/${created.body.apiKey.id}`,
      )
      await closed
      // The person's own connection is untouched, and the revoked key cannot come back.
      expect(person.socket.status).toBe('connected')
      await expect(
        connectProvider(server.url, boardDocName(owner.orgId), created.body.key),
      ).rejects.toThrow(/authentication failed/)
    } finally {
      live.destroy()
      person.destroy()
    }
  })
})
