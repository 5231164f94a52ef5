import { createHash } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Agent, Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

describe.each(STORAGES)('API keys (%s)', (kind) => {
  let server: TestServer
  let owner: Person

  beforeAll(async () => {
    server = await startServer(kind)
    owner = new Person(server.url)
    await owner.signUp({ organizationName: 'Keyholders' })
  })
  afterAll(() => server.close())

  test('a key begins with the service prefix and is shown exactly once, at creation', async () => {
    const res = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
      name: 'ci bot',
    })
    expect(res.status).toBe(201)
    expect(res.body.key).toMatch(/^cb_[0-9a-f]{32}[0-9A-Za-z]{40}[0-9a-f]{8}$/)
    expect(res.body.apiKey).toEqual({
      id: expect.any(String),
      name: 'ci bot',
      prefix: expect.stringMatching(/^cb_/),
      createdAt: expect.any(String),
    })
    const list = await owner.request('GET', `/api/app/orgs/${owner.orgId}/api-keys`)
    expect(JSON.stringify(list.body)).not.toContain(res.body.key)
    expect(list.body.apiKeys.map((k: { name: string }) => k.name)).toContain('ci bot')
  })

  test('only a SHA-256 of the key is kept', async () => {
    const res = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
      name: 'hashed',
    })
    const [row] = await server.storage.db.query<Record<string, unknown>>(
      'select * from api_keys where id = $1',
      [res.body.apiKey.id],
    )
    expect(row?.key_hash).toBe(createHash('sha256').update(res.body.key).digest('hex'))
    expect(JSON.stringify(row)).not.toContain(res.body.key.slice(35, 75))
  })

  test('each key has its own robot account, to which its writes are attributed', async () => {
    const a = new Agent(server.url, await owner.createKey('robot a'))
    const b = new Agent(server.url, await owner.createKey('robot b'))
    const whoA = await a.ok('whoami')
    const whoB = await b.ok('whoami')
    expect(whoA.agent.email).not.toBe(whoB.agent.email)
    expect(whoA.agent.email).toMatch(new RegExp(`^key-${whoA.key.id}@agents\\.`))
    const { columns } = await a.ok('list_columns')
    const { task } = await a.ok('create_task', { columnId: columns[0].id, title: 'by robot a' })
    expect(task.createdByEmail).toBe(whoA.agent.email)
    expect(task.createdByEmail).not.toBe(owner.user?.email)
  })

  test('whoami names the organisation and the key in use', async () => {
    const agent = new Agent(server.url, await owner.createKey('named key'))
    const who = await agent.ok('whoami')
    expect(who.organization).toEqual({ id: owner.orgId, name: 'Keyholders' })
    expect(who.key.name).toBe('named key')
    expect(who.board).toMatchObject({ columns: expect.any(Number), tasks: expect.any(Number) })
  })

  test('the key list shows when a key was last used: never until its first request, then to the minute', async () => {
    const created = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
      name: 'sometimes used',
    })
    const listed = async () =>
      (await owner.request('GET', `/api/app/orgs/${owner.orgId}/api-keys`)).body.apiKeys.find(
        (k: { id: string }) => k.id === created.body.apiKey.id,
      ).lastUsedAt as string | null
    expect(await listed()).toBeNull()
    const before = Date.now()
    await new Agent(server.url, created.body.key).ok('whoami')
    const first = await listed()
    expect(first).not.toBeNull()
    expect(Date.parse(first as string)).toBeGreaterThanOrEqual(before - 1000)
    // Within the minute, a further request does not write the key row again.
    await new Agent(server.url, created.body.key).ok('list_columns')
    expect(await listed()).toBe(first)
  })

  test('a revoked key disappears from the list and answers 401 at once; revoking it again is a 404', async () => {
    const created = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
      name: 'doomed',
    })
    const agent = new Agent(server.url, created.body.key)
    expect((await agent.call('whoami')).status).toBe(200)
    expect(
      (
        await owner.request(
          'DELETE',
          `/api/app/orgs/${owner.orgId}/api-keys/${created.body.apiKey.id}`,
        )
      ).status,
    ).toBe(204)
    expect((await agent.call('whoami')).status).toBe(401)
    const list = await owner.request('GET', `/api/app/orgs/${owner.orgId}/api-keys`)
    expect(list.body.apiKeys.map((k: { name: string }) => k.name)).not.toContain('doomed')
    expect(
      (
        await owner.request(
          'DELETE',
          `/api/app/orgs/${owner.orgId}/api-keys/${created.body.apiKey.id}`,
        )
      ).status,
    ).toBe(404)
  })

  test("another organisation's owner cannot revoke or list this organisation's keys", async () => {
    const created = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
      name: 'guarded',
    })
    const other = new Person(server.url)
    await other.signUp()
    expect(
      (
        await other.request(
          'DELETE',
          `/api/app/orgs/${owner.orgId}/api-keys/${created.body.apiKey.id}`,
        )
      ).status,
    ).toBe(404)
    expect(
      (
        await other.request(
          'DELETE',
          `/api/app/orgs/${other.orgId}/api-keys/${created.body.apiKey.id}`,
        )
      ).status,
    ).toBe(404)
    expect((await new Agent(server.url, created.body.key).call('whoami')).status).toBe(200)
  })

  test('a key only ever sees its own organisation', async () => {
    const other = new Person(server.url)
    await other.signUp({ organizationName: 'Elsewhere' })
    const otherAgent = new Agent(server.url, await other.createKey())
    const { columns } = await otherAgent.ok('list_columns')
    await otherAgent.ok('create_task', { columnId: columns[0].id, title: 'secret elsewhere' })
    const mine = new Agent(server.url, await owner.createKey())
    const board = await mine.ok('get_board')
    expect(JSON.stringify(board)).not.toContain('secret elsewhere')
    expect((await mine.ok('whoami')).organization.name).toBe('Keyholders')
  })
})

describe('revocation takes effect even for a write already in flight (postgres)', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer('postgres')
  })
  afterAll(() => server.close())

  test('a revocation waits for the writes holding the key; every write after it is refused', async () => {
    const owner = new Person(server.url)
    await owner.signUp()
    const created = await owner.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
      name: 'racing',
    })
    const agent = new Agent(server.url, created.body.key)
    const { columns } = await agent.ok('list_columns')
    const writes = Array.from({ length: 40 }, (_, i) =>
      agent.call('create_task', { columnId: columns[0].id, title: `w${i}` }),
    )
    const revoked = owner.request(
      'DELETE',
      `/api/app/orgs/${owner.orgId}/api-keys/${created.body.apiKey.id}`,
    )
    const results = await Promise.all(writes)
    expect((await revoked).status).toBe(204)
    for (const r of results) expect([200, 401]).toContain(r.status)
    // Exactly the writes that answered 200 committed: none refused after revocation left a card.
    const board = await owner
      .createKey('reader')
      .then((k) => new Agent(server.url, k).ok('get_board'))
    const onBoard = board.tasks.map((t: { title: string }) => t.title).sort()
    const answered = results
      .filter((r) => r.status === 200)
      .map((r) => r.body.task.title as string)
      .sort()
    expect(onBoard).toEqual(answered)
    expect(
      (await agent.call('create_task', { columnId: columns[0].id, title: 'after' })).status,
    ).toBe(401)
  })
})
