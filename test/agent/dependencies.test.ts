import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Agent, eventuallyAsync } from '../support/client.ts'
import { expectRefused, ids, seededOrg } from '../support/fixtures.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/**
 * Dependencies between cards (issue 18): `blockedBy` on every task shape, `blocked` while a
 * blocker is open (on the board, not in a done column), set_task_dependencies and its
 * refusals, the get_board filter, and blockers closing and reopening showing the cards they
 * block in get_changes.
 */
describe.each(STORAGES)('card dependencies (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    // get_changes is followed by polling: more calls than the 240 a minute a key may make.
    server = await startServer(kind, { rateLimitPerKey: 1_000_000 })
  })
  afterAll(() => server.close())

  const org = () => seededOrg(server.url)

  const card = async (agent: Agent, columnId: string, title = 'A card') =>
    (await agent.ok('create_task', { columnId, title })).task

  const depend = async (agent: Agent, taskId: string, blockedBy: string[]) =>
    (await agent.ok('set_task_dependencies', { taskId, blockedBy })).task

  const taskOf = async (agent: Agent, taskId: string) =>
    (await agent.ok('get_task', { taskId })).task

  /** A cursor past every write so far (the feed trails the present by about a second). */
  async function cursorNow(agent: Agent): Promise<string> {
    const t = Date.now()
    return eventuallyAsync(async () => {
      const { cursor } = await agent.ok('get_changes')
      return Date.parse(cursor) > t ? cursor : undefined
    })
  }

  /** The tasks of get_changes from `since` once every id in `wanted` has arrived. */
  async function changedSince(agent: Agent, since: string, wanted: string[]) {
    return eventuallyAsync(async () => {
      const page = await agent.ok('get_changes', { since })
      const tasks = new Map<string, any>(page.tasks.map((t: any) => [t.id, t]))
      return wanted.every((id) => tasks.has(id)) ? tasks : undefined
    })
  }

  test('every task shape carries blockedBy (default []) and blocked; the summary form carries blocked', async () => {
    const { agent, backlog } = await org()
    const since = await cursorNow(agent)
    const blocker = await card(agent, backlog, 'Blocker')
    const created = await card(agent, backlog, 'Waits')
    expect(created).toMatchObject({ blockedBy: [], blocked: false })
    const task = await depend(agent, created.id, [blocker.id])
    expect(task).toMatchObject({ blockedBy: [blocker.id], blocked: true })
    expect(await taskOf(agent, created.id)).toMatchObject({
      blockedBy: [blocker.id],
      blocked: true,
    })
    const full = (await agent.ok('get_board')).tasks.find((t: any) => t.id === created.id)
    expect(full).toMatchObject({ blockedBy: [blocker.id], blocked: true })
    const summary = (await agent.ok('get_board', { summary: true })).tasks
    expect(summary.find((t: any) => t.id === created.id)).toMatchObject({ blocked: true })
    expect(summary.find((t: any) => t.id === blocker.id)).toMatchObject({ blocked: false })
    expect(summary[0]).not.toHaveProperty('blockedBy')
    const changed = await changedSince(agent, since, [created.id, blocker.id])
    expect(changed.get(created.id)).toMatchObject({ blockedBy: [blocker.id], blocked: true })
    expect(changed.get(blocker.id)).toMatchObject({ blockedBy: [], blocked: false })
  })

  test('set_task_dependencies replaces the whole set, folds duplicates (ids compare lower-cased) and [] clears it', async () => {
    const { agent, backlog } = await org()
    const [a, b, c, waits] = [
      await card(agent, backlog),
      await card(agent, backlog),
      await card(agent, backlog),
      await card(agent, backlog),
    ]
    expect((await depend(agent, waits.id, [a.id, b.id])).blockedBy).toEqual([a.id, b.id])
    const folded = await depend(agent, waits.id, [c.id, c.id.toUpperCase(), a.id, c.id])
    expect(folded.blockedBy).toEqual([c.id, a.id])
    expect(await depend(agent, waits.id, [c.id, a.id])).toEqual(folded)
    expect(await depend(agent, waits.id, [])).toMatchObject({ blockedBy: [], blocked: false })
  })

  test('a card is blocked while one blocker is open: not archived and not in a done column; a closed blocker stays in blockedBy', async () => {
    const { agent, backlog, doing, done } = await org()
    const first = await card(agent, backlog, 'First')
    const second = await card(agent, doing, 'Second')
    const waits = await card(agent, backlog, 'Waits')
    await depend(agent, waits.id, [first.id, second.id])
    await agent.ok('move_task', { taskId: first.id, columnId: done })
    expect(await taskOf(agent, waits.id)).toMatchObject({
      blockedBy: [first.id, second.id],
      blocked: true,
    })
    await agent.ok('archive_task', { taskId: second.id })
    expect(await taskOf(agent, waits.id)).toMatchObject({
      blockedBy: [first.id, second.id],
      blocked: false,
    })
    await agent.ok('move_task', { taskId: first.id, columnId: backlog })
    expect((await taskOf(agent, waits.id)).blocked).toBe(true)
  })

  test('refused with 400 naming blockedBy: the card itself, more than 50, a malformed id, a cycle (the message names the cards on it)', async () => {
    const { agent, backlog } = await org()
    const a = await card(agent, backlog, 'Alpha')
    const b = await card(agent, backlog, 'Bravo')
    const c = await card(agent, backlog, 'Charlie')
    await expectRefused(
      agent,
      'set_task_dependencies',
      { taskId: a.id, blockedBy: [b.id, a.id] },
      400,
      /blockedBy.*itself/,
    )
    const many = Array.from({ length: 51 }, () => randomUUID())
    await expectRefused(
      agent,
      'set_task_dependencies',
      { taskId: a.id, blockedBy: many },
      400,
      /blockedBy.*50/,
    )
    await expectRefused(
      agent,
      'set_task_dependencies',
      { taskId: a.id, blockedBy: [b.id, 'not-an-id'] },
      400,
      /blockedBy/,
    )
    await expectRefused(
      agent,
      'set_task_dependencies',
      { taskId: a.id, blockedBy: b.id },
      400,
      /blockedBy/,
    )
    await depend(agent, b.id, [c.id])
    await depend(agent, c.id, [a.id])
    const message = await expectRefused(
      agent,
      'set_task_dependencies',
      { taskId: a.id, blockedBy: [b.id] },
      400,
      /blockedBy.*cycle/,
    )
    for (const t of [a, b, c]) expect(message).toContain(t.id)
    expect(message).toMatch(/Alpha.*Bravo.*Charlie.*Alpha/)
    expect((await taskOf(agent, a.id)).blockedBy).toEqual([])
  })

  test('an id that is not a card of this organisation is a 404; an archived card of it is one', async () => {
    const { agent, backlog } = await org()
    const other = await org()
    const foreign = await card(other.agent, other.backlog)
    const a = await card(agent, backlog)
    const archived = await card(agent, backlog)
    await agent.ok('archive_task', { taskId: archived.id })
    for (const id of [foreign.id, randomUUID()]) {
      await expectRefused(
        agent,
        'set_task_dependencies',
        { taskId: a.id, blockedBy: [id] },
        404,
        new RegExp(`blockedBy.*${id}`),
      )
    }
    expect(await depend(agent, a.id, [archived.id])).toMatchObject({
      blockedBy: [archived.id],
      blocked: false,
    })
    await expectRefused(
      agent,
      'set_task_dependencies',
      { taskId: randomUUID(), blockedBy: [] },
      404,
      /taskId/,
    )
  })

  test('a cycle through an archived card is refused too (an archived card keeps its blockedBy and may come back)', async () => {
    const { agent, backlog } = await org()
    const a = await card(agent, backlog, 'On the board')
    const b = await card(agent, backlog, 'Archived')
    await depend(agent, b.id, [a.id])
    await agent.ok('archive_task', { taskId: b.id })
    expect((await taskOf(agent, b.id)).blockedBy).toEqual([a.id])
    await expectRefused(
      agent,
      'set_task_dependencies',
      { taskId: a.id, blockedBy: [b.id] },
      400,
      /cycle/,
    )
  })

  test('archived cards keep their blockedBy, take set_task_dependencies, and a restore brings it back', async () => {
    const { owner, agent, backlog } = await org()
    const blocker = await card(agent, backlog, 'Blocker')
    const waits = await card(agent, backlog, 'Waits')
    await agent.ok('archive_task', { taskId: waits.id })
    const set = await depend(agent, waits.id, [blocker.id])
    expect(set).toMatchObject({ blockedBy: [blocker.id], blocked: true })
    expect(set.archivedAt).not.toBeNull()
    const restored = await owner.request(
      'POST',
      `/api/app/orgs/${owner.orgId}/tasks/${waits.id}/restore`,
    )
    expect(restored.status).toBe(200)
    expect(restored.body.task).toMatchObject({ blockedBy: [blocker.id], blocked: true })
    expect(await taskOf(agent, waits.id)).toMatchObject({ blockedBy: [blocker.id], blocked: true })
  })

  test('get_board takes blocked: true|false as a filter, combined with the others', async () => {
    const { agent, backlog, ready } = await org()
    const blocker = await card(agent, backlog, 'Blocker')
    const waits = await card(agent, ready, 'Waits')
    const free = await card(agent, ready, 'Free')
    await depend(agent, waits.id, [blocker.id])
    expect(ids((await agent.ok('get_board', { blocked: true })).tasks)).toEqual([waits.id])
    expect(ids((await agent.ok('get_board', { blocked: false })).tasks)).toEqual([
      blocker.id,
      free.id,
    ])
    const summary = await agent.ok('get_board', { blocked: false, columnId: ready, summary: true })
    expect(ids(summary.tasks)).toEqual([free.id])
    await expectRefused(agent, 'get_board', { blocked: 'yes' }, 400, /blocked/)
  })

  test('when a blocker closes or reopens the cards it blocks appear in get_changes, changed in the same transaction', async () => {
    const { owner, agent, backlog, done } = await org()
    const blocker = await card(agent, backlog, 'Blocker')
    const waits = await card(agent, backlog, 'Waits')
    const bystander = await card(agent, backlog, 'Not waiting')
    await depend(agent, waits.id, [blocker.id])
    const steps: [string, () => Promise<unknown>, boolean][] = [
      ['moved to done', () => agent.ok('move_task', { taskId: blocker.id, columnId: done }), false],
      ['moved back', () => agent.ok('move_task', { taskId: blocker.id, columnId: backlog }), true],
      ['archived', () => agent.ok('archive_task', { taskId: blocker.id }), false],
      [
        'restored',
        () => owner.request('POST', `/api/app/orgs/${owner.orgId}/tasks/${blocker.id}/restore`),
        true,
      ],
    ]
    for (const [what, step, blocked] of steps) {
      const since = await cursorNow(agent)
      await step()
      const changed = await changedSince(agent, since, [blocker.id, waits.id])
      expect([what, changed.get(waits.id)]).toEqual([
        what,
        expect.objectContaining({ blockedBy: [blocker.id], blocked }),
      ])
      expect(changed.has(bystander.id), what).toBe(false)
      const rows = await server.storage.db.query<{ entity_id: string; at: string }>(
        `select entity_id, changed_at::text as at from changes
          where org_id = $1 and kind = 'task' and entity_id = any($2::uuid[])
            and changed_at >= $3::timestamptz`,
        [owner.orgId, [blocker.id, waits.id], since],
      )
      const times = new Map(rows.map((r) => [r.entity_id, r.at]))
      expect(times.get(waits.id), what).toBe(times.get(blocker.id))
    }
  })

  test("a column's role becoming done closes the blockers in it (a person's change in the app)", async () => {
    const { owner, agent, backlog } = await org()
    const { column } = await agent.ok('create_column', { title: 'Shipped' })
    const blocker = await card(agent, column.id, 'Blocker')
    const waits = await card(agent, backlog, 'Waits')
    await depend(agent, waits.id, [blocker.id])
    const since = await cursorNow(agent)
    const patch = (role: string | null) =>
      owner.request('PATCH', `/api/app/orgs/${owner.orgId}/columns/${column.id}`, { role })
    expect((await patch('done')).status).toBe(200)
    const changed = await changedSince(agent, since, [waits.id])
    expect(changed.get(waits.id)).toMatchObject({ blocked: false })
    expect((await patch('ready')).status).toBe(200)
    expect((await taskOf(agent, waits.id)).blocked).toBe(true)
  })

  test('a card deleted for good leaves the blockedBy of the cards that waited for it, on the board and archived, and they are changed', async () => {
    const { owner, agent, backlog } = await org()
    const blocker = await card(agent, backlog, 'Deleted')
    const other = await card(agent, backlog, 'Stays')
    const waits = await card(agent, backlog, 'Waits on the board')
    const archived = await card(agent, backlog, 'Waits in the archive')
    await depend(agent, waits.id, [blocker.id, other.id])
    await depend(agent, archived.id, [blocker.id])
    await agent.ok('archive_task', { taskId: archived.id })
    const since = await cursorNow(agent)
    const res = await owner.request('DELETE', `/api/app/orgs/${owner.orgId}/tasks/${blocker.id}`)
    expect(res.status).toBe(204)
    expect(await taskOf(agent, waits.id)).toMatchObject({ blockedBy: [other.id], blocked: true })
    expect(await taskOf(agent, archived.id)).toMatchObject({ blockedBy: [] })
    await changedSince(agent, since, [waits.id, archived.id])
    expect(await depend(agent, waits.id, [other.id])).toMatchObject({ blockedBy: [other.id] })
  })

  test('set_task_dependencies on a card another agent holds is refused with 409 and the holder', async () => {
    const { owner, agent, backlog } = await org()
    const second = new Agent(server.url, await owner.createKey('second'))
    const a = await card(agent, backlog)
    const b = await card(agent, backlog)
    await agent.ok('claim_task', { taskId: a.id, agentName: 'Holder' })
    const res = await second.call('set_task_dependencies', { taskId: a.id, blockedBy: [b.id] })
    expect(res.status).toBe(409)
    expect(res.body.holder).toMatchObject({ agentName: 'Holder' })
    expect(await depend(agent, a.id, [b.id])).toMatchObject({ blockedBy: [b.id] })
  })
})
