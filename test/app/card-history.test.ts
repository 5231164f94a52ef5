import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { cardDocName } from '../../shared/doc-names.ts'
import { type ClockServer, startClockServer } from '../claims/harness.ts'
import { Agent, connectProvider, eventuallyAsync, Person } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='

interface HistoryEvent {
  id: string | null
  kind: string
  at: string
  actor: { kind: string; name?: string | null; email?: string }
  detail: Record<string, unknown>
}

/**
 * Each card's history (issue 32): one event per change, written in the change's
 * transaction by whoever made it (agents, people's live edits, the server), read newest
 * first a page at a time through GET /api/app/orgs/:orgId/cards/:taskId/history.
 */
describe.each(STORAGES)("a card's history (%s)", (kind) => {
  let server: ClockServer
  let owner: Person
  let agent: Agent
  let other: Agent
  let org: string
  let columns: { id: string; title: string }[]

  beforeAll(async () => {
    server = await startClockServer(kind)
    owner = new Person(server.url)
    await owner.signUp({ name: 'Ada Lovelace' })
    org = owner.orgId
    agent = new Agent(server.url, await owner.createKey('one'))
    other = new Agent(server.url, await owner.createKey('two'))
    columns = (await agent.ok('list_columns')).columns
  })
  afterAll(() => server.close())

  const history = async (taskId: string, query = '') => {
    const res = await owner.request('GET', `/api/app/orgs/${org}/cards/${taskId}/history${query}`)
    return res as { status: number; body: { events: HistoryEvent[]; nextCursor: string | null } }
  }
  /** Every stored event, newest first, read a page of `limit` at a time. */
  const allPages = async (taskId: string, limit: number) => {
    const out: HistoryEvent[] = []
    let cursor: string | null = null
    for (let pages = 0; pages < 100; pages++) {
      const page = await history(taskId, `?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
      expect(page.status).toBe(200)
      expect(page.body.events.length).toBeLessThanOrEqual(limit)
      out.push(...page.body.events)
      cursor = page.body.nextCursor
      if (!cursor) return out
    }
    throw new Error('paging never ended')
  }
  const kinds = (events: HistoryEvent[]) => events.map((e) => e.kind)

  test('created, moved from → to, fields changed old → new, described, commented and a screenshot: each named after the agent that did it, newest first', async () => {
    const [backlog, next] = columns as [
      { id: string; title: string },
      { id: string; title: string },
    ]
    const { task } = await agent.ok('create_task', {
      columnId: backlog.id,
      title: 'Port the tax table',
      agentName: 'Paul',
      house: 'Atreides',
      generation: 3,
    })
    await agent.ok('move_task', { taskId: task.id, columnId: next.id, agentName: 'Paul' })
    await agent.ok('update_task', {
      taskId: task.id,
      priority: 'high',
      title: 'Port the tax tables',
    })
    await agent.ok('update_task', { taskId: task.id, description: '## Plan\n- [ ] port' })
    await agent.ok('set_task_tags', { taskId: task.id, tags: ['tax'] })
    await agent.ok('add_comment', { taskId: task.id, body: 'Started.', agentName: 'Paul' })
    await agent.ok('attach_screenshot', {
      taskId: task.id,
      imageBase64: PNG,
      filename: 'before.png',
    })

    const { status, body } = await history(task.id)
    expect(status).toBe(200)
    expect(body.nextCursor).toBeNull()
    expect(kinds(body.events)).toEqual([
      'screenshot',
      'commented',
      'changed',
      'described',
      'changed',
      'changed',
      'moved',
      'created',
    ])
    const [shot, comment, tags, , title, priority, moved, created] = body.events as HistoryEvent[]
    expect(created).toMatchObject({
      actor: { kind: 'agent', name: 'Paul, 3rd of House Atreides' },
      detail: { title: 'Port the tax table', column: backlog.title },
    })
    expect(moved).toMatchObject({
      actor: { kind: 'agent', name: 'Paul' },
      detail: { from: backlog.title, to: next.title, fromId: backlog.id, toId: next.id },
    })
    expect([priority?.detail, title?.detail]).toEqual(
      expect.arrayContaining([
        { field: 'priority', from: null, to: 'high' },
        { field: 'title', from: 'Port the tax table', to: 'Port the tax tables' },
      ]),
    )
    expect(tags?.detail).toEqual({ field: 'tags', from: [], to: ['tax'] })
    expect(comment?.detail).toMatchObject({ excerpt: 'Started.', agentName: 'Paul' })
    expect(shot?.detail).toMatchObject({ filename: 'before.png' })
    // Unnamed agents are "An agent", as the board labels them.
    expect(shot?.actor).toMatchObject({ kind: 'agent', name: 'An agent' })
    for (const e of body.events) expect(Number.isNaN(Date.parse(e.at))).toBe(false)
  })

  test('claimed, released, lapsed (shown as of now, then stored when the card is claimed again), a heartbeat after more than half the lease, force-released by a person named', async () => {
    const { task } = await agent.ok('create_task', { columnId: columns[0]?.id, title: 'Claims' })
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Ada', note: 'porting' })
    await agent.ok('release_task', { taskId: task.id, agentName: 'Ada' })
    let events = (await history(task.id)).body.events
    expect(kinds(events)).toEqual(['released', 'claimed', 'created'])
    expect(events[1]).toMatchObject({
      actor: { kind: 'agent', name: 'Ada' },
      detail: { holder: 'Ada', note: 'porting' },
    })

    // The lease runs out: nothing is written, but the first page shows it, as of now.
    const claimed = await agent.ok('claim_task', { taskId: task.id, agentName: 'Ada' })
    server.clock.advance(Date.parse(claimed.claim.expiresAt) - server.clock.now() + 60_000)
    events = (await history(task.id)).body.events
    expect(events[0]).toMatchObject({
      id: null,
      kind: 'lapsed',
      actor: { kind: 'server' },
      detail: { holder: 'Ada', expiredAt: claimed.claim.expiresAt },
    })
    expect(kinds(events).slice(1, 2)).toEqual(['claimed'])
    // Another agent takes the lapsed card: the lapse is stored with the new claim.
    await other.ok('claim_task', { taskId: task.id, agentName: 'Bob' })
    events = (await history(task.id)).body.events
    expect(kinds(events).slice(0, 3)).toEqual(['claimed', 'lapsed', 'claimed'])
    expect(events[0]?.detail.holder).toBe('Bob')
    expect(events[1]).toMatchObject({ id: expect.any(String), detail: { holder: 'Ada' } })

    // Bob goes quiet for three quarters of his lease, then heartbeats: a gap in the history.
    const held = await other.ok('heartbeat_task', { taskId: task.id, agentName: 'Bob' })
    const lease = Date.parse(held.claim.expiresAt) - server.clock.now()
    server.clock.advance(lease / 4)
    await other.ok('heartbeat_task', { taskId: task.id, agentName: 'Bob' })
    expect(kinds((await history(task.id)).body.events)[0]).toBe('claimed')
    server.clock.advance((lease * 3) / 4)
    await other.ok('heartbeat_task', { taskId: task.id, agentName: 'Bob' })
    events = (await history(task.id)).body.events
    expect(events[0]).toMatchObject({
      kind: 'heartbeat-gap',
      actor: { kind: 'agent', name: 'Bob' },
      detail: { holder: 'Bob', gapSeconds: Math.round((lease * 3) / 4 / 1000) },
    })

    const forced = await owner.request(
      'POST',
      `/api/app/orgs/${org}/tasks/${task.id}/force-release`,
    )
    expect(forced.status).toBe(200)
    events = (await history(task.id)).body.events
    expect(events[0]).toMatchObject({
      kind: 'force-released',
      actor: { kind: 'person', name: 'Ada Lovelace', email: owner.user?.email },
      detail: { holder: 'Bob' },
    })
  })

  test("archived and restored, and a person's live move through the board document, named", async () => {
    const { task } = await agent.ok('create_task', {
      columnId: columns[0]?.id,
      title: 'Comes back',
    })
    await agent.ok('archive_task', { taskId: task.id })
    const restored = await owner.request('POST', `/api/app/orgs/${org}/tasks/${task.id}/restore`)
    expect(restored.status).toBe(200)
    const live = await connectProvider(server.url, boardDocName(org), await owner.syncToken())
    try {
      const card = boardMaps(live.doc).tasks.get(task.id)
      live.doc.transact(() => card?.set('columnId', columns[2]?.id))
      const events = await eventuallyAsync(async () => {
        const e = (await history(task.id)).body.events
        return e[0]?.kind === 'moved' ? e : undefined
      })
      expect(kinds(events)).toEqual(['moved', 'restored', 'archived', 'created'])
      expect(events[0]).toMatchObject({
        actor: { kind: 'person', name: 'Ada Lovelace' },
        detail: { from: columns[0]?.title, to: columns[2]?.title },
      })
      expect(events[1]?.actor).toMatchObject({ kind: 'person', name: 'Ada Lovelace' })
      expect(events[2]?.actor).toMatchObject({ kind: 'agent' })
    } finally {
      live.destroy()
    }
  })

  test("a person's typing in the description is one event per stretch of typing, named; an agent's rewrite is its own", async () => {
    const { task } = await agent.ok('create_task', {
      columnId: columns[0]?.id,
      title: 'Typed into',
      description: 'Start.',
    })
    const live = await connectProvider(
      server.url,
      cardDocName(org, task.id),
      await owner.syncToken(),
    )
    try {
      await eventuallyAsync(async () =>
        cardMaps(live.doc).description.toString() === 'Start.' ? true : undefined,
      )
      const text = cardMaps(live.doc).description
      for (const word of [' One', ' two', ' three.']) {
        live.doc.transact(() => text.insert(text.length, word))
        // Each edit goes out and is stored on its own, as a person's keystrokes do.
        await eventuallyAsync(async () =>
          (await agent.ok('get_task', { taskId: task.id })).task.description.endsWith(word)
            ? true
            : undefined,
        )
      }
      await agent.ok('update_task', { taskId: task.id, description: 'Rewritten by the agent.' })
      const events = (await history(task.id)).body.events
      expect(kinds(events)).toEqual(['described', 'described', 'created'])
      expect(events[0]?.actor).toMatchObject({ kind: 'agent' })
      expect(events[1]).toMatchObject({
        actor: { kind: 'person', name: 'Ada Lovelace' },
        detail: { typing: true },
      })
    } finally {
      live.destroy()
    }
  })

  test("only changes that committed are history: a write refused by the claim and a person's move the review reverted leave none", async () => {
    const { task } = await agent.ok('create_task', { columnId: columns[0]?.id, title: 'Held' })
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Ada' })
    const before = (await history(task.id)).body.events
    expect(kinds(before)).toEqual(['claimed', 'created'])
    const refused = await other.call('update_task', { taskId: task.id, title: 'Taken over' })
    expect(refused.status).toBe(409)
    const live = await connectProvider(server.url, boardDocName(org), await owner.syncToken())
    try {
      const card = boardMaps(live.doc).tasks.get(task.id)
      live.doc.transact(() => card?.set('columnId', columns[1]?.id))
      // Reverted on every replica, this one included.
      await eventuallyAsync(async () =>
        boardMaps(live.doc).tasks.get(task.id)?.get('columnId') === columns[0]?.id
          ? true
          : undefined,
      )
      // Anything the person's edit stored has been stored once a later write commits.
      await agent.ok('add_comment', { taskId: task.id, body: 'still mine', agentName: 'Ada' })
      const after = (await history(task.id)).body.events
      expect(kinds(after)).toEqual(['commented', 'claimed', 'created'])
    } finally {
      live.destroy()
    }
  })

  test('paged newest first with a cursor: the pages put together are the whole history once; bad limits and cursors are 400, an unknown card 404, a deleted card takes its history along', async () => {
    const { task } = await agent.ok('create_task', { columnId: columns[0]?.id, title: 'Busy' })
    for (let i = 0; i < 12; i++) {
      await agent.ok('update_task', { taskId: task.id, title: `Busy ${i}` })
    }
    const whole = (await history(task.id, '?limit=200')).body.events
    expect(whole).toHaveLength(13)
    expect(whole.at(-1)?.kind).toBe('created')
    expect(whole[0]?.detail).toMatchObject({ field: 'title', from: 'Busy 10', to: 'Busy 11' })
    const ids = whole.map((e) => Number(e.id))
    expect([...ids].sort((a, b) => b - a)).toEqual(ids)
    for (const limit of [1, 5, 13]) expect(await allPages(task.id, limit)).toEqual(whole)

    for (const q of ['?limit=0', '?limit=201', '?limit=x', '?cursor=abc', '?cursor=-1']) {
      const res = await history(task.id, q)
      expect(res.status, q).toBe(400)
      expect(JSON.stringify(res.body)).toMatch(/limit|cursor/)
    }
    expect((await history('00000000-0000-4000-8000-000000000000')).status).toBe(404)
    expect((await history('not-a-uuid')).status).toBe(400)

    const deleted = await owner.request('DELETE', `/api/app/orgs/${org}/tasks/${task.id}`)
    expect(deleted.status).toBe(204)
    expect((await history(task.id)).status).toBe(404)
    const rows = await server.storage.db.query<{ n: number }>(
      'select count(*)::int as n from card_history where task_id = $1',
      [task.id],
    )
    expect(rows[0]?.n).toBe(0)
  })
})
