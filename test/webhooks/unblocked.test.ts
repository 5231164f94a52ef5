import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Agent, Person } from '../support/client.ts'
import type { TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { Receiver, register, startWebhookServer, verifiesWith } from './support.ts'

/**
 * card.unblocked (issue 18): sent once when a card's last open blocker closes (moved to a
 * done column or archived), not when the first of two does; the payload carries the card
 * in the get_board shape. Selectable like the other events.
 */
describe.each(STORAGES)('the card.unblocked event (%s)', (kind) => {
  let server: TestServer
  let receiver: Receiver

  beforeAll(async () => {
    server = await startWebhookServer(kind)
    receiver = await Receiver.start()
  })
  afterAll(async () => {
    await receiver.close()
    await server.close()
  })

  async function org() {
    const owner = new Person(server.url)
    await owner.signUp()
    const agent = new Agent(server.url, await owner.createKey())
    const { columns } = await agent.ok('list_columns')
    const [backlog, , , done] = columns.map((c: { id: string }) => c.id) as string[]
    const card = async (title: string) =>
      (await agent.ok('create_task', { columnId: backlog, title })).task
    return { owner, agent, backlog: backlog as string, done: done as string, card }
  }

  /** The events of a type the outbox holds for the organisation (they commit with the write). */
  const outbox = async (orgId: string, type: string) =>
    (
      await server.storage.db.query<{ payload: string }>(
        'select payload from webhook_events where org_id = $1 and type = $2 order by created_at',
        [orgId, type],
      )
    ).map((r) => JSON.parse(r.payload))

  test('sent once, when the last open blocker closes (not the first of two), with the card in the get_board shape, signed', async () => {
    const { owner, agent, done, card } = await org()
    const hook = await register(owner, `${receiver.url}/unblocked`, ['card.unblocked'])
    const first = await card('First blocker')
    const second = await card('Second blocker')
    const waits = await card('Waits for both')
    await agent.ok('set_task_dependencies', { taskId: waits.id, blockedBy: [first.id, second.id] })
    await agent.ok('move_task', { taskId: first.id, columnId: done })
    expect(await outbox(owner.orgId, 'card.unblocked')).toEqual([])
    await agent.ok('archive_task', { taskId: second.id, agentName: 'Closer' })
    const [event] = await outbox(owner.orgId, 'card.unblocked')
    expect(await outbox(owner.orgId, 'card.unblocked')).toHaveLength(1)
    const board = await agent.ok('get_board')
    const shown = board.tasks.find((t: { id: string }) => t.id === waits.id)
    expect(event).toMatchObject({
      type: 'card.unblocked',
      organizationId: owner.orgId,
      actor: { type: 'agent', agentName: 'Closer' },
      data: { taskId: waits.id, task: shown },
    })
    expect(shown).toMatchObject({ blocked: false, blockedBy: [first.id, second.id] })
    const [delivered] = await receiver.waitFor((all) =>
      all.some((r) => r.path === '/unblocked' && r.json?.data?.taskId === waits.id),
    )
    const got = receiver.received.filter(
      (r) => r.path === '/unblocked' && r.json?.data?.taskId === waits.id,
    )
    expect(got).toHaveLength(1)
    expect(got[0]?.json).toEqual(event)
    expect(verifiesWith(hook.secret, got[0] ?? (delivered as never))).toEqual({
      standard: true,
      service: true,
    })
    // Reopened and closed again: a new unblocking, a new event.
    await agent.ok('move_task', { taskId: first.id, columnId: waits.columnId })
    await agent.ok('move_task', { taskId: first.id, columnId: done })
    expect(await outbox(owner.orgId, 'card.unblocked')).toHaveLength(2)
  })

  test('selectable like the other events: an endpoint that did not pick it gets none; registering it is accepted', async () => {
    const { owner, agent, done, card } = await org()
    await register(owner, `${receiver.url}/moves-only`, ['card.moved'])
    const blocker = await card('Blocker')
    const waits = await card('Waits')
    await agent.ok('set_task_dependencies', { taskId: waits.id, blockedBy: [blocker.id] })
    await agent.ok('move_task', { taskId: blocker.id, columnId: done })
    await receiver.waitFor((all) =>
      all.some((r) => r.path === '/moves-only' && r.json?.data?.taskId === blocker.id),
    )
    expect(
      receiver.received.filter((r) => r.path === '/moves-only').map((r) => r.json.type),
    ).toEqual(['card.moved'])
    const listed = await owner.request('GET', `/api/app/orgs/${owner.orgId}/webhooks`)
    expect(listed.body.webhooks[0].events).toEqual(['card.moved'])
  })
})
