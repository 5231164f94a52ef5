import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type Agent, ownerWithAgent, type Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/**
 * An organisation's descriptions are read from storage only by what shows them (issue 29:
 * a card's description is most of its weight and is read only when shown). The first read
 * that needs them takes every card's: reads that show none (get_board's summary, whoami,
 * list_columns, list_projects) wait for none and leave none in the process's memory.
 */
describe.each(STORAGES)('reads that show no description (%s)', (kind) => {
  let server: TestServer
  let agent: Agent
  let owner: Person
  const descriptions = new Map<string, string>()

  beforeAll(async () => {
    server = await startServer(kind)
    ;({ agent, owner } = await ownerWithAgent(server.url))
    const { columns } = await agent.ok('list_columns')
    for (let i = 0; i < 3; i++) {
      const description = `Plan ${i}: ${'measure, then change. '.repeat(40)}`
      const { task } = await agent.ok('create_task', {
        columnId: columns[0].id,
        title: `Card ${i}`,
        description,
      })
      descriptions.set(task.id, description)
    }
  })
  afterAll(() => server?.close())

  /** What the process holds of the cards' descriptions ('' for what it has not read). */
  const held = () =>
    [...descriptions.keys()].map((id) => server.app.descriptions.get(owner.orgId, id))

  test('get_board in summary form, whoami, list_columns and list_projects read no description, and the full form after them shows every one', async () => {
    // As a process that has not read this organisation's descriptions (or forgot them).
    server.app.descriptions.forget(owner.orgId)
    expect(held()).toEqual(['', '', ''])

    const summary = await agent.ok('get_board', { summary: true })
    expect(summary.tasks.map((t: { id: string }) => t.id).sort()).toEqual(
      [...descriptions.keys()].sort(),
    )
    await agent.ok('get_board', { summary: true, limit: 2 })
    await agent.ok('get_board', { summary: true, include: ['comments'] })
    await agent.ok('whoami')
    await agent.ok('list_columns')
    await agent.ok('list_projects')
    expect(held()).toEqual(['', '', ''])

    const full = await agent.ok('get_board')
    for (const t of full.tasks as { id: string; description: string }[]) {
      expect(t.description).toBe(descriptions.get(t.id))
    }
    const page = await agent.ok('get_board', { limit: 1 })
    expect(page.tasks[0].description).toBe(descriptions.get(page.tasks[0].id))
    expect(held()).toEqual([...descriptions.values()])
  })

  test('a write after a summary read keeps every description stored', async () => {
    server.app.descriptions.forget(owner.orgId)
    await agent.ok('get_board', { summary: true })
    const [taskId] = descriptions.keys()
    await agent.ok('update_task', { taskId, title: 'Renamed after a summary' })
    const { task } = await agent.ok('get_task', { taskId })
    expect(task.title).toBe('Renamed after a summary')
    expect(task.description).toBe(descriptions.get(taskId as string))
    const rows = await server.storage.db.query<{ id: string; description: string }>(
      'select id, description from task_texts where org_id = $1',
      [owner.orgId],
    )
    expect(new Map(rows.map((r) => [r.id, r.description]))).toEqual(descriptions)
  })
})
