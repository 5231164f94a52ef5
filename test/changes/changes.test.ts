import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type ClockServer, startClockServer } from '../claims/harness.ts'
import { Agent, Person } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'

/** A 1×1 PNG, structurally valid (every chunk CRC correct). */
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='

const COLLECTIONS = ['tasks', 'columns', 'comments', 'attachments', 'claims'] as const
type Collection = (typeof COLLECTIONS)[number]

interface Page {
  cursor: string
  truncated: boolean
  tasks: { id: string }[]
  columns: { id: string }[]
  comments: { id: string }[]
  attachments: { id: string }[]
  claims: { taskId: string }[]
}

const idOf = (c: Collection, item: { id?: string; taskId?: string }) =>
  (c === 'claims' ? item.taskId : item.id) as string

/**
 * Follows the feed from `since` until `done` holds for what has arrived (the cursor trails
 * the present by about a second, so fresh changes show up on a later poll).
 */
async function follow(
  agent: Agent,
  since: string,
  done: (seen: Map<string, Record<string, unknown>>[]) => boolean,
  limit?: number,
) {
  const seen = COLLECTIONS.map(() => new Map<string, Record<string, unknown>>())
  const pages: Page[] = []
  let cursor = since
  const deadline = Date.now() + 15_000
  for (;;) {
    const page = (await agent.ok(
      'get_changes',
      limit ? { since: cursor, limit } : { since: cursor },
    )) as Page
    pages.push(page)
    COLLECTIONS.forEach((c, i) => {
      for (const item of page[c] as Record<string, unknown>[]) {
        seen[i]?.set(idOf(c, item), item)
      }
    })
    cursor = page.cursor
    if (done(seen) && !page.truncated) return { seen, pages, cursor }
    if (Date.now() > deadline) throw new Error('the feed did not deliver in time')
    if (!page.truncated) await new Promise((r) => setTimeout(r, 50))
  }
}

const has = (seen: Map<string, unknown>[], c: Collection, ...ids: string[]) =>
  ids.every((id) => seen[COLLECTIONS.indexOf(c)]?.has(id))

describe.each(STORAGES)('get_changes (%s)', (kind) => {
  let server: ClockServer
  let owner: Person
  let agent: Agent
  let columnId: string

  beforeAll(async () => {
    // The feed is followed by polling: far more calls than the 240 a minute a key may make.
    server = await startClockServer(kind, { rateLimitPerKey: 1_000_000 })
    owner = new Person(server.url)
    await owner.signUp()
    agent = new Agent(server.url, await owner.createKey())
    columnId = (await agent.ok('list_columns')).columns[0].id
  })
  afterAll(() => server.close())

  /**
   * A fresh cursor past every write made so far (it trails the present by about a
   * second), so what a test writes next is all that follows it.
   */
  const settled = async () => {
    const t = Date.now()
    const deadline = t + 10_000
    for (;;) {
      const { cursor } = await agent.ok('get_changes')
      if (Date.parse(cursor) > t) return cursor as string
      if (Date.now() > deadline) throw new Error('the cursor did not pass the present')
      await new Promise((r) => setTimeout(r, 50))
    }
  }
  const start = settled

  test('since omitted returns empty change sets and a fresh cursor about one second behind', async () => {
    await agent.ok('create_task', { columnId, title: 'before watching' })
    const before = Date.now()
    const page = await agent.ok('get_changes')
    expect(page).toMatchObject({
      tasks: [],
      columns: [],
      comments: [],
      attachments: [],
      claims: [],
      truncated: false,
    })
    expect(page.cursor).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
    const cursor = Date.parse(page.cursor)
    expect(cursor).toBeLessThanOrEqual(Date.now() - 1000)
    expect(cursor).toBeGreaterThan(before - 10_000)
  })

  test('every kind of change arrives in its collection, in the get_board shape', async () => {
    const since = await start()
    const { task } = await agent.ok('create_task', { columnId, title: 'watched', priority: 'low' })
    const { column } = await agent.ok('create_column', { title: 'Watched column' })
    const { comment } = await agent.ok('add_comment', {
      taskId: task.id,
      body: 'hello',
      agentName: 'Ada',
    })
    const { attachment } = await agent.ok('attach_screenshot', {
      taskId: task.id,
      imageBase64: PNG,
      filename: 'shot',
    })
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Ada' })
    const { seen } = await follow(
      agent,
      since,
      (s) =>
        has(s, 'tasks', task.id) &&
        has(s, 'columns', column.id) &&
        has(s, 'comments', comment.id) &&
        has(s, 'attachments', attachment.id) &&
        has(s, 'claims', task.id),
    )
    const full = await agent.ok('get_task', { taskId: task.id })
    expect(seen[0]?.get(task.id)).toEqual(full.task)
    expect(seen[0]?.get(task.id)).toMatchObject({
      lastCommentBy: 'agent',
      lastCommentAuthor: 'Ada',
      lastCommentAt: comment.createdAt,
    })
    const board = await agent.ok('get_board')
    expect(seen[1]?.get(column.id)).toEqual(
      board.columns.find((c: { id: string }) => c.id === column.id),
    )
    expect(seen[1]?.get(column.id)).toHaveProperty('projectId', null)
    expect(seen[2]?.get(comment.id)).toEqual(comment)
    expect(seen[3]?.get(attachment.id)).toMatchObject({
      id: attachment.id,
      taskId: task.id,
      mimeType: 'image/png',
    })
    expect(seen[4]?.get(task.id)).toEqual(full.claim)
  })

  test('edits, moves, archiving, heartbeats and releases arrive; archived cards included', async () => {
    const { task } = await agent.ok('create_task', { columnId, title: 'to archive' })
    const { comment } = await agent.ok('add_comment', { taskId: task.id, body: 'v1' })
    await agent.ok('claim_task', { taskId: task.id })
    const since = await start()
    await agent.ok('update_comment', { commentId: comment.id, body: 'v2' })
    await agent.ok('heartbeat_task', { taskId: task.id })
    await agent.ok('release_task', { taskId: task.id })
    await agent.ok('archive_task', { taskId: task.id })
    const { seen } = await follow(
      agent,
      since,
      (s) =>
        (s[0]?.get(task.id)?.archivedAt ?? null) !== null &&
        has(s, 'comments', comment.id) &&
        s[4]?.get(task.id)?.isLive === false,
    )
    expect(seen[2]?.get(comment.id)).toMatchObject({ body: 'v2' })
    expect(seen[4]?.get(task.id)).toMatchObject({
      isLive: false,
      status: 'released',
      releasedAt: expect.any(String),
    })
    expect(seen[0]?.get(task.id)).toMatchObject({ claim: null })
  })

  test('a claim its holder released reads status released with releasedAt in get_changes; its card there is free', async () => {
    const { task } = await agent.ok('create_task', { columnId, title: 'handed back' })
    const since = await start()
    const { claim } = await agent.ok('claim_task', { taskId: task.id, agentName: 'Ada' })
    const working = await follow(agent, since, (s) => s[4]?.get(task.id)?.isLive === true)
    expect(working.seen[4]?.get(task.id)).toEqual(claim)
    expect(claim).toMatchObject({ status: 'working', releasedAt: null })
    server.clock.advance(1_000)
    const releasedAt = new Date(server.clock.now()).toISOString()
    await agent.ok('release_task', { taskId: task.id, agentName: 'Ada' })
    await agent.ok('update_task', { taskId: task.id, title: 'handed back, then edited' })
    const { seen } = await follow(
      agent,
      working.cursor,
      (s) =>
        s[4]?.get(task.id)?.status === 'released' &&
        s[0]?.get(task.id)?.title === 'handed back, then edited',
    )
    const released = {
      ...claim,
      status: 'released',
      isLive: false,
      releasedAt,
      updatedAt: releasedAt,
    }
    expect(seen[4]?.get(task.id)).toEqual(released)
    expect(seen[0]?.get(task.id)).toMatchObject({ id: task.id, claim: null })
    const board = await agent.ok('get_board')
    expect(board.activity.find((c: { taskId: string }) => c.taskId === task.id)).toEqual(released)
  })

  test('since is inclusive: a change stamped exactly at since is returned', async () => {
    const { task } = await agent.ok('create_task', { columnId, title: 'exact' })
    const [row] = await server.storage.db.query<{ at: string }>(
      `select to_char(changed_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at
         from changes where entity_id = $1`,
      [task.id],
    )
    const { seen } = await follow(agent, row?.at as string, (s) => has(s, 'tasks', task.id))
    expect(has(seen, 'tasks', task.id)).toBe(true)
  })

  test('limit defaults to 200 per collection; truncated pages followed with their cursors deliver everything', async () => {
    const since = await start()
    const ids: string[] = []
    for (let i = 0; i < 205; i++) {
      ids.push((await agent.ok('create_task', { columnId, title: `bulk ${i}` })).task.id)
    }
    await settled()
    const { seen, pages } = await follow(agent, since, (s) => has(s, 'tasks', ...ids))
    const first = pages.find((p) => p.truncated)
    expect(first).toBeDefined()
    expect(first?.tasks.length).toBeLessThanOrEqual(200)
    expect(first?.tasks.length).toBeGreaterThan(150)
    expect(has(seen, 'tasks', ...ids)).toBe(true)
  })

  test('with a small limit every list stays within it and the pages together miss nothing', async () => {
    const since = await start()
    const tasks: string[] = []
    const comments: string[] = []
    for (let i = 0; i < 12; i++) {
      const { task } = await agent.ok('create_task', { columnId, title: `paged ${i}` })
      tasks.push(task.id)
      comments.push((await agent.ok('add_comment', { taskId: task.id, body: `c${i}` })).comment.id)
      if (i % 3 === 0) await agent.ok('claim_task', { taskId: task.id })
    }
    await settled()
    const { seen, pages } = await follow(
      agent,
      since,
      (s) => has(s, 'tasks', ...tasks) && has(s, 'comments', ...comments),
      5,
    )
    expect(pages.filter((p) => p.truncated).length).toBeGreaterThan(1)
    for (const p of pages) for (const c of COLLECTIONS) expect(p[c].length).toBeLessThanOrEqual(5)
    expect(has(seen, 'claims', ...tasks.filter((_, i) => i % 3 === 0))).toBe(true)
  })

  test('limit over 500 or under 1, a malformed since and a projectId are refused, naming the parameter', async () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ limit: 501 }, /limit/],
      [{ limit: 0 }, /limit/],
      [{ limit: 2.5 }, /limit/],
      [{ since: 'yesterday' }, /since/],
      [{ since: '2025-01-01T00:00:00' }, /since/],
      [{ projectId: crypto.randomUUID() }, /"projectId"/],
    ]
    for (const [params, message] of cases) {
      const res = await agent.call('get_changes', params)
      expect(res.status, JSON.stringify(params)).toBe(400)
      expect(res.body.error).toMatch(message)
    }
    expect((await agent.call('get_changes', { limit: 500 })).status).toBe(200)
  })

  test('a column set on fire arrives with the cards whose priority the fire changed, all of them even over the limit', async () => {
    const { column } = await agent.ok('create_column', { title: 'Burning' })
    const made: Record<string, string> = {}
    for (const p of ['urgent', 'high', 'normal', 'low', undefined]) {
      const { task } = await agent.ok('create_task', {
        columnId: column.id,
        title: `p ${p}`,
        ...(p ? { priority: p } : {}),
      })
      made[p ?? 'none'] = task.id
    }
    const since = await start()
    const patched = await owner.request(
      'PATCH',
      `/api/app/orgs/${owner.orgId}/columns/${column.id}`,
      { onFire: true },
    )
    expect(patched.status).toBe(200)
    expect(patched.body.column).toMatchObject({ id: column.id, onFire: true })
    const { seen, pages } = await follow(agent, since, (s) => has(s, 'columns', column.id), 1)
    const page = pages.find((p) => p.columns.some((c) => c.id === column.id)) as Page
    expect(page.columns).toEqual([patched.body.column])
    const moved = [made.normal, made.low, made.none] as string[]
    expect(page.tasks.map((t) => t.id).sort()).toEqual([...moved].sort())
    for (const id of moved) expect(seen[0]?.get(id)).toMatchObject({ priority: 'high' })
    expect(seen[0]?.has(made.urgent as string)).toBe(false)
    expect(seen[0]?.has(made.high as string)).toBe(false)
  })

  test("a column's role change leaves no timestamp", async () => {
    const { column } = await agent.ok('create_column', { title: 'Roled' })
    const since = await start()
    const patched = await owner.request(
      'PATCH',
      `/api/app/orgs/${owner.orgId}/columns/${column.id}`,
      { role: 'blocked' },
    )
    expect(patched.body.column.role).toBe('blocked')
    const marker = (await agent.ok('create_task', { columnId, title: 'marker' })).task.id
    const { seen } = await follow(agent, since, (s) => has(s, 'tasks', marker))
    expect(seen[1]?.has(column.id)).toBe(false)
  })

  test('force-released claims, deleted cards and deleted comments leave no trace', async () => {
    const since = await start()
    const { task: held } = await agent.ok('create_task', { columnId, title: 'held' })
    await agent.ok('claim_task', { taskId: held.id })
    const forced = await owner.request(
      'POST',
      `/api/app/orgs/${owner.orgId}/tasks/${held.id}/force-release`,
    )
    expect(forced.body).toEqual({ released: true })
    const { task: doomed } = await agent.ok('create_task', { columnId, title: 'doomed' })
    const { comment } = await agent.ok('add_comment', { taskId: held.id, body: 'gone soon' })
    await agent.ok('delete_comment', { commentId: comment.id })
    expect(
      (await owner.request('DELETE', `/api/app/orgs/${owner.orgId}/tasks/${doomed.id}`)).status,
    ).toBe(204)
    const marker = (await agent.ok('create_task', { columnId, title: 'marker' })).task.id
    const { seen } = await follow(agent, since, (s) => has(s, 'tasks', marker))
    expect(has(seen, 'tasks', held.id)).toBe(true)
    expect(seen[0]?.has(doomed.id)).toBe(false)
    expect(seen[2]?.has(comment.id)).toBe(false)
    expect(seen[4]?.has(held.id)).toBe(false)
  })

  test('changes written by concurrent agents all reach a follower', async () => {
    const since = await start()
    const writers = await Promise.all(
      [0, 1, 2].map(async () => new Agent(server.url, await owner.createKey())),
    )
    const created: string[] = []
    await Promise.all(
      writers.map(async (w, i) => {
        for (let n = 0; n < 15; n++) {
          created.push((await w.ok('create_task', { columnId, title: `w${i} ${n}` })).task.id)
        }
      }),
    )
    const { seen } = await follow(agent, since, (s) => has(s, 'tasks', ...created), 10)
    expect(has(seen, 'tasks', ...created)).toBe(true)
  })
})
