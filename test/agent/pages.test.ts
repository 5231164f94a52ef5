import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Agent, ownerWithAgent, type Person } from '../support/client.ts'
import { seedComments } from '../support/seed.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/**
 * An agent reads a board of any size (docs/design.md Contract 1, "Beyond the
 * specification"): get_board in pages (limit, cursor, nextCursor, changesCursor), and every
 * read cut to fit an answer budget (the Answer-Tokens header here; MCP's own budget is
 * test/mcp/answer-budget.test.ts), never inside a record, with a note saying how to go on.
 */

/** What an answer's text weighs, as budgets count it (no images in these answers). */
const chars = (body: unknown) => JSON.stringify(body).length

/** Budget of the smallest Answer-Tokens allowed: 1,000 tokens, 3,000 characters. */
const SMALL = { 'answer-tokens': '1000' }

describe.each(STORAGES)('reading a big board in pages (%s)', (kind) => {
  let server: TestServer
  let agent: Agent
  let owner: Person
  let columns: { id: string; title: string; position: number }[]
  /** Every card created, by id. */
  const created = new Set<string>()

  beforeAll(async () => {
    server = await startServer(kind, { rateLimitPerKey: 100_000 })
    ;({ agent, owner } = await ownerWithAgent(server.url))
    ;({ columns } = await agent.ok('list_columns'))
    // 60 cards with long descriptions, spread over the columns, some tagged.
    for (let i = 0; i < 60; i++) {
      const column = columns[i % columns.length] as { id: string }
      const { task } = await agent.ok('create_task', {
        columnId: column.id,
        title: `Card ${String(i).padStart(2, '0')}`,
        description: `Plan ${i}: ${'step by step, with care. '.repeat(25)}`,
      })
      created.add(task.id)
      if (i % 3 === 0) await agent.ok('set_task_tags', { taskId: task.id, tags: ['triage'] })
    }
  })
  afterAll(() => server?.close())

  test('without limit or cursor, get_board answers as the specification says: no page fields', async () => {
    const board = await agent.ok('get_board')
    expect(board.tasks).toHaveLength(60)
    expect(Object.keys(board).sort()).toEqual(['activity', 'columns', 'tags', 'tasks'])
  })

  test('a walk through pages of `limit` gives every card exactly once, in board order, activity and tags and changesCursor on the first page only', async () => {
    const whole = await agent.ok('get_board')
    const seen: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await agent.ok('get_board', { limit: 7, ...(cursor ? { cursor } : {}) })
      pages += 1
      expect(page.tasks.length).toBeLessThanOrEqual(7)
      if (pages === 1) {
        expect(page.activity).toEqual(whole.activity)
        expect(page.tags).toEqual(['triage'])
        expect(Date.parse(page.changesCursor)).toBeLessThanOrEqual(Date.now())
      } else {
        expect(page.activity).toBeUndefined()
        expect(page.tags).toBeUndefined()
        expect(page.changesCursor).toBeUndefined()
      }
      seen.push(...page.tasks.map((t: { id: string }) => t.id))
      cursor = page.nextCursor ?? undefined
    } while (cursor)
    expect(pages).toBe(Math.ceil(60 / 7))
    expect(seen).toEqual(whole.tasks.map((t: { id: string }) => t.id))
    expect(new Set(seen)).toEqual(created)
  })

  test('pages follow column position, then card position, then id', async () => {
    const page = await agent.ok('get_board', { limit: 500, summary: true })
    const position = new Map(columns.map((c) => [c.id, c.position]))
    const full = await agent.ok('get_board', { limit: 500 })
    const keys = full.tasks.map((t: { columnId: string; position: number; id: string }) => [
      position.get(t.columnId),
      t.position,
      t.id,
    ])
    const sorted = [...keys].sort((a, b) => a[0] - b[0] || a[1] - b[1] || (a[2] < b[2] ? -1 : 1))
    expect(keys).toEqual(sorted)
    expect(page.tasks.map((t: { id: string }) => t.id)).toEqual(
      full.tasks.map((t: { id: string }) => t.id),
    )
  })

  test('a card that moves ahead of the cursor during a walk is caught by get_changes from the first page’s changesCursor', async () => {
    const first = await agent.ok('get_board', { limit: 10 })
    const last = columns.at(-1) as { id: string }
    // A card not yet read moves into the first column, ahead of where the walk is.
    const board = await agent.ok('get_board')
    const later = board.tasks.find((t: { columnId: string }) => t.columnId === last.id)
    const firstColumn = columns[0] as { id: string }
    await agent.ok('move_task', { taskId: later.id, columnId: firstColumn.id, position: -1 })
    const seen = new Set<string>(first.tasks.map((t: { id: string }) => t.id))
    let cursor = first.nextCursor
    while (cursor) {
      const page = await agent.ok('get_board', { limit: 10, cursor })
      for (const t of page.tasks) seen.add(t.id)
      cursor = page.nextCursor
    }
    expect(seen.has(later.id)).toBe(false)
    await new Promise((r) => setTimeout(r, 1_200))
    const changes = await agent.ok('get_changes', { since: first.changesCursor })
    expect(changes.tasks.map((t: { id: string }) => t.id)).toContain(later.id)
  })

  test('filters combine with pages, and a cursor only goes with the filters it was made for', async () => {
    const page = await agent.ok('get_board', { tag: 'triage', limit: 5 })
    expect(page.tasks).toHaveLength(5)
    expect(page.tasks.every((t: { tags: string[] }) => t.tags.includes('triage'))).toBe(true)
    const other = await agent.call('get_board', { limit: 5, cursor: page.nextCursor })
    expect(other.status).toBe(400)
    expect(other.body.error).toMatch(/^cursor belongs to a page of other filters/)
    const next = await agent.ok('get_board', { tag: 'triage', limit: 100, cursor: page.nextCursor })
    expect(next.tasks).toHaveLength(15)
    expect(next.nextCursor).toBeNull()
  })

  test('a malformed cursor or a limit outside 1–500 is a 400 naming the parameter', async () => {
    for (const [params, message] of [
      [{ cursor: 'not-a-cursor' }, /^cursor must be the nextCursor of a previous page/],
      [{ cursor: '' }, /^cursor must be the nextCursor of a previous page/],
      [{ limit: 0 }, /^limit must be between 1 and 500/],
      [{ limit: 501 }, /^limit must be between 1 and 500/],
      [{ limit: 2.5 }, /^limit must be an integer/],
    ] as const) {
      const res = await agent.call('get_board', params)
      expect(res.status, JSON.stringify(params)).toBe(400)
      expect(res.body.error).toMatch(message)
    }
  })

  test('under an answer budget get_board answers the first page that fits, with nextCursor and a note, never cutting a card', async () => {
    const budgeted = new Agent(server.url, agent.key, SMALL)
    const seen: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const res = await budgeted.call('get_board', cursor ? { cursor } : {})
      expect(res.status).toBe(200)
      const page = res.body
      pages += 1
      expect(chars(page)).toBeLessThanOrEqual(3_000)
      expect(page.tasks.length).toBeGreaterThan(0)
      for (const t of page.tasks) expect(t.description).toMatch(/^Plan \d+: /)
      if (page.nextCursor) expect(page.note).toMatch(/call get_board with this nextCursor/)
      seen.push(...page.tasks.map((t: { id: string }) => t.id))
      cursor = page.nextCursor ?? undefined
    } while (cursor)
    expect(pages).toBeGreaterThan(5)
    expect(new Set(seen)).toEqual(created)
    expect(seen).toHaveLength(created.size)
  })

  test('Answer-Tokens must be one integer from 1,000 to 1,000,000', async () => {
    for (const value of ['999', 'lots', '1000000000', '2000, 3000']) {
      const res = await new Agent(server.url, agent.key, { 'answer-tokens': value }).call(
        'get_board',
      )
      expect(res.status, value).toBe(400)
      expect(res.body.error).toMatch(/^Answer-Tokens must be one integer from 1000 to 1,000,000/)
    }
  })

  test('get_task of a card with many comments under a budget answers the newest that fit; commentsBefore pages back through all of them, once each', async () => {
    const { task } = await agent.ok('create_task', {
      columnId: (columns[0] as { id: string }).id,
      title: 'Long thread',
    })
    await seedComments(
      server.app.live,
      owner.orgId,
      task.id,
      120,
      '2026-01-01T00:00:00.000Z',
      'A comment of some length, to fill the thread:',
    )
    const whole = await agent.ok('get_task', { taskId: task.id })
    expect(whole.comments).toHaveLength(120)
    expect(whole.commentsTruncated).toBeUndefined()
    const budgeted = new Agent(server.url, agent.key, SMALL)
    const first = await budgeted.ok('get_task', { taskId: task.id })
    expect(chars(first)).toBeLessThanOrEqual(3_000)
    expect(first.commentsTruncated).toBe(true)
    expect(first.note).toMatch(/call get_task with this commentsBefore/)
    expect(first.comments.at(-1).id).toBe(whole.comments.at(-1).id)
    const seen: string[] = first.comments.map((c: { id: string }) => c.id)
    let before = first.commentsBefore
    while (before) {
      const page = await budgeted.ok('get_task', { taskId: task.id, commentsBefore: before })
      expect(chars(page)).toBeLessThanOrEqual(3_000)
      seen.unshift(...page.comments.map((c: { id: string }) => c.id))
      before = page.commentsBefore
    }
    expect(seen).toEqual(whole.comments.map((c: { id: string }) => c.id))
    // Without a budget, commentsBefore answers every older comment at once.
    const older = await agent.ok('get_task', {
      taskId: task.id,
      commentsBefore: first.commentsBefore,
    })
    expect(older.comments).toHaveLength(120 - first.comments.length)
    expect(older.commentsTruncated).toBe(false)
    expect(older.commentsBefore).toBeNull()
    const bad = await agent.call('get_task', { taskId: task.id, commentsBefore: 'nope' })
    expect(bad.status).toBe(400)
    expect(bad.body.error).toMatch(/^commentsBefore must be/)
  })

  test('get_changes with a large limit under a budget cuts at a moment: following the cursors gives every change, no answer over the budget', async () => {
    const { cursor: start } = await agent.ok('get_changes')
    const ids: string[] = []
    for (let i = 0; i < 20; i++) {
      const { task } = await agent.ok('create_task', {
        columnId: (columns[1] as { id: string }).id,
        title: `Change ${i}`,
        description: 'x'.repeat(400),
      })
      ids.push(task.id)
    }
    await new Promise((r) => setTimeout(r, 1_200))
    const budgeted = new Agent(server.url, agent.key, SMALL)
    const seen = new Set<string>()
    let since = start
    let calls = 0
    for (;;) {
      const page = await budgeted.ok('get_changes', { since, limit: 500 })
      calls += 1
      expect(chars(page)).toBeLessThanOrEqual(3_000)
      for (const t of page.tasks) seen.add(t.id)
      if (!page.truncated) break
      expect(page.cursor > since || page.tasks.length > 0).toBe(true)
      since = page.cursor
      expect(calls).toBeLessThan(100)
    }
    expect(calls).toBeGreaterThan(1)
    for (const id of ids) expect(seen.has(id)).toBe(true)
  })
})

describe.each(STORAGES)('every list under a budget (%s)', (kind) => {
  let server: TestServer
  let agent: Agent
  let owner: Person
  let budgeted: Agent

  beforeAll(async () => {
    server = await startServer(kind, { rateLimitPerKey: 100_000 })
    ;({ agent, owner } = await ownerWithAgent(server.url))
    budgeted = new Agent(server.url, agent.key, SMALL)
  })
  afterAll(() => server?.close())

  /** Walks a list through its nextCursor under the small budget; every page fits. */
  async function walk(action: string, field: string, params: Record<string, unknown> = {}) {
    const items: { id: string }[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await budgeted.ok(action, { ...params, ...(cursor ? { cursor } : {}) })
      pages += 1
      expect(chars(page)).toBeLessThanOrEqual(3_000)
      items.push(...page[field])
      cursor = page.nextCursor ?? undefined
    } while (cursor)
    return { items, pages }
  }

  test('list_maps, list_columns and list_projects page through nextCursor and each answer fits', async () => {
    for (let i = 0; i < 30; i++) {
      await agent.ok('create_map', { title: `Map ${i} ${'with a long title '.repeat(8)}` })
      await agent.ok('create_column', { title: `Column ${i} ${'wide '.repeat(20)}` })
      await owner.createProject(`Project ${i} ${'named at length '.repeat(5)}`)
    }
    for (const [action, field] of [
      ['list_maps', 'maps'],
      ['list_columns', 'columns'],
      ['list_projects', 'projects'],
    ] as const) {
      const whole = await agent.ok(action)
      expect(whole.nextCursor, action).toBeUndefined()
      const { items, pages } = await walk(action, field)
      expect(pages, action).toBeGreaterThan(1)
      expect(items.map((x) => x.id)).toEqual(whole[field].map((x: { id: string }) => x.id))
    }
  })

  test('get_map of a big map answers nodes then edges in pages, every one once; limit pages without a budget', async () => {
    const { map } = await agent.ok('create_map', { title: 'Big map' })
    const nodeIds: string[] = []
    for (let batch = 0; batch < 5; batch++) {
      const { nodes } = await agent.ok('create_nodes', {
        mapId: map.id,
        nodes: Array.from({ length: 40 }, (_, i) => ({ text: `Thought ${batch}-${i} `.repeat(6) })),
      })
      nodeIds.push(...nodes.map((n: { id: string }) => n.id))
    }
    await agent.ok('create_edges', {
      mapId: map.id,
      edges: nodeIds.slice(1, 100).map((id) => ({ sourceId: nodeIds[0], targetId: id })),
    })
    const whole = await agent.ok('get_map', { mapId: map.id })
    expect(whole.nodes).toHaveLength(200)
    expect(whole.nextCursor).toBeUndefined()
    const nodes: string[] = []
    const edges: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await budgeted.ok('get_map', { mapId: map.id, ...(cursor ? { cursor } : {}) })
      pages += 1
      expect(chars(page)).toBeLessThanOrEqual(3_000)
      nodes.push(...page.nodes.map((n: { id: string }) => n.id))
      edges.push(...page.edges.map((e: { id: string }) => e.id))
      if (page.nextCursor) expect(page.note).toMatch(/call get_map with this nextCursor/)
      cursor = page.nextCursor ?? undefined
    } while (cursor)
    expect(pages).toBeGreaterThan(3)
    expect(new Set(nodes)).toEqual(new Set(nodeIds))
    expect(nodes).toHaveLength(200)
    expect(new Set(edges)).toEqual(new Set(whole.edges.map((e: { id: string }) => e.id)))
    const limited = await agent.ok('get_map', { mapId: map.id, limit: 250 })
    expect(limited.nodes).toHaveLength(200)
    expect(limited.edges).toHaveLength(50)
    const rest = await agent.ok('get_map', { mapId: map.id, cursor: limited.nextCursor })
    expect(rest.edges).toHaveLength(49)
    expect(rest.nextCursor).toBeNull()
  })

  test('a text export cut to fit ends at a line, and offset reads the rest; png comes whole', async () => {
    const { map } = await agent.ok('create_map', { title: 'Outline' })
    const { nodes } = await agent.ok('create_nodes', {
      mapId: map.id,
      nodes: Array.from({ length: 100 }, (_, i) => ({
        text: `Point ${i} of the outline, said at length`,
      })),
    })
    await agent.ok('create_edges', {
      mapId: map.id,
      edges: nodes.slice(1).map((n: { id: string }) => ({ sourceId: nodes[0].id, targetId: n.id })),
    })
    const whole = await agent.ok('export_map', { mapId: map.id, format: 'markdown' })
    let text = ''
    let offset: number | undefined
    let parts = 0
    do {
      const part = await budgeted.ok('export_map', {
        mapId: map.id,
        format: 'markdown',
        ...(offset === undefined ? {} : { offset }),
      })
      parts += 1
      expect(chars(part)).toBeLessThanOrEqual(3_000)
      if (part.nextOffset !== null) expect(part.content.endsWith('\n')).toBe(true)
      text += part.content
      offset = part.nextOffset ?? undefined
    } while (offset !== undefined)
    expect(parts).toBeGreaterThan(1)
    expect(text).toBe(whole.content)
    const png = await agent.call('export_map', { mapId: map.id, format: 'png', offset: 10 })
    expect(png.status).toBe(400)
    expect(png.body.error).toMatch(/^offset pages a text export/)
  })

  test('a write whose answer lists more than fits is written whole, and its answer says how many it left out', async () => {
    const { map } = await agent.ok('create_map', { title: 'Many at once' })
    const answer = await budgeted.ok('create_nodes', {
      mapId: map.id,
      nodes: Array.from({ length: 100 }, (_, i) => ({ text: `Node ${i} `.repeat(10) })),
    })
    expect(chars(answer)).toBeLessThanOrEqual(3_000)
    expect(answer.nodes.length + answer.omitted).toBe(100)
    expect(answer.note).toMatch(/^All 100 nodes were written/)
    const { nodes } = await agent.ok('get_map', { mapId: map.id })
    expect(nodes).toHaveLength(100)
  })
})
