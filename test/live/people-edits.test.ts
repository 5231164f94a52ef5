import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { cardDocName } from '../../shared/doc-names.ts'
import {
  type Agent,
  connectProvider,
  eventually,
  eventuallyAsync,
  type LiveClient,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

const task = (live: LiveClient, id: string) => boardMaps(live.doc).tasks.get(id) as Y.Map<unknown>

/** Collects the stateless "reverted" messages the server sends a provider. */
function revertsOf(live: LiveClient): { reason: string; taskId?: string }[] {
  const seen: { reason: string; taskId?: string }[] = []
  live.provider.on('stateless', ({ payload }: { payload: string }) => {
    const message = JSON.parse(payload)
    if (message.type === 'reverted') seen.push(message)
  })
  return seen
}

describe.each(STORAGES)("people's live edits follow the agents' rules (%s)", (kind) => {
  let server: TestServer
  let owner: Person
  let agent: Agent
  let columns: { id: string; title: string }[]
  let a: LiveClient
  let b: LiveClient
  let aReverts: { reason: string; taskId?: string }[]

  beforeAll(async () => {
    server = await startServer(kind)
    ;({ owner, agent } = await ownerWithAgent(server.url))
    columns = (await agent.ok('list_columns')).columns
    a = await connectProvider(server.url, boardDocName(owner.orgId), await owner.syncToken())
    b = await connectProvider(server.url, boardDocName(owner.orgId), await owner.syncToken())
    aReverts = revertsOf(a)
  })
  afterAll(async () => {
    a.destroy()
    b.destroy()
    await server.close()
  })

  const newCard = async (title = 'card') => {
    const { task: created } = await agent.ok('create_task', {
      columnId: columns[0]?.id,
      title,
      description: 'start',
    })
    await eventually(() => task(a, created.id) && task(b, created.id))
    return created as { id: string; updatedAt: string; columnId: string }
  }

  test("a person's edit of an unclaimed card shows in get_task and the change feed, with updatedAt set", async () => {
    const { cursor } = await agent.ok('get_changes')
    const card = await newCard()
    task(a, card.id).set('title', 'Renamed by a person')
    const seen = await eventuallyAsync(async () => {
      const { task: t } = await agent.ok('get_task', { taskId: card.id })
      return t.title === 'Renamed by a person' ? t : undefined
    })
    expect(seen.updatedAt > card.updatedAt).toBe(true)
    const changes = await eventuallyAsync(async () => {
      const c = await agent.ok('get_changes', { since: cursor })
      return c.tasks.some(
        (t: { id: string; title: string }) => t.id === card.id && t.title === 'Renamed by a person',
      )
        ? c
        : undefined
    })
    expect(changes.tasks.length).toBeGreaterThan(0)
  })

  test('the same edit on a claimed card is reverted on every replica, and the person is told why', async () => {
    const card = await newCard('claimed')
    await agent.ok('claim_task', { taskId: card.id, agentName: 'Ada' })
    await eventually(() => boardMaps(a.doc).claims.get(card.id))
    task(a, card.id).set('columnId', columns[2]?.id)
    task(a, card.id).set('title', 'dragged away')
    await eventually(() => (task(a, card.id).get('title') === 'claimed' ? true : undefined))
    expect(task(a, card.id).get('columnId')).toBe(columns[0]?.id)
    expect(task(b, card.id).get('title')).toBe('claimed')
    expect(task(b, card.id).get('columnId')).toBe(columns[0]?.id)
    const message = await eventually(() => aReverts.find((r) => r.taskId === card.id))
    expect(message.reason).toMatch(/claimed by Ada/)
    expect((await agent.ok('get_task', { taskId: card.id })).task.title).toBe('claimed')
    await agent.ok('release_task', { taskId: card.id, agentName: 'Ada' })
  })

  test('a claim its holder released reads status released with releasedAt on every replica, and people may edit the card again', async () => {
    const card = await newCard('handed back')
    await agent.ok('claim_task', { taskId: card.id, agentName: 'Ada' })
    const entry = (live: LiveClient) =>
      boardMaps(live.doc).claims.get(card.id) as Record<string, unknown> | undefined
    await eventually(() => (entry(a)?.status === 'working' ? true : undefined))
    expect(entry(a)).toMatchObject({ isLive: true, releasedAt: null })
    const { taskId, released } = await agent.ok('release_task', {
      taskId: card.id,
      agentName: 'Ada',
    })
    expect({ taskId, released }).toEqual({ taskId: card.id, released: true })
    for (const live of [a, b]) {
      const shown = await eventually(() => (entry(live)?.releasedAt ? entry(live) : undefined))
      expect(shown).toMatchObject({
        status: 'released',
        isLive: false,
        agentName: 'Ada',
        releasedAt: expect.any(String),
      })
      expect(shown?.updatedAt).toBe(shown?.releasedAt)
    }
    const { activity } = await agent.ok('get_board')
    expect(activity.find((c: { taskId: string }) => c.taskId === card.id)).toMatchObject({
      status: 'released',
      releasedAt: entry(a)?.releasedAt,
    })
    task(a, card.id).set('title', 'edited after the hand-back')
    await eventuallyAsync(async () =>
      (await agent.ok('get_task', { taskId: card.id })).task.title === 'edited after the hand-back'
        ? true
        : undefined,
    )
    await eventually(() =>
      task(b, card.id).get('title') === 'edited after the hand-back' ? true : undefined,
    )
  })

  test('an offline edit that arrives after the claim was taken leaves the claimed card unchanged and keeps the allowed edits', async () => {
    const claimedLater = await newCard('will be claimed')
    const free = await newCard('stays free')
    const offline = await connectProvider(
      server.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    offline.socket.disconnect()
    await eventually(() => (offline.socket.status === 'disconnected' ? true : undefined))
    task(offline, claimedLater.id).set('title', 'offline rename of a card someone took')
    task(offline, free.id).set('title', 'offline rename that is allowed')
    await agent.ok('claim_task', { taskId: claimedLater.id, agentName: 'Grace' })
    await offline.socket.connect()
    await eventually(() => (offline.provider.isSynced ? true : undefined), 15_000)
    await eventually(() =>
      task(a, free.id).get('title') === 'offline rename that is allowed' ? true : undefined,
    )
    await eventually(() =>
      task(offline, claimedLater.id).get('title') === 'will be claimed' ? true : undefined,
    )
    expect((await agent.ok('get_task', { taskId: claimedLater.id })).task.title).toBe(
      'will be claimed',
    )
    expect(task(a, claimedLater.id).get('title')).toBe('will be claimed')
    offline.destroy()
    await agent.ok('release_task', { taskId: claimedLater.id, agentName: 'Grace' })
  })

  test.each([
    ['a 600-character title', (m: Y.Map<unknown>) => m.set('title', 'x'.repeat(600)), /title/],
    ['an unknown priority', (m: Y.Map<unknown>) => m.set('priority', 'asap'), /priority/],
    [
      '21 tags',
      (m: Y.Map<unknown>) =>
        m.set(
          'tags',
          Array.from({ length: 21 }, (_, i) => `t${i}`),
        ),
      /tags/,
    ],
    [
      'a column that does not exist',
      (m: Y.Map<unknown>) => m.set('columnId', crypto.randomUUID()),
      /column/,
    ],
    [
      'a forged createdByEmail',
      (m: Y.Map<unknown>) => m.set('createdByEmail', 'someone@else'),
      /server/,
    ],
  ])('an invalid value (%s) is reverted and the person told why', async (_name, edit, reason) => {
    const card = await newCard('valid')
    const before = task(a, card.id).toJSON()
    edit(task(a, card.id))
    await eventually(() =>
      JSON.stringify(task(a, card.id).toJSON()) === JSON.stringify(before) ? true : undefined,
    )
    expect(task(b, card.id).toJSON()).toEqual(before)
    const message = await eventually(() => aReverts.find((r) => r.taskId === card.id))
    expect(message.reason).toMatch(reason)
  })

  /** Two people's copies of a card's own document (its description lives there). */
  async function cardDocs(taskId: string): Promise<[LiveClient, LiveClient]> {
    const name = cardDocName(owner.orgId, taskId)
    return [
      await connectProvider(server.url, name, await owner.syncToken()),
      await connectProvider(server.url, name, await owner.syncToken()),
    ]
  }

  test('a description over 20,000 characters is reverted to the last valid text', async () => {
    const card = await newCard('long text')
    const [ca, cb] = await cardDocs(card.id)
    try {
      const text = cardMaps(ca.doc).description
      await eventually(() => (text.toString() === 'start' ? true : undefined))
      text.insert(text.length, 'y'.repeat(20_001))
      await eventually(() => (text.toString() === 'start' ? true : undefined))
      expect(cardMaps(cb.doc).description.toString()).toBe('start')
    } finally {
      ca.destroy()
      cb.destroy()
    }
  })

  test('a description on the board (version 3: it lives in the card document) is reverted', async () => {
    const card = await newCard('no text here')
    task(a, card.id).set('description', new Y.Text('smuggled'))
    await eventually(() => (task(a, card.id).has('description') ? undefined : true))
    expect(task(b, card.id).has('description')).toBe(false)
    expect((await agent.ok('get_task', { taskId: card.id })).task.description).toBe('start')
  })

  test("a claimed card's description is locked: a person's edit of it is reverted, and they are told who holds it", async () => {
    const card = await newCard('claimed text')
    await agent.ok('claim_task', { taskId: card.id, agentName: 'Holder' })
    const [ca, cb] = await cardDocs(card.id)
    try {
      const reverts: { reason: string }[] = []
      ca.provider.on('stateless', ({ payload }: { payload: string }) => {
        const message = JSON.parse(payload)
        if (message.type === 'reverted') reverts.push(message)
      })
      const text = cardMaps(ca.doc).description
      await eventually(() => (text.toString() === 'start' ? true : undefined))
      text.insert(0, 'Not mine: ')
      await eventually(() => (text.toString() === 'start' ? true : undefined))
      expect(cardMaps(cb.doc).description.toString()).toBe('start')
      const told = await eventually(() => reverts[0])
      expect(told.reason).toMatch(/claimed by Holder/)
    } finally {
      ca.destroy()
      cb.destroy()
    }
  })

  test('a write into claims is reverted', async () => {
    const card = await newCard()
    boardMaps(a.doc).claims.set(card.id, {
      taskId: card.id,
      holder: 'me',
      expiresAt: '2999-01-01T00:00:00Z',
    } as never)
    await eventually(() => (boardMaps(a.doc).claims.has(card.id) ? undefined : true))
    expect(boardMaps(b.doc).claims.has(card.id)).toBe(false)
    const claim = await agent.ok('claim_task', { taskId: card.id, agentName: 'Fair' })
    expect(claim.claim.holder).toBe('Fair')
  })

  test('removing a card from the document is reverted: cards are deleted through the app', async () => {
    const card = await newCard('keep me')
    boardMaps(a.doc).tasks.delete(card.id)
    await eventually(() => task(a, card.id))
    expect(task(a, card.id).get('title')).toBe('keep me')
    expect((await agent.ok('get_task', { taskId: card.id })).task.title).toBe('keep me')
  })

  test('a card created by a person is stamped by the server and reaches agents', async () => {
    const id = crypto.randomUUID()
    const m = new Y.Map<unknown>()
    m.set('columnId', columns[1]?.id)
    m.set('title', 'Made in the browser')
    m.set('position', 5)
    m.set('createdByEmail', 'forged@example.test')
    boardMaps(a.doc).tasks.set(id, m)
    const seen = await eventuallyAsync(async () => {
      const r = await agent.call('get_task', { taskId: id })
      return r.status === 200 ? r.body.task : undefined
    })
    expect(seen).toMatchObject({
      title: 'Made in the browser',
      createdByEmail: owner.user?.email,
      priority: null,
    })
    await eventually(() =>
      task(b, id)?.get('createdByEmail') === owner.user?.email ? true : undefined,
    )
  })

  test("a person's comment is authored by their session, whatever the client claims", async () => {
    const card = await newCard()
    const id = crypto.randomUUID()
    const m = new Y.Map<unknown>()
    m.set('taskId', card.id)
    m.set('body', 'a person speaks')
    m.set('authorEmail', 'impostor@example.test')
    m.set('agentName', 'Fake Agent')
    const thread = await connectProvider(
      server.url,
      cardDocName(owner.orgId, card.id),
      await owner.syncToken(),
    )
    try {
      cardMaps(thread.doc).comments.set(id, m)
      const t = await eventuallyAsync(async () => {
        const r = await agent.ok('get_task', { taskId: card.id })
        return r.comments.length > 0 ? r : undefined
      })
      expect(t.comments[0]).toMatchObject({
        body: 'a person speaks',
        authorEmail: owner.user?.email,
        agentName: null,
      })
      expect(t.task.lastCommentBy).toBe('human')
      // The board card's stats moved with it, live, for everyone watching the board.
      await eventually(() =>
        (task(b, card.id).get('stats') as { commentCount?: number } | undefined)?.commentCount === 1
          ? true
          : undefined,
      )
    } finally {
      thread.destroy()
    }
  })

  test("a restore right after people's edits reads the card as they left it: archived by a person a moment ago, and with the stats of a comment written since", async () => {
    const card = await newCard()
    const token = await owner.syncToken()
    // Its own connections: nothing another test left unsent is waited for here.
    const board = await connectProvider(server.url, boardDocName(owner.orgId), token)
    const thread = await connectProvider(server.url, cardDocName(owner.orgId, card.id), token)
    const acknowledged = (live: LiveClient, step: string) =>
      eventually(() => (live.provider.hasUnsyncedChanges ? undefined : true), 10_000).catch(
        (error: unknown) => {
          throw new Error(`${step}: the server did not acknowledge the edit`, { cause: error })
        },
      )
    const restore = () =>
      owner.request('POST', `/api/app/orgs/${owner.orgId}/tasks/${card.id}/restore`)
    try {
      // Archived by a person: restored the moment the server has it, before it is stored.
      await eventually(() => task(board, card.id))
      task(board, card.id).set('archivedAt', new Date().toISOString())
      await acknowledged(board, 'archiving')
      expect((await restore()).status).toBe(200)
      await eventually(() => task(b, card.id), 10_000)

      // Archived again, then a person comments on it: restored the moment the server has
      // the comment, it comes back counting it.
      await agent.ok('archive_task', { taskId: card.id })
      await eventually(() => (task(b, card.id) ? undefined : true), 10_000)
      const m = new Y.Map<unknown>()
      m.set('taskId', card.id)
      m.set('body', 'said while it was archived')
      cardMaps(thread.doc).comments.set(crypto.randomUUID(), m)
      await acknowledged(thread, 'commenting')
      expect((await restore()).status).toBe(200)
    } finally {
      thread.destroy()
      board.destroy()
    }
    await server.app.live.flushPeople(owner.orgId)
    const { task: restored } = await agent.ok('get_task', { taskId: card.id })
    expect(restored.commentCount).toBe(1)
    expect(restored.archivedAt).toBeNull()
    await eventually(
      () =>
        (task(b, card.id)?.get('stats') as { commentCount?: number } | undefined)?.commentCount ===
        1
          ? true
          : undefined,
      10_000,
    )
    // Nothing of it is left in the archive.
    const rows = await server.storage.db.query('select id from archived_tasks where id = $1', [
      card.id,
    ])
    expect(rows).toEqual([])
  })

  test('two people editing one description concurrently both keep their text', async () => {
    const card = await newCard()
    const [ca, cb] = await cardDocs(card.id)
    const textA = cardMaps(ca.doc).description
    const textB = cardMaps(cb.doc).description
    await eventually(() =>
      textA.toString() === 'start' && textB.toString() === 'start' ? true : undefined,
    )
    textA.insert(0, 'Alice wrote this. ')
    textB.insert(textB.length, ' Bob wrote that.')
    const both = (t: Y.Text) =>
      t.toString().includes('Alice wrote this.') && t.toString().includes('Bob wrote that.')
        ? t.toString()
        : undefined
    const final = await eventually(() =>
      both(textA) && both(textB) && textA.toString() === textB.toString()
        ? textA.toString()
        : undefined,
    )
    const stored = await eventuallyAsync(async () => {
      const r = await agent.ok('get_task', { taskId: card.id })
      return r.task.description === final ? r.task.description : undefined
    })
    expect(stored).toContain('start')
    ca.destroy()
    cb.destroy()
    // What get_board and search read comes from Postgres, written with the edit.
    const [row] = await server.app.db.query<{ description: string }>(
      'select description from task_texts where id = $1',
      [card.id],
    )
    await eventuallyAsync(async () => {
      const [r] = await server.app.db.query<{ description: string }>(
        'select description from task_texts where id = $1',
        [card.id],
      )
      return r?.description === final ? true : undefined
    })
    expect(row).toBeDefined()
  })
})

/**
 * Read-your-writes for every reader of archived rows: what a person did a moment ago (their
 * edit live, its rows not yet stored) is what agents read. The server here stores people's
 * edits only after 5 s when no write takes them, so "a moment ago" lasts long enough to test.
 */
describe.each(STORAGES)(
  "readers of archived cards read through people's pending edits (%s)",
  (kind) => {
    let server: TestServer
    let owner: Person
    let agent: Agent
    let live: LiveClient

    beforeAll(async () => {
      server = await startServer(kind, {}, { peopleFlushMs: 5_000 })
      ;({ owner, agent } = await ownerWithAgent(server.url))
      live = await connectProvider(server.url, boardDocName(owner.orgId), await owner.syncToken())
    })
    afterAll(async () => {
      live.destroy()
      await server.close()
    })

    /** A card archived by a person in the app: the server has the edit, not yet its row. */
    async function archivedByPerson(columnId: string): Promise<string> {
      const { task: created } = await agent.ok('create_task', {
        columnId,
        title: 'Archived by hand',
      })
      await eventually(() => task(live, created.id))
      task(live, created.id).set('archivedAt', new Date().toISOString())
      await eventually(() => (live.provider.hasUnsyncedChanges ? undefined : true), 10_000)
      const [row] = await server.app.db.query('select 1 from archived_tasks where id = $1', [
        created.id,
      ])
      expect(
        row,
        'the archived row must not be stored yet for this test to mean anything',
      ).toBeUndefined()
      return created.id as string
    }

    test('get_task of a card a person archived a moment ago answers the archived card, never 404', async () => {
      const { columns } = await agent.ok('list_columns')
      const taskId = await archivedByPerson(columns[0].id)
      const res = await agent.call('get_task', { taskId })
      expect(res.status).toBe(200)
      expect(res.body.task.archivedAt).not.toBeNull()
      expect((await agent.ok('get_board')).tasks.map((t: { id: string }) => t.id)).not.toContain(
        taskId,
      )
    })

    test('delete_column counts a card a person archived in it a moment ago', async () => {
      const { column } = await agent.ok('create_column', { title: 'Soon gone' })
      await archivedByPerson(column.id)
      const res = await agent.call('delete_column', { columnId: column.id })
      expect(res.status).toBe(400)
      expect(res.body.error).toMatch(/destinationColumnId/)
    })

    test('set_task_dependencies finds a card a person archived a moment ago (the first write after it)', async () => {
      const { columns } = await agent.ok('list_columns')
      const { task: waiting } = await agent.ok('create_task', {
        columnId: columns[0].id,
        title: 'Waits',
      })
      const archived = await archivedByPerson(columns[0].id)
      const deps = await agent.call('set_task_dependencies', {
        taskId: waiting.id,
        blockedBy: [archived],
      })
      expect(deps.status).toBe(200)
      expect(deps.body.task.blockedBy).toEqual([archived])
    })

    test('claim_task finds a card a person archived a moment ago (the first write after it)', async () => {
      const { columns } = await agent.ok('list_columns')
      const archived = await archivedByPerson(columns[0].id)
      const claim = await agent.call('claim_task', { taskId: archived, agentName: 'Ada' })
      expect(claim.status).toBe(200)
    })
  },
)
