import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { Agent } from '../support/client.ts'
import { expectRefused, ISO, ids, seededOrg } from '../support/fixtures.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

describe.each(STORAGES)('columns (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(kind)
  })
  afterAll(() => server.close())

  const org = () => seededOrg(server.url)

  const card = async (agent: Agent, columnId: string, title = 'A card') =>
    (await agent.ok('create_task', { columnId, title })).task

  const columnIds = async (agent: Agent) => ids((await agent.ok('list_columns')).columns)

  describe('create_column', () => {
    test('create_column returns the column, organisation-level, appended at the end when position is omitted', async () => {
      const { agent, backlog, ready, doing, done } = await org()
      const { column } = await agent.ok('create_column', { title: 'Review' })
      expect(column).toEqual({
        id: expect.any(String),
        title: 'Review',
        position: expect.any(Number),
        role: null,
        projectId: null,
        onFire: false,
      })
      const before = (await agent.ok('list_columns')).columns
      expect(column.position).toBeGreaterThan(before.at(-2).position)
      expect(await columnIds(agent)).toEqual([backlog, ready, doing, done, column.id])
      const board = await agent.ok('get_board')
      expect(board.columns.at(-1)).toEqual(column)
    })

    test('create_column with position places the column there', async () => {
      const { agent, backlog, ready, doing, done } = await org()
      const cols = (await agent.ok('list_columns')).columns
      const position = (cols[0].position + cols[1].position) / 2
      const { column } = await agent.ok('create_column', { title: 'Triage', position })
      expect(column.position).toBe(position)
      expect(await columnIds(agent)).toEqual([backlog, column.id, ready, doing, done])
      const last = await agent.ok('create_column', { title: 'Last' })
      expect((await columnIds(agent)).at(-1)).toBe(last.column.id)
    })

    test('create_column with projectId makes the project’s own column', async () => {
      const { owner, agent } = await org()
      const p = await owner.createProject('P')
      const { column } = await agent.ok('create_column', { title: 'P review', projectId: p })
      expect(column.projectId).toBe(p)
      const listed = await agent.ok('list_columns', { projectId: p })
      expect(ids(listed.columns)).toContain(column.id)
    })

    test('a project from another organisation (or none) is refused with 400 naming projectId', async () => {
      const { agent } = await org()
      const { owner: stranger } = await org()
      const foreign = await stranger.createProject('Theirs')
      await expectRefused(
        agent,
        'create_column',
        { title: 'x', projectId: foreign },
        400,
        /projectId/,
      )
      await expectRefused(
        agent,
        'create_column',
        { title: 'x', projectId: randomUUID() },
        400,
        /projectId/,
      )
      await expectRefused(
        agent,
        'create_column',
        { title: 'x', projectId: 'p' },
        400,
        /projectId.*UUID/,
      )
      expect(await columnIds(agent)).toHaveLength(4)
    })

    test('column title is 1–200 characters', async () => {
      const { agent } = await org()
      const long = 'c'.repeat(200)
      expect((await agent.ok('create_column', { title: long })).column.title).toBe(long)
      await expectRefused(agent, 'create_column', { title: '' }, 400, /title/)
      await expectRefused(agent, 'create_column', { title: `${long}c` }, 400, /title.*200/)
      await expectRefused(agent, 'create_column', {}, 400, /title is required/)
      await expectRefused(agent, 'create_column', { title: 'x', position: 'top' }, 400, /position/)
      await expectRefused(agent, 'create_column', { title: 'x', role: 'done' }, 400, /"role"/)
      await expectRefused(agent, 'create_column', { title: 'x', onFire: true }, 400, /"onFire"/)
      expect(await columnIds(agent)).toHaveLength(5)
    })
  })

  describe('rename_column', () => {
    test('rename_column returns { columnId, title, updatedAt } and leaves cards and positions untouched', async () => {
      const { agent, ready } = await org()
      const a = await card(agent, ready)
      const b = await card(agent, ready)
      const before = await agent.ok('get_board')
      const res = await agent.ok('rename_column', { columnId: ready, title: 'Up next' })
      expect(res).toEqual({
        columnId: ready,
        title: 'Up next',
        updatedAt: expect.stringMatching(ISO),
      })

      const after = await agent.ok('get_board')
      expect(after.tasks).toEqual(before.tasks)
      expect(ids(after.tasks)).toEqual([a.id, b.id])
      const renamed = after.columns.find((c: { id: string }) => c.id === ready)
      const was = before.columns.find((c: { id: string }) => c.id === ready)
      expect(renamed).toEqual({ ...was, title: 'Up next' })
      expect(ids(after.columns)).toEqual(ids(before.columns))
    })

    test('rename_column title is 1–200 characters', async () => {
      const { agent, ready } = await org()
      await expectRefused(agent, 'rename_column', { columnId: ready, title: '' }, 400, /title/)
      await expectRefused(
        agent,
        'rename_column',
        { columnId: ready, title: 'r'.repeat(201) },
        400,
        /title.*200/,
      )
      await expectRefused(agent, 'rename_column', { columnId: ready }, 400, /title is required/)
      const ok = await agent.ok('rename_column', { columnId: ready, title: 'r'.repeat(200) })
      expect(ok.title).toHaveLength(200)
    })

    test('rename_column of a column that does not exist is a 404', async () => {
      const { agent } = await org()
      await expectRefused(
        agent,
        'rename_column',
        { columnId: randomUUID(), title: 'x' },
        404,
        /columnId/,
      )
      await expectRefused(
        agent,
        'rename_column',
        { columnId: 'ready', title: 'x' },
        400,
        /columnId.*UUID/,
      )
    })
  })

  describe('delete_column', () => {
    test('an empty column is deleted', async () => {
      const { agent, backlog, ready, doing, done } = await org()
      const { column } = await agent.ok('create_column', { title: 'Temp' })
      const res = await agent.ok('delete_column', { columnId: column.id })
      expect(res).toEqual({ deleted: true, columnId: column.id, movedCount: 0 })
      expect(await columnIds(agent)).toEqual([backlog, ready, doing, done])
      await expectRefused(
        agent,
        'rename_column',
        { columnId: column.id, title: 'x' },
        404,
        /columnId/,
      )
    })

    test('a column still holding cards is refused with 400 without destinationColumnId', async () => {
      const { agent, ready } = await org()
      const t = await card(agent, ready)
      await expectRefused(agent, 'delete_column', { columnId: ready }, 400, /destinationColumnId/)
      expect(await columnIds(agent)).toContain(ready)
      expect((await agent.ok('get_task', { taskId: t.id })).task.columnId).toBe(ready)
    })

    test('archived cards count as holding the column', async () => {
      const { agent, ready } = await org()
      const t = await card(agent, ready)
      await agent.ok('archive_task', { taskId: t.id })
      await expectRefused(agent, 'delete_column', { columnId: ready }, 400, /destinationColumnId/)
      expect(await columnIds(agent)).toContain(ready)
    })

    test('with destinationColumnId every card, archived ones too, moves to the destination’s bottom in order, and movedCount is returned', async () => {
      const { agent, backlog, ready, doing, done } = await org()
      const d1 = await card(agent, done, 'already done 1')
      const d2 = await card(agent, done, 'already done 2')
      const r1 = await card(agent, ready, 'r1')
      const r2 = await card(agent, ready, 'r2')
      const r0 = (await agent.ok('create_task', { columnId: ready, title: 'r0', position: 1 })).task
      const gone = await card(agent, ready, 'archived')
      await agent.ok('archive_task', { taskId: gone.id })

      const res = await agent.ok('delete_column', { columnId: ready, destinationColumnId: done })
      expect(res).toEqual({ deleted: true, columnId: ready, movedCount: 4 })
      expect(await columnIds(agent)).toEqual([backlog, doing, done])
      const board = await agent.ok('get_board', { columnId: done })
      expect(ids(board.tasks)).toEqual([d1.id, d2.id, r0.id, r1.id, r2.id])
      const positions = board.tasks.map((t: { position: number }) => t.position)
      expect(positions).toEqual([...positions].sort((a, b) => a - b))
      expect(new Set(positions).size).toBe(positions.length)
      const archived = (await agent.ok('get_task', { taskId: gone.id })).task
      expect(archived.columnId).toBe(done)
      expect(archived.position).toBeGreaterThan(board.tasks.at(-1).position)
    })

    test('destinationColumnId equal to columnId is refused with 400, and nothing changes', async () => {
      const { agent, ready } = await org()
      const t = await card(agent, ready)
      await expectRefused(
        agent,
        'delete_column',
        { columnId: ready, destinationColumnId: ready },
        400,
        /destinationColumnId/,
      )
      expect(await columnIds(agent)).toContain(ready)
      expect((await agent.ok('get_task', { taskId: t.id })).task).toEqual(t)
    })

    test('an unknown destinationColumnId is a 404 naming it, and nothing changes', async () => {
      const { agent, ready } = await org()
      const t = await card(agent, ready)
      await expectRefused(
        agent,
        'delete_column',
        { columnId: ready, destinationColumnId: randomUUID() },
        404,
        /destinationColumnId/,
      )
      await expectRefused(
        agent,
        'delete_column',
        { columnId: ready, destinationColumnId: 'done' },
        400,
        /destinationColumnId.*UUID/,
      )
      expect(await columnIds(agent)).toContain(ready)
      expect((await agent.ok('get_task', { taskId: t.id })).task).toEqual(t)
    })

    test('delete_column of a column that does not exist is a 404', async () => {
      const { agent, done } = await org()
      await expectRefused(agent, 'delete_column', { columnId: randomUUID() }, 404, /columnId/)
      await expectRefused(
        agent,
        'delete_column',
        { columnId: randomUUID(), destinationColumnId: done },
        404,
        /columnId/,
      )
      await expectRefused(agent, 'delete_column', {}, 400, /columnId is required/)
    })
  })
})
