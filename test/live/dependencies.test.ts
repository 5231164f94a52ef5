import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type * as Y from 'yjs'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import {
  type Agent,
  connectProvider,
  eventually,
  eventuallyAsync,
  type LiveClient,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import type { TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { Receiver, register, startWebhookServer } from '../webhooks/support.ts'

const card = (live: LiveClient, id: string) => boardMaps(live.doc).tasks.get(id) as Y.Map<unknown>

/**
 * People's live edits of `blockedBy` (the board document, Contract 3: a plain array of card
 * ids on the card) go through the board guard: the action's rules and claim lock, reverted
 * like other invalid live edits; valid ones recorded like other people's edits. A person
 * closing a blocker (dragging it to done) unblocks the cards waiting for it as an agent's
 * move does.
 */
describe.each(STORAGES)("people's live edits of blockedBy (%s)", (kind) => {
  let server: TestServer
  let receiver: Receiver
  let owner: Person
  let agent: Agent
  let columns: { id: string; title: string; role: string | null }[]
  let live: LiveClient
  let other: LiveClient
  const reverts: { reason: string; taskId?: string }[] = []

  beforeAll(async () => {
    server = await startWebhookServer(kind)
    receiver = await Receiver.start()
    ;({ owner, agent } = await ownerWithAgent(server.url))
    columns = (await agent.ok('list_columns')).columns
    await register(owner, `${receiver.url}/hook`, ['card.unblocked'])
    live = await connectProvider(server.url, boardDocName(owner.orgId), await owner.syncToken())
    other = await connectProvider(server.url, boardDocName(owner.orgId), await owner.syncToken())
    live.provider.on('stateless', ({ payload }: { payload: string }) => {
      const message = JSON.parse(payload)
      if (message.type === 'reverted') reverts.push(message)
    })
  })
  afterAll(async () => {
    live.destroy()
    other.destroy()
    await receiver.close()
    await server.close()
  })

  const backlog = () => columns[0]?.id as string
  const done = () => columns.find((c) => c.role === 'done')?.id as string

  const newCard = async (title: string) => {
    const { task } = await agent.ok('create_task', { columnId: backlog(), title })
    await eventually(() => card(live, task.id) && card(other, task.id))
    return task as { id: string }
  }

  /** Sets blockedBy as a person, then waits for the reverted notice about the card. */
  async function refused(taskId: string, value: unknown, reason: RegExp) {
    const before = reverts.length
    card(live, taskId).set('blockedBy', value)
    const notice = await eventually(() =>
      reverts.slice(before).find((r) => r.taskId === taskId && reason.test(r.reason)),
    )
    expect(card(live, taskId).get('blockedBy') ?? []).toEqual([])
    expect(card(other, taskId).get('blockedBy') ?? []).toEqual([])
    expect((await agent.ok('get_task', { taskId })).task.blockedBy).toEqual([])
    return notice
  }

  test('a valid blockedBy edit is kept, stamped and recorded: get_task, blocked and the change feed show it', async () => {
    const { cursor } = await agent.ok('get_changes')
    const blocker = await newCard('Blocker')
    const waits = await newCard('Waits')
    card(live, waits.id).set('blockedBy', [blocker.id])
    const seen = await eventuallyAsync(async () => {
      const { task } = await agent.ok('get_task', { taskId: waits.id })
      return task.blockedBy.length === 1 ? task : undefined
    })
    expect(seen).toMatchObject({ blockedBy: [blocker.id], blocked: true })
    await eventually(() =>
      JSON.stringify(card(other, waits.id).get('blockedBy')) === JSON.stringify([blocker.id])
        ? true
        : undefined,
    )
    await eventuallyAsync(async () => {
      const page = await agent.ok('get_changes', { since: cursor })
      return page.tasks.some((t: any) => t.id === waits.id && t.blocked) ? true : undefined
    })
  })

  test('the card itself, more than 50, malformed and unknown ids, repeats and cycles are reverted on every replica, and the person is told why', async () => {
    const a = await newCard('Alpha')
    const b = await newCard('Bravo')
    await refused(a.id, [a.id], /itself/)
    await refused(
      a.id,
      Array.from({ length: 51 }, () => randomUUID()),
      /at most 50/,
    )
    await refused(a.id, ['not-a-card'], /card ids/)
    await refused(a.id, 'nope', /card ids/)
    await refused(a.id, [randomUUID()], /not a card on the board/)
    await refused(a.id, [b.id, b.id], /repeat/)
    await agent.ok('set_task_dependencies', { taskId: b.id, blockedBy: [a.id] })
    await eventually(() =>
      (card(live, b.id).get('blockedBy') as string[])?.length ? true : undefined,
    )
    const notice = await refused(a.id, [b.id], /cycle/)
    expect(notice.reason).toMatch(/"Alpha" → "Bravo" → "Alpha"/)
  })

  test('an edit of blockedBy on a card another holds is reverted (the claim lock)', async () => {
    const a = await newCard('Held')
    const b = await newCard('Blocker')
    await agent.ok('claim_task', { taskId: a.id, agentName: 'Holder' })
    await eventually(() => boardMaps(live.doc).claims.get(a.id))
    await refused(a.id, [b.id], /claimed by Holder/)
    await agent.ok('release_task', { taskId: a.id, agentName: 'Holder' })
  })

  test('a person dragging the last open blocker to done unblocks the card: changed in the feed, card.unblocked sent once', async () => {
    const first = await newCard('First')
    const second = await newCard('Second')
    const waits = await newCard('Waits on two')
    await agent.ok('set_task_dependencies', { taskId: waits.id, blockedBy: [first.id, second.id] })
    await eventually(() =>
      (card(live, waits.id).get('blockedBy') as string[])?.length === 2 ? true : undefined,
    )
    const { cursor } = await agent.ok('get_changes')
    card(live, first.id).set('columnId', done())
    await eventuallyAsync(async () => {
      const { task } = await agent.ok('get_task', { taskId: first.id })
      return task.columnId === done() ? true : undefined
    })
    expect((await agent.ok('get_task', { taskId: waits.id })).task.blocked).toBe(true)
    card(live, second.id).set('columnId', done())
    const page = await eventuallyAsync(async () => {
      const p = await agent.ok('get_changes', { since: cursor })
      const t = p.tasks.find((x: any) => x.id === waits.id)
      return t && !t.blocked ? t : undefined
    })
    expect(page).toMatchObject({ blocked: false, blockedBy: [first.id, second.id] })
    const [delivered] = await receiver.waitFor((all) =>
      all.some((r) => r.json?.data?.taskId === waits.id),
    )
    expect(delivered).toBeDefined()
    const events = await server.storage.db.query<{ payload: string }>(
      `select payload from webhook_events where org_id = $1 and type = 'card.unblocked'`,
      [owner.orgId],
    )
    const mine = events.map((e) => JSON.parse(e.payload)).filter((e) => e.data.taskId === waits.id)
    expect(mine).toHaveLength(1)
    expect(mine[0]).toMatchObject({
      actor: { type: 'person', email: owner.user?.email },
      data: { task: { id: waits.id, blocked: false } },
    })
  })
})
