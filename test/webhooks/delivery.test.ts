import { createHmac, randomUUID } from 'node:crypto'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type * as Y from 'yjs'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { Agent, connectProvider, ownerWithAgent, type Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import {
  deliveryRows,
  eventually,
  firstColumn,
  listed,
  type Received,
  Receiver,
  register,
} from './support.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe.each(STORAGES)('webhook deliveries (%s)', (kind) => {
  let server: TestServer
  let receiver: Receiver

  beforeAll(async () => {
    server = await startServer(kind, { webhookAllowPrivate: true })
    receiver = await Receiver.start((r) => (r.path.startsWith('/redirect') ? 302 : 200))
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  /** A fresh organisation whose webhook posts to `path` on the receiver. */
  async function setup(path: string, events?: Parameters<typeof register>[2]) {
    const { owner, agent, orgId } = await ownerWithAgent(server.url)
    const hook = await register(owner, `${receiver.url}${path}`, events)
    return { owner, agent, orgId, hook, columnId: await firstColumn(agent) }
  }

  const at = (path: string) => receiver.received.filter((r) => r.path === path)
  const waitAt = async (path: string, count: number) => {
    await receiver.waitFor(() => at(path).length >= count)
    return at(path)
  }

  test('card.created reaches the endpoint signed: X-Service-Signature is hex HMAC-SHA256 of "<timestamp>.<body>" keyed with the secret', async () => {
    const { agent, orgId, hook, columnId } = await setup('/created')
    const { task } = await agent.ok('create_task', {
      columnId,
      title: 'Signed card',
      agentName: 'Ada',
      house: 'Lovelace',
      generation: 2,
    })
    const [r] = (await waitAt('/created', 1)) as [Received]
    const ts = r.headers['x-service-timestamp'] as string
    expect(Math.abs(Number(ts) - Date.now() / 1000)).toBeLessThan(60)
    const expected = createHmac('sha256', hook.secret).update(`${ts}.${r.body}`).digest('hex')
    expect(r.headers['x-service-signature']).toBe(`v1=${expected}`)
    expect(r.headers['x-service-delivery']).toMatch(UUID)
    expect(r.headers['content-type']).toBe('application/json')

    expect(r.json).toEqual({
      id: expect.stringMatching(UUID),
      type: 'card.created',
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      organizationId: orgId,
      actor: {
        type: 'agent',
        email: task.createdByEmail,
        keyId: expect.stringMatching(UUID),
        agentName: 'Ada',
        house: 'Lovelace',
        generation: 2,
        isSubChild: false,
        label: 'Ada, 2nd of House Lovelace',
      },
      data: { taskId: task.id, task },
    })
  })

  test('every delivery also verifies with the Standard Webhooks reference library, and a changed body does not', async () => {
    const { agent, hook, columnId } = await setup('/standard')
    await agent.ok('create_task', { columnId, title: 'Standard card' })
    const [r] = (await waitAt('/standard', 1)) as [Received]
    expect(r.headers['webhook-id']).toBe(r.headers['x-service-delivery'])
    expect(r.headers['webhook-timestamp']).toBe(r.headers['x-service-timestamp'])
    const verified = new Webhook(hook.secret).verify(r.body, r.headers)
    expect(verified).toEqual(r.json)
    expect(() =>
      new Webhook(hook.secret).verify(r.body.replace('Standard card', 'Forged card'), r.headers),
    ).toThrow()
    const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`
    expect(() => new Webhook(other).verify(r.body, r.headers)).toThrow()
  })

  test('card.moved carries the destination column title; a move within the same column is no card.moved', async () => {
    const { agent, columnId } = await setup('/moved', ['card.moved'])
    const { columns } = await agent.ok('list_columns')
    const done = columns.find((c: { title: string }) => c.title === 'Done')
    const { task } = await agent.ok('create_task', { columnId, title: 'Mover' })
    await agent.ok('move_task', { taskId: task.id, columnId, position: 5 })
    const moved = await agent.ok('move_task', { taskId: task.id, columnId: done.id })
    const [r] = (await waitAt('/moved', 1)) as [Received]
    expect(r.json.type).toBe('card.moved')
    expect(r.json.data).toEqual({
      taskId: task.id,
      task: moved.task,
      fromColumnId: columnId,
      toColumnId: done.id,
      toColumnTitle: 'Done',
    })
    // The in-column move committed before the real one; only one card.moved exists.
    expect(at('/moved')).toHaveLength(1)
  })

  test('delete_column with a destination sends one card.moved per card it moves, also for a column of many cards', async () => {
    const { agent, columnId } = await setup('/column-moves', ['card.moved'])
    const { column } = await agent.ok('create_column', { title: 'Doomed' })
    // More cards than one pipelined outbox statement takes (50): the stepwise path.
    const ids = new Set<string>()
    for (let i = 0; i < 60; i++) {
      ids.add((await agent.ok('create_task', { columnId: column.id, title: `C${i}` })).task.id)
    }
    await agent.ok('delete_column', { columnId: column.id, destinationColumnId: columnId })
    const got = await waitAt('/column-moves', 60)
    expect(new Set(got.map((r) => r.json.data.task.id))).toEqual(ids)
    expect(new Set(got.map((r) => r.json.id)).size).toBe(60)
    for (const r of got) {
      expect(r.json.data).toMatchObject({
        fromColumnId: column.id,
        toColumnId: columnId,
        toColumnTitle: 'Backlog',
      })
    }
  })

  test('comment.added says whether the author was a person: a comment without agentName counts as human', async () => {
    const { agent, columnId } = await setup('/comments', ['comment.added'])
    const { task } = await agent.ok('create_task', { columnId, title: 'Discussed' })
    const byAgent = await agent.ok('add_comment', {
      taskId: task.id,
      body: 'from the agent',
      agentName: 'Ada',
    })
    const byHuman = await agent.ok('add_comment', { taskId: task.id, body: 'typed by a person' })
    const got = await waitAt('/comments', 2)
    const of = (id: string) => got.find((r) => r.json.data.comment.id === id)?.json
    expect(of(byAgent.comment.id).data).toEqual({
      commentId: byAgent.comment.id,
      comment: byAgent.comment,
      taskId: task.id,
      authorIsHuman: false,
    })
    expect(of(byHuman.comment.id).data).toEqual({
      commentId: byHuman.comment.id,
      comment: byHuman.comment,
      taskId: task.id,
      authorIsHuman: true,
    })
    expect(of(byHuman.comment.id).actor).toMatchObject({ type: 'agent', agentName: null })
  })

  test('an endpoint receives only the event types it subscribed to, and every subscriber gets its own delivery id', async () => {
    const { owner, agent, columnId } = await setup('/only-comments', ['comment.added'])
    await register(owner, `${receiver.url}/everything`)
    const { task } = await agent.ok('create_task', { columnId, title: 'Quiet card' })
    await agent.ok('add_comment', { taskId: task.id, body: 'hello' })
    const everything = await waitAt('/everything', 2)
    const [comment] = (await waitAt('/only-comments', 1)) as [Received]
    expect(at('/only-comments').map((r) => r.json.type)).toEqual(['comment.added'])
    const same = everything.find((r) => r.json.type === 'comment.added') as Received
    expect(same.json.id).toBe(comment.json.id)
    expect(same.headers['x-service-delivery']).not.toBe(comment.headers['x-service-delivery'])
  })

  test("a person's change through the app API is announced like an agent's, with the person as actor", async () => {
    const { owner, agent, columnId } = await setup('/person', ['card.moved'])
    const user = owner.user as NonNullable<Person['user']>
    const { column } = await agent.ok('create_column', { title: 'Emptied by a person' })
    const { task } = await agent.ok('create_task', { columnId: column.id, title: 'Rehomed' })
    const res = await owner.request(
      'DELETE',
      `/api/app/orgs/${owner.orgId}/columns/${column.id}?destinationColumnId=${columnId}`,
    )
    expect(res.status).toBe(200)
    const [r] = (await waitAt('/person', 1)) as [Received]
    expect(r.json.actor).toEqual({ type: 'person', email: user.email, userId: user.id })
    expect(r.json.data).toMatchObject({
      task: { id: task.id, columnId },
      fromColumnId: column.id,
      toColumnId: columnId,
      toColumnTitle: 'Backlog',
    })
  })

  test("a person's live edit raises the same events: moving a card in the board document is a card.moved by the person", async () => {
    const { owner, agent, columnId } = await setup('/live-edit', ['card.moved'])
    const user = owner.user as NonNullable<Person['user']>
    const { columns } = await agent.ok('list_columns')
    const ready = columns.find((c: { title: string }) => c.title === 'Ready')
    const { task } = await agent.ok('create_task', { columnId, title: 'Dragged' })
    const live = await connectProvider(
      server.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    try {
      await eventually(async () => boardMaps(live.doc).tasks.get(task.id))
      ;(boardMaps(live.doc).tasks.get(task.id) as Y.Map<unknown>).set('columnId', ready.id)
      const [r] = (await waitAt('/live-edit', 1)) as [Received]
      expect(r.json.actor).toEqual({ type: 'person', email: user.email, userId: user.id })
      expect(r.json.data).toMatchObject({
        taskId: task.id,
        fromColumnId: columnId,
        toColumnId: ready.id,
        toColumnTitle: 'Ready',
      })
    } finally {
      live.destroy()
    }
  })

  test('an event exists exactly when its change committed: a write that fails after emitting sends nothing', async () => {
    const { agent, orgId, hook, columnId } = await setup('/rollback')
    await expect(
      server.app.live.write(boardDocName(orgId), { type: 'server', orgId }, async (w) => {
        w.emit({ type: 'card.created', data: { task: { id: randomUUID(), title: 'Ghost' } } })
        throw new Error('the write fails after emitting')
      }),
    ).rejects.toThrow(/fails after emitting/)
    const { task } = await agent.ok('create_task', { columnId, title: 'Real' })
    const [r] = (await waitAt('/rollback', 1)) as [Received]
    expect(r.json.data.task.id).toBe(task.id)
    const rows = await deliveryRows(server, hook.id)
    expect(rows).toHaveLength(1)
    expect(at('/rollback')).toHaveLength(1)
  })

  test('the list shows each endpoint with its recent deliveries, and a delivery shows its attempts', async () => {
    const { owner, agent, hook, columnId } = await setup('/listed')
    await agent.ok('create_task', { columnId, title: 'One' })
    await agent.ok('create_task', { columnId, title: 'Two' })
    await waitAt('/listed', 2)
    const webhook = await eventually(async () => {
      const w = await listed(owner, hook.id)
      return w.recentDeliveries.every((d: { status: string }) => d.status === 'delivered') &&
        w.recentDeliveries.length === 2
        ? w
        : undefined
    })
    expect(webhook.recentDeliveries[0]).toMatchObject({
      eventType: 'card.created',
      status: 'delivered',
      attempts: 1,
      lastStatusCode: 200,
      lastError: null,
      nextAttemptAt: null,
    })
    const deliveryId = webhook.recentDeliveries[0].id
    const detail = await owner.request(
      'GET',
      `/api/app/orgs/${owner.orgId}/webhooks/${hook.id}/deliveries/${deliveryId}`,
    )
    expect(detail.status).toBe(200)
    expect(detail.body.attempts).toEqual([
      expect.objectContaining({ attempt: 1, ok: true, statusCode: 200, error: null }),
    ])
  })

  test('a redirect is not followed: a 3xx is a failed attempt and the Location is never requested', async () => {
    const { agent, hook, columnId } = await setup('/redirect-me', ['card.created'])
    await agent.ok('create_task', { columnId, title: 'Redirected' })
    await waitAt('/redirect-me', 1)
    const [row] = await eventually(async () => {
      const rows = await deliveryRows(server, hook.id)
      return rows[0]?.last_status_code ? rows : undefined
    })
    expect(row).toMatchObject({ status: 'pending', attempts: 1, last_status_code: 302 })
    expect(row?.last_error).toMatch(/redirect .*not followed/)
    expect(receiver.received.some((r) => r.path === '/redirected')).toBe(false)
  })

  test('deleting an endpoint stops its deliveries', async () => {
    const { owner, agent, hook, columnId } = await setup('/deleted')
    const other = await register(owner, `${receiver.url}/kept`)
    expect(
      (await owner.request('DELETE', `/api/app/orgs/${owner.orgId}/webhooks/${hook.id}`)).status,
    ).toBe(204)
    await agent.ok('create_task', { columnId, title: 'After delete' })
    await waitAt('/kept', 1)
    expect(at('/deleted')).toHaveLength(0)
    expect(await deliveryRows(server, hook.id)).toHaveLength(0)
    expect(await deliveryRows(server, other.id)).toHaveLength(1)
  })
})

describe('one receiver, many writers', () => {
  test('agents on two keys of one organisation are told apart in the actor', async () => {
    const server = await startServer('pglite', { webhookAllowPrivate: true })
    const receiver = await Receiver.start()
    try {
      const { owner, agent } = await ownerWithAgent(server.url)
      const second = await owner.createKey('second')
      await register(owner, receiver.url, ['card.created'])
      const columnId = await firstColumn(agent)
      const other = new Agent(server.url, second)
      await agent.ok('create_task', { columnId, title: 'first key' })
      await other.ok('create_task', { columnId, title: 'second key' })
      const got = await receiver.waitFor((all) => all.length >= 2)
      const keys = new Set(got.map((r) => r.json.actor.keyId))
      const emails = new Set(got.map((r) => r.json.actor.email))
      expect(keys.size).toBe(2)
      expect(emails.size).toBe(2)
    } finally {
      await server.close()
      await receiver.close()
    }
  })
})
