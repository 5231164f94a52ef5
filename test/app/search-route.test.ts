import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Agent, Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/** The app's search box route (issue 32): search_tasks for a person, over the same index. */
describe.each(STORAGES)('GET /api/app/orgs/:orgId/search (%s)', (kind) => {
  let server: TestServer
  let owner: Person
  let agent: Agent
  let outsider: Person

  beforeAll(async () => {
    server = await startServer(kind)
    owner = new Person(server.url)
    await owner.signUp()
    agent = new Agent(server.url, await owner.createKey())
    outsider = new Person(server.url)
    await outsider.signUp({ organizationName: 'Elsewhere' })
  })
  afterAll(() => server.close())

  const search = (q: string, extra = '', who = owner) =>
    who.request('GET', `/api/app/orgs/${owner.orgId}/search?q=${encodeURIComponent(q)}${extra}`)

  test('titles, descriptions and comments match as you type (the last word a prefix); archived cards only on request; where it matched with a snippet', async () => {
    const columnId = (await agent.ok('list_columns')).columns[0].id
    const title = (await agent.ok('create_task', { columnId, title: 'Refund webhook retries' }))
      .task
    const described = (
      await agent.ok('create_task', {
        columnId,
        title: 'Payments',
        description: 'The refund flow loses the idempotency key.',
      })
    ).task
    const commented = (await agent.ok('create_task', { columnId, title: 'Ledger' })).task
    const comment = (
      await agent.ok('add_comment', { taskId: commented.id, body: 'Refunds double-post here.' })
    ).comment
    const archived = (await agent.ok('create_task', { columnId, title: 'Old refund report' })).task
    await agent.ok('archive_task', { taskId: archived.id })

    const typed = await search('refu')
    expect(typed.status).toBe(200)
    const ids = typed.body.tasks.map((t: { id: string }) => t.id)
    expect(new Set(ids)).toEqual(new Set([title.id, described.id, commented.id]))
    const byId = new Map(typed.body.tasks.map((t: { id: string }) => [t.id, t]))
    expect(byId.get(title.id)).toMatchObject({ match: { field: 'title' }, archivedAt: null })
    expect(byId.get(described.id)).toMatchObject({
      match: { field: 'description', snippet: expect.stringContaining('**refund**') },
    })
    expect(byId.get(commented.id)).toMatchObject({
      match: { field: 'comment', commentId: comment.id },
    })
    // Title above description above comment.
    expect(ids[0]).toBe(title.id)

    const withArchived = await search('refund', '&archived=true')
    expect(withArchived.body.tasks.map((t: { id: string }) => t.id)).toContain(archived.id)
    expect(
      withArchived.body.tasks.find((t: { id: string }) => t.id === archived.id).archivedAt,
    ).toEqual(expect.any(String))

    const paged = await search('refund', '&limit=1')
    expect(paged.body.tasks).toHaveLength(1)
    expect(paged.body.nextCursor).toEqual(expect.any(String))
  })

  test('a query without a word, a bad archived or limit are 400 naming the problem; another organisation is 404', async () => {
    for (const [q, extra, word] of [
      ['', '', 'query'],
      ['!!', '', 'query'],
      ['x', '&archived=maybe', 'includeArchived'],
      ['x', '&limit=0', 'limit'],
      ['x', '&limit=1000', 'limit'],
    ] as const) {
      const res = await search(q, extra)
      expect(res.status, `${q}${extra}`).toBe(400)
      expect(JSON.stringify(res.body)).toContain(word)
    }
    expect((await search('refund', '', outsider)).status).toBe(404)
  })
})
