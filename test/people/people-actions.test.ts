import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { type ClockServer, startClockServer } from '../claims/harness.ts'
import { Agent, connectProvider, eventually, Person } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'

const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='

describe.each(STORAGES)("the people's side of claims and cards (%s)", (kind) => {
  let server: ClockServer
  let owner: Person
  let admin: Person
  let member: Person
  let outsider: Person
  let agent: Agent
  let other: Agent
  let columnId: string
  let org: string

  /** A person who signs up elsewhere, then joins the owner's organisation with `role`. */
  async function joined(role: 'admin' | 'member'): Promise<Person> {
    const p = new Person(server.url)
    await p.signUp({ organizationName: `${role}'s own` })
    const invite = await owner.request('POST', `/api/app/orgs/${org}/invites`, {
      email: p.user?.email,
      role,
    })
    const accepted = await p.request('POST', `/api/app/invites/${invite.body.invite.token}/accept`)
    expect(accepted.status).toBe(200)
    return p
  }

  beforeAll(async () => {
    server = await startClockServer(kind)
    owner = new Person(server.url)
    await owner.signUp()
    org = owner.orgId
    agent = new Agent(server.url, await owner.createKey('one'))
    other = new Agent(server.url, await owner.createKey('two'))
    columnId = (await agent.ok('list_columns')).columns[0].id
    admin = await joined('admin')
    member = await joined('member')
    outsider = new Person(server.url)
    await outsider.signUp({ organizationName: 'Elsewhere' })
  })
  afterAll(() => server.close())

  const card = async (extra: Record<string, unknown> = {}) =>
    (await agent.ok('create_task', { columnId, title: 'card', ...extra })).task.id as string
  const forceRelease = (p: Person, taskId: string) =>
    p.request('POST', `/api/app/orgs/${org}/tasks/${taskId}/force-release`)

  test('an owner or admin force-releases a claim: the card is free and the record leaves activity', async () => {
    for (const who of [owner, admin]) {
      const taskId = await card()
      await agent.ok('claim_task', { taskId, agentName: 'Ghost' })
      const res = await forceRelease(who, taskId)
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ released: true })
      const board = await other.ok('get_board')
      expect(board.activity.some((c: { taskId: string }) => c.taskId === taskId)).toBe(false)
      expect(board.tasks.find((t: { id: string }) => t.id === taskId).claim).toBeNull()
      const late = await agent.call('heartbeat_task', { taskId, agentName: 'Ghost' })
      expect(late.status).toBe(409)
      expect(late.body.holder).toBeUndefined()
      expect((await other.call('claim_task', { taskId })).status).toBe(200)
    }
  })

  test('a force release deletes the record of a claim its holder released too: it leaves activity and the board document', async () => {
    const taskId = await card()
    const live = await connectProvider(server.url, boardDocName(org), await owner.syncToken())
    try {
      await agent.ok('claim_task', { taskId, agentName: 'Ada' })
      await agent.ok('release_task', { taskId, agentName: 'Ada' })
      const entry = () => boardMaps(live.doc).claims.get(taskId) as { status?: string } | undefined
      await eventually(() => (entry()?.status === 'released' ? true : undefined))
      const before = await other.ok('get_board')
      expect(before.activity.find((c: { taskId: string }) => c.taskId === taskId)).toMatchObject({
        status: 'released',
        releasedAt: expect.any(String),
      })
      const res = await forceRelease(owner, taskId)
      expect(res.body).toEqual({ released: true })
      await eventually(() => (entry() === undefined ? true : undefined))
      const after = await other.ok('get_board')
      expect(after.activity.some((c: { taskId: string }) => c.taskId === taskId)).toBe(false)
    } finally {
      live.destroy()
    }
  })

  test("the Archived view shows a card whose claim its holder released as free, and a held card's claim with releasedAt null", async () => {
    const released = await card({ title: 'archived after release' })
    const held = await card({ title: 'archived while held' })
    await agent.ok('claim_task', { taskId: released, agentName: 'Ada' })
    await agent.ok('release_task', { taskId: released, agentName: 'Ada' })
    await agent.ok('archive_task', { taskId: released })
    const { claim } = await agent.ok('claim_task', { taskId: held, agentName: 'Ada' })
    await agent.ok('archive_task', { taskId: held, agentName: 'Ada' })
    expect(claim).toMatchObject({ status: 'working', releasedAt: null })
    const list = await member.request('GET', `/api/app/orgs/${org}/archived-tasks?limit=200`)
    expect(list.status).toBe(200)
    const byId = new Map(list.body.tasks.map((t: { id: string }) => [t.id, t]))
    expect(byId.get(released)).toMatchObject({ claim: null })
    expect(byId.get(held)).toMatchObject({ claim })
    const board = await other.ok('get_board')
    expect(board.activity.find((c: { taskId: string }) => c.taskId === released)).toMatchObject({
      status: 'released',
      isLive: false,
      releasedAt: expect.any(String),
    })
  })

  test("one archived card reads in the Archived view's shape; a card on the board, a deleted card and another organisation's are 404, a malformed id 400", async () => {
    const archived = await card({ title: 'Off the board' })
    await agent.ok('archive_task', { taskId: archived })
    const one = await member.request('GET', `/api/app/orgs/${org}/archived-tasks/${archived}`)
    expect(one.status).toBe(200)
    const list = await member.request('GET', `/api/app/orgs/${org}/archived-tasks?limit=200`)
    expect(one.body).toEqual({
      task: list.body.tasks.find((t: { id: string }) => t.id === archived),
    })
    expect(one.body.task).toMatchObject({ title: 'Off the board', archivedAt: expect.any(String) })

    const onBoard = await card()
    const gone = await card()
    await agent.ok('archive_task', { taskId: gone })
    expect((await owner.request('DELETE', `/api/app/orgs/${org}/tasks/${gone}`)).status).toBe(204)
    for (const id of [onBoard, gone, crypto.randomUUID()]) {
      const res = await member.request('GET', `/api/app/orgs/${org}/archived-tasks/${id}`)
      expect(res.status).toBe(404)
      expect(res.body.error).toContain(id)
    }
    const theirs = await outsider.request(
      'GET',
      `/api/app/orgs/${outsider.orgId}/archived-tasks/${archived}`,
    )
    expect(theirs.status).toBe(404)
    expect(
      (await member.request('GET', `/api/app/orgs/${org}/archived-tasks/not-a-uuid`)).status,
    ).toBe(400)
  })

  test('force release of a card with no claim record returns released false', async () => {
    const res = await forceRelease(owner, await card())
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ released: false })
  })

  test('force release needs owner or admin (403), membership (404) and a session (401)', async () => {
    const taskId = await card()
    await agent.ok('claim_task', { taskId })
    expect((await forceRelease(member, taskId)).status).toBe(403)
    expect((await forceRelease(outsider, taskId)).status).toBe(404)
    expect((await forceRelease(new Person(server.url), taskId)).status).toBe(401)
    expect((await agent.call('heartbeat_task', { taskId })).status).toBe(200)
  })

  test('a missing card is 404 and a malformed id is 400 naming it', async () => {
    expect((await forceRelease(owner, crypto.randomUUID())).status).toBe(404)
    const bad = await forceRelease(owner, 'not-an-id')
    expect(bad.status).toBe(400)
    expect(bad.body.error).toMatch(/taskId/)
  })

  test('deleting a card removes it, its comments, its screenshots and its claim, whoever holds it', async () => {
    const taskId = await card()
    const { comment } = await agent.ok('add_comment', { taskId, body: 'soon gone' })
    const { attachment } = await agent.ok('attach_screenshot', { taskId, imageBase64: PNG })
    await other.ok('claim_task', { taskId, agentName: 'Holder' })
    const res = await member.request('DELETE', `/api/app/orgs/${org}/tasks/${taskId}`)
    expect(res.status).toBe(204)
    expect((await agent.call('get_task', { taskId })).status).toBe(404)
    const board = await agent.ok('get_board', { include: ['comments', 'attachments'] })
    expect(board.tasks.some((t: { id: string }) => t.id === taskId)).toBe(false)
    expect(board.activity.some((c: { taskId: string }) => c.taskId === taskId)).toBe(false)
    expect(board.comments.some((c: { id: string }) => c.id === comment.id)).toBe(false)
    const db = server.storage.db
    expect(await db.query('select 1 from claims where task_id = $1', [taskId])).toEqual([])
    expect(await db.query('select 1 from files where id = $1', [attachment.id])).toEqual([])
    expect((await agent.call('update_comment', { commentId: comment.id, body: 'x' })).status).toBe(
      404,
    )
    expect((await member.request('DELETE', `/api/app/orgs/${org}/tasks/${taskId}`)).status).toBe(
      404,
    )
    expect(
      (await outsider.request('DELETE', `/api/app/orgs/${org}/tasks/${await card()}`)).status,
    ).toBe(404)
  })

  test("removing a card's project sets projectId null and logs the change", async () => {
    const project = await owner.request('POST', `/api/app/orgs/${org}/projects`, { name: 'P' })
    const taskId = await card({ projectId: project.body.project.id })
    const count = async () =>
      (
        await server.storage.db.query(
          "select 1 from changes where kind = 'task' and entity_id = $1",
          [taskId],
        )
      ).length
    const before = await count()
    const res = await member.request('DELETE', `/api/app/orgs/${org}/tasks/${taskId}/project`)
    expect(res.status).toBe(200)
    expect(res.body.task).toMatchObject({ id: taskId, projectId: null, projectName: null })
    expect(await count()).toBe(before + 1)
    expect((await agent.ok('get_task', { taskId })).task.projectId).toBeNull()
    const again = await member.request('DELETE', `/api/app/orgs/${org}/tasks/${taskId}/project`)
    expect(again.status).toBe(200)
    expect(await count()).toBe(before + 1)
  })

  test('removing the project of a card an agent holds is refused with 409 and the holder', async () => {
    const project = await owner.request('POST', `/api/app/orgs/${org}/projects`, { name: 'Q' })
    const taskId = await card({ projectId: project.body.project.id })
    const { claim } = await agent.ok('claim_task', { taskId, agentName: 'Ada' })
    const res = await owner.request('DELETE', `/api/app/orgs/${org}/tasks/${taskId}/project`)
    expect(res.status).toBe(409)
    expect(res.body.holder).toEqual(claim)
    expect(res.body.expiresAt).toBe(claim.expiresAt)
    expect((await agent.ok('get_task', { taskId })).task.projectId).toBe(project.body.project.id)
  })

  test("a column's fire raises its cards' effective priority to at least high, and putting it out restores their own", async () => {
    const { column } = await agent.ok('create_column', { title: 'Hot' })
    const ids: Record<string, string> = {}
    for (const p of ['urgent', 'normal', 'low']) {
      ids[p] = (
        await agent.ok('create_task', { columnId: column.id, title: p, priority: p })
      ).task.id
    }
    ids.none = (await agent.ok('create_task', { columnId: column.id, title: 'none' })).task.id
    const live = await connectProvider(server.url, boardDocName(org), await member.syncToken(org))
    try {
      const lit = await member.request('PATCH', `/api/app/orgs/${org}/columns/${column.id}`, {
        onFire: true,
      })
      expect(lit.status).toBe(200)
      expect(lit.body.column).toEqual({ ...column, onFire: true })
      await eventually(() =>
        boardMaps(live.doc).columns.get(column.id)?.get('onFire') === true ? true : undefined,
      )
    } finally {
      live.destroy()
    }
    const priorities = async () => {
      const board = await agent.ok('get_board', { columnId: column.id })
      return Object.fromEntries(
        board.tasks.map((t: { title: string; priority: string; ownPriority: string }) => [
          t.title,
          [t.priority, t.ownPriority],
        ]),
      )
    }
    expect(await priorities()).toEqual({
      urgent: ['urgent', 'urgent'],
      normal: ['high', 'normal'],
      low: ['high', 'low'],
      none: ['high', null],
    })
    const high = await agent.ok('get_board', { priority: 'high' })
    expect(high.tasks.map((t: { id: string }) => t.id).sort()).toEqual(
      [ids.normal, ids.low, ids.none].sort(),
    )
    await member.request('PATCH', `/api/app/orgs/${org}/columns/${column.id}`, { onFire: false })
    expect(await priorities()).toEqual({
      urgent: ['urgent', 'urgent'],
      normal: ['normal', 'normal'],
      low: ['low', 'low'],
      none: [null, null],
    })
  })

  test("a column's role is set by a member and refused when not a role", async () => {
    const { column } = await agent.ok('create_column', { title: 'Roles' })
    const set = await member.request('PATCH', `/api/app/orgs/${org}/columns/${column.id}`, {
      role: 'in_progress',
    })
    expect(set.status).toBe(200)
    expect(set.body.column).toMatchObject({ id: column.id, role: 'in_progress', onFire: false })
    const listed = await agent.ok('list_columns')
    expect(listed.columns.find((c: { id: string }) => c.id === column.id).role).toBe('in_progress')
    const cleared = await member.request('PATCH', `/api/app/orgs/${org}/columns/${column.id}`, {
      role: null,
    })
    expect(cleared.body.column.role).toBeNull()
    const cases: [unknown, RegExp][] = [
      [{ role: 'archive' }, /role/],
      [{ onFire: 'yes' }, /onFire/],
      [{}, /role.*onFire/],
      [{ title: 'x' }, /"title"/],
    ]
    for (const [body, message] of cases) {
      const res = await member.request('PATCH', `/api/app/orgs/${org}/columns/${column.id}`, body)
      expect(res.status, JSON.stringify(body)).toBe(400)
      expect(res.body.error).toMatch(message)
    }
    const missing = await member.request(
      'PATCH',
      `/api/app/orgs/${org}/columns/${crypto.randomUUID()}`,
      { role: 'done' },
    )
    expect(missing.status).toBe(404)
    const foreign = await outsider.request('PATCH', `/api/app/orgs/${org}/columns/${column.id}`, {
      role: 'done',
    })
    expect(foreign.status).toBe(404)
  })
})
