import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import {
  Agent,
  connectProvider,
  eventually,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

describe.each(STORAGES)('agent endpoint envelope (%s)', (kind) => {
  let server: TestServer
  let agent: Agent
  let owner: Person

  beforeAll(async () => {
    server = await startServer(kind)
    ;({ agent, owner } = await ownerWithAgent(server.url))
  })
  afterAll(() => server.close())

  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${server.url}/api/agent`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${agent.key}`,
        'content-type': 'application/json',
        ...headers,
      },
      body,
    })

  test.each(['GET', 'PUT', 'PATCH', 'DELETE'])(
    'any method other than POST returns 405 (%s)',
    async (method) => {
      const res = await fetch(`${server.url}/api/agent`, {
        method,
        headers: { authorization: `Bearer ${agent.key}` },
      })
      expect(res.status).toBe(405)
      expect(res.headers.get('allow')).toBe('POST')
      expect((await res.json()).error).toMatch(/POST/)
    },
  )

  test('a missing Authorization header is a 401 whose message hints at the redirecting bare domain', async () => {
    const res = await fetch(`${server.url}/api/agent`, {
      method: 'POST',
      body: '{"action":"whoami"}',
    })
    expect(res.status).toBe(401)
    expect((await res.json()).error).toMatch(/redirect/)
  })

  test('a malformed key is a 401 with the same hint', async () => {
    const res = await post('{"action":"whoami"}', { authorization: 'Bearer not-a-key' })
    expect(res.status).toBe(401)
    expect((await res.json()).error).toMatch(/Malformed API key.*redirect/)
  })

  test('a well-formed key with a wrong checksum is refused as malformed', async () => {
    const last = agent.key.at(-1) === '0' ? '1' : '0'
    const res = await post('{"action":"whoami"}', {
      authorization: `Bearer ${agent.key.slice(0, -1)}${last}`,
    })
    expect(res.status).toBe(401)
  })

  test('a key that does not exist is a 401', async () => {
    const other = await startServer('pglite')
    try {
      const { agent: foreign } = await ownerWithAgent(other.url)
      const res = await post('{"action":"whoami"}', { authorization: `Bearer ${foreign.key}` })
      expect(res.status).toBe(401)
      expect((await res.json()).error).toMatch(/Invalid or revoked/)
    } finally {
      await other.close()
    }
  })

  test('a revoked key stops working at once', async () => {
    const key = await owner.createKey('short-lived')
    const temp = new Agent(server.url, key)
    expect((await temp.call('whoami')).status).toBe(200)
    const list = await owner.request('GET', `/api/app/orgs/${owner.orgId}/api-keys`)
    const row = list.body.apiKeys.find((k: { name: string }) => k.name === 'short-lived')
    expect(
      (await owner.request('DELETE', `/api/app/orgs/${owner.orgId}/api-keys/${row.id}`)).status,
    ).toBe(204)
    const after = await temp.call('whoami')
    expect(after.status).toBe(401)
    expect(after.body.error).toMatch(/revoked/)
  })

  test('a body that is not JSON is a 400', async () => {
    const res = await post('{nope')
    expect(res.status).toBe(400)
    expect((await res.json()).error).toMatch(/JSON/)
  })

  test('an unknown action is a 400 naming it', async () => {
    const res = await agent.call('delete_task', { taskId: crypto.randomUUID() })
    expect(res.status).toBe(400)
    expect(res.body.error).toContain('delete_task')
  })

  test.each([
    ['create_card', 'create_task'],
    ['get_cards', 'get_board'],
    ['delete_card', 'archive_task'],
    ['add_labels', 'set_task_tags'],
    ['create_mindmap', 'create_map'],
  ])('an unknown action (%s) points to the nearest ones (%s)', async (wrong, right) => {
    const res = await agent.call(wrong)
    expect(res.status).toBe(400)
    expect(res.body.error).toMatch(
      new RegExp(`Unknown action "${wrong}" \\(did you mean [^)]*\\b${right}\\b`),
    )
  })

  test('an unknown action nothing resembles says where the actions are listed', async () => {
    const res = await agent.call('frobnicate_everything')
    expect(res.status).toBe(400)
    expect(res.body.error).not.toContain('did you mean')
    expect(res.body.error).toMatch(/actions are listed in docs\/agent-api\.md/)
  })

  test('an unknown parameter is named, with the nearest one and everything the action takes', async () => {
    const res = await agent.call('create_task', { columnId: 'x', name: 'Sorted' })
    expect(res.status).toBe(400)
    expect(res.body.error).toMatch(
      /^Unknown parameter "name" for create_task \(did you mean "title"\?\); it takes columnId, title, description, .*agentName, house, generation, isSubChild$/,
    )
  })

  test('a body field other than action and params is a 400 naming it', async () => {
    const res = await post('{"action":"whoami","params":{},"extra":1}')
    expect(res.status).toBe(400)
    expect((await res.json()).error).toContain('"extra"')
  })

  test('params that are not an object are a 400', async () => {
    const res = await post('{"action":"whoami","params":[1]}')
    expect(res.status).toBe(400)
    expect((await res.json()).error).toMatch(/params/)
  })

  test('a parameter name the action does not take is a 400 naming it, never a silent no-op', async () => {
    const res = await agent.call('list_projects', { color: 'red' })
    expect(res.status).toBe(400)
    expect(res.body.error).toContain('"color"')
  })

  test('an unknown parameter is named even when other params are also wrong', async () => {
    const res = await agent.call('create_task', { columnId: 'x', title: '', bogus: 1 })
    expect(res.status).toBe(400)
    expect(res.body.error).toContain('"bogus"')
  })

  test('a malformed id is a 400 naming the parameter', async () => {
    const res = await agent.call('get_task', { taskId: 'not-a-uuid' })
    expect(res.status).toBe(400)
    expect(res.body.error).toMatch(/taskId.*UUID/)
  })

  test('failures carry an { error } body with a message for a person', async () => {
    const res = await agent.call('get_task', { taskId: crypto.randomUUID() })
    expect(res.status).toBe(404)
    expect(Object.keys(res.body)).toEqual(['error'])
    expect(res.body.error).toMatch(/No card/)
  })

  test('an agent write shows up in a connected provider at once', async () => {
    const token = await owner.syncToken()
    const live = await connectProvider(server.url, boardDocName(owner.orgId), token)
    try {
      const { columns } = await agent.ok('list_columns')
      const { task } = await agent.ok('create_task', {
        columnId: columns[0].id,
        title: 'Seen live',
      })
      const seen = await eventually(() => boardMaps(live.doc).tasks.get(task.id)?.get('title'))
      expect(seen).toBe('Seen live')
    } finally {
      live.destroy()
    }
  })
})
