import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boardActions } from '../../shared/actions/board.ts'
import { Agent, ownerWithAgent, type Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/** Everything an organisation has that another one could name by id. */
interface Org {
  owner: Person
  agent: Agent
  backlog: string
  /** A column of its own holding one card. */
  columnId: string
  taskId: string
  commentId: string
  projectId: string
}

type Params = (ids: { mine: Org; id: string }) => Record<string, unknown>

/** Every id-taking parameter of the board actions; `status` is what a foreign or missing id gives. */
const CASES: { action: string; param: string; kind: keyof Org; status: number; params: Params }[] =
  [
    {
      action: 'get_task',
      param: 'taskId',
      kind: 'taskId',
      status: 404,
      params: ({ id }) => ({ taskId: id }),
    },
    {
      action: 'update_task',
      param: 'taskId',
      kind: 'taskId',
      status: 404,
      params: ({ id }) => ({ taskId: id, title: 'x' }),
    },
    {
      action: 'set_task_tags',
      param: 'taskId',
      kind: 'taskId',
      status: 404,
      params: ({ id }) => ({ taskId: id, tags: ['x'] }),
    },
    {
      action: 'set_task_dependencies',
      param: 'taskId',
      kind: 'taskId',
      status: 404,
      params: ({ id }) => ({ taskId: id, blockedBy: [] }),
    },
    {
      action: 'move_task',
      param: 'taskId',
      kind: 'taskId',
      status: 404,
      params: ({ mine, id }) => ({ taskId: id, columnId: mine.backlog }),
    },
    {
      action: 'move_task',
      param: 'columnId',
      kind: 'columnId',
      status: 404,
      params: ({ mine, id }) => ({ taskId: mine.taskId, columnId: id }),
    },
    {
      action: 'add_comment',
      param: 'taskId',
      kind: 'taskId',
      status: 404,
      params: ({ id }) => ({ taskId: id, body: 'x' }),
    },
    {
      action: 'archive_task',
      param: 'taskId',
      kind: 'taskId',
      status: 404,
      params: ({ id }) => ({ taskId: id }),
    },
    {
      action: 'update_comment',
      param: 'commentId',
      kind: 'commentId',
      status: 404,
      params: ({ id }) => ({ commentId: id, body: 'x' }),
    },
    {
      action: 'delete_comment',
      param: 'commentId',
      kind: 'commentId',
      status: 404,
      params: ({ id }) => ({ commentId: id }),
    },
    {
      action: 'create_task',
      param: 'columnId',
      kind: 'columnId',
      status: 404,
      params: ({ id }) => ({ columnId: id, title: 'x' }),
    },
    {
      action: 'rename_column',
      param: 'columnId',
      kind: 'columnId',
      status: 404,
      params: ({ id }) => ({ columnId: id, title: 'x' }),
    },
    {
      action: 'delete_column',
      param: 'columnId',
      kind: 'columnId',
      status: 404,
      params: ({ id }) => ({ columnId: id }),
    },
    {
      action: 'delete_column',
      param: 'destinationColumnId',
      kind: 'columnId',
      status: 404,
      params: ({ mine, id }) => ({ columnId: mine.columnId, destinationColumnId: id }),
    },
    {
      action: 'create_task',
      param: 'projectId',
      kind: 'projectId',
      status: 400,
      params: ({ mine, id }) => ({ columnId: mine.backlog, title: 'x', projectId: id }),
    },
    {
      action: 'update_task',
      param: 'projectId',
      kind: 'projectId',
      status: 400,
      params: ({ mine, id }) => ({ taskId: mine.taskId, projectId: id }),
    },
    {
      action: 'create_column',
      param: 'projectId',
      kind: 'projectId',
      status: 400,
      params: ({ id }) => ({ title: 'x', projectId: id }),
    },
    {
      action: 'get_board',
      param: 'projectId',
      kind: 'projectId',
      status: 400,
      params: ({ id }) => ({ projectId: id }),
    },
    {
      action: 'get_board',
      param: 'columnId',
      kind: 'columnId',
      status: 400,
      params: ({ id }) => ({ columnId: id }),
    },
    {
      action: 'list_columns',
      param: 'projectId',
      kind: 'projectId',
      status: 400,
      params: ({ id }) => ({ projectId: id }),
    },
    {
      action: 'search_tasks',
      param: 'projectId',
      kind: 'projectId',
      status: 400,
      params: ({ id }) => ({ query: 'card', projectId: id }),
    },
    {
      action: 'search_tasks',
      param: 'columnId',
      kind: 'columnId',
      status: 400,
      params: ({ id }) => ({ query: 'card', columnId: id }),
    },
  ]

describe.each(STORAGES)('ids of another organisation (%s)', (kind) => {
  let server: TestServer
  let mine: Org
  let theirs: Org

  async function populated(): Promise<Org> {
    const { owner, agent } = await ownerWithAgent(server.url)
    const backlog = (await agent.ok('list_columns')).columns[0].id
    const res = await owner.request('POST', `/api/app/orgs/${owner.orgId}/projects`, { name: 'P' })
    const projectId = res.body.project.id
    const columnId = (await agent.ok('create_column', { title: 'Own', projectId })).column.id
    const taskId = (await agent.ok('create_task', { columnId, title: 'Card', projectId })).task.id
    const commentId = (await agent.ok('add_comment', { taskId, body: 'Comment' })).comment.id
    return { owner, agent, backlog, columnId, taskId, commentId, projectId }
  }

  /** What the owning organisation sees of its own data. */
  const snapshot = async (org: Org) => ({
    board: await org.agent.ok('get_board', { include: ['comments'] }),
    task: await org.agent.ok('get_task', { taskId: org.taskId }),
    columns: await org.agent.ok('list_columns'),
  })

  beforeAll(async () => {
    server = await startServer(kind)
    mine = await populated()
    theirs = await populated()
  })
  afterAll(() => server.close())

  test.each(CASES)(
    '$action with a $param of another organisation gives exactly the $status of a missing one',
    async ({ action, param, kind: idKind, status, params }) => {
      const before = await snapshot(theirs)
      const mineBefore = await snapshot(mine)
      const foreignId = theirs[idKind] as string
      const missingId = randomUUID()
      const foreign = await mine.agent.call(action, params({ mine, id: foreignId }))
      const missing = await mine.agent.call(action, params({ mine, id: missingId }))

      expect(foreign.status, JSON.stringify(foreign.body)).toBe(status)
      expect(missing.status).toBe(status)
      expect(Object.keys(foreign.body)).toEqual(['error'])
      expect(foreign.body.error).toContain(param)
      expect(foreign.body.error.replaceAll(foreignId, '<id>')).toBe(
        missing.body.error.replaceAll(missingId, '<id>'),
      )
      expect(await snapshot(theirs)).toEqual(before)
      expect(await snapshot(mine)).toEqual(mineBefore)
    },
  )

  test('every id-taking board action is covered', () => {
    const idTaking = Object.entries(boardActions)
      .filter(([, spec]) => Object.keys(spec.input.shape).some((p) => /Id$/.test(p)))
      .map(([name]) => name)
    expect(new Set(CASES.map((c) => c.action))).toEqual(new Set(idTaking))
    for (const [name, spec] of Object.entries(boardActions)) {
      for (const p of Object.keys(spec.input.shape).filter((x) => /Id$/.test(x))) {
        expect(
          CASES.some((c) => c.action === name && c.param === p),
          `${name}.${p}`,
        ).toBe(true)
      }
    }
  })

  test('a revoked key gets 401 on every board action and writes nothing', async () => {
    const key = await mine.owner.createKey('to revoke')
    const doomed = new Agent(server.url, key)
    const list = await mine.owner.request('GET', `/api/app/orgs/${mine.owner.orgId}/api-keys`)
    const row = list.body.apiKeys.find((k: { name: string }) => k.name === 'to revoke')
    await mine.owner.request('DELETE', `/api/app/orgs/${mine.owner.orgId}/api-keys/${row.id}`)
    const before = await snapshot(mine)
    for (const action of Object.keys(boardActions)) {
      const c = CASES.find((x) => x.action === action)
      const params = c ? c.params({ mine, id: mine[c.kind] as string }) : {}
      const res = await doomed.call(action, params)
      expect(res.status, action).toBe(401)
      expect(Object.keys(res.body)).toEqual(['error'])
    }
    expect(await snapshot(mine)).toEqual(before)
  })
})
