import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { CLAIM_LOCK_SPACE } from '../../server/claims/locks.ts'
import { type Agent, Person } from '../support/client.ts'
import { expectRefused, ids } from '../support/fixtures.ts'
import { fleet, scaledOut } from '../support/scaled-out.ts'
import { STORAGES } from '../support/storage.ts'
import { boardWithAgents, type ClockServer, startClockServer } from './harness.ts'

const LEASE_MS = 900_000

/**
 * claim_next (issue 18): the best card that is on the board, not blocked, under no live
 * claim and matching every filter, claimed atomically; `{ task: null, claim: null }` when
 * there is none.
 */
describe.each(STORAGES)('claim_next (%s)', (kind) => {
  let server: ClockServer

  beforeAll(async () => {
    server = await startClockServer(kind, { rateLimitPerKey: 1_000_000 })
  })
  afterAll(() => server.close())

  /** A fresh organisation: two agents, the four seeded columns (backlog, ready, doing, done). */
  async function board() {
    const { owner, agents, columns } = await boardWithAgents(server.url, 2)
    const [backlog, ready, doing, done] = ids(columns) as [string, string, string, string]
    const [agent, other] = agents as [Agent, Agent]
    const card = async (columnId: string, fields: Record<string, unknown> = {}) =>
      (await agent.ok('create_task', { columnId, title: 'A card', ...fields })).task
    return { owner, agent, other, backlog, ready, doing, done, card }
  }

  test('hands out the best card: highest effective priority (untriaged last; an on-fire column counts as at least high), then the columns’ order, then the position', async () => {
    const { owner, agent, backlog, ready, doing, card } = await board()
    const untriaged = await card(backlog, { title: 'untriaged' })
    const low = await card(backlog, { priority: 'low' })
    const normalReady = await card(ready, { priority: 'normal' })
    const normalBacklogSecond = await card(backlog, { priority: 'normal' })
    const normalBacklogFirst = await card(backlog, { priority: 'normal', position: -10 })
    const burning = await card(doing, { priority: 'low', title: 'on fire' })
    const urgent = await card(doing, { priority: 'urgent' })
    const high = await card(backlog, { priority: 'high' })
    const lit = await owner.request('PATCH', `/api/app/orgs/${owner.orgId}/columns/${doing}`, {
      onFire: true,
    })
    expect(lit.status).toBe(200)
    const order: string[] = []
    for (;;) {
      const next = await agent.ok('claim_next', { agentName: 'Picker' })
      if (next.task === null) break
      order.push(next.task.id)
    }
    expect(order).toEqual(
      ids([
        urgent,
        high, // high in backlog comes before the on-fire low card in the later column
        burning,
        normalBacklogFirst,
        normalBacklogSecond,
        normalReady,
        low,
        untriaged,
      ]),
    )
  })

  test('the answer is a real claim: the card carries it, others get 409, and it is in activity', async () => {
    const { agent, other, backlog, card } = await board()
    const t = await card(backlog, { title: 'Mine' })
    const next = await agent.ok('claim_next', {
      agentName: 'Picker',
      house: 'Ops',
      generation: 2,
      note: 'on it',
    })
    expect(next.claim).toMatchObject({
      taskId: t.id,
      agentName: 'Picker',
      note: 'on it',
      status: 'working',
      isLive: true,
      holder: 'Picker, 2nd of House Ops',
    })
    expect(Date.parse(next.claim.expiresAt) - Date.parse(next.claim.startedAt)).toBe(LEASE_MS)
    expect(next.task).toMatchObject({ id: t.id, claim: next.claim, blocked: false })
    const refused = await other.call('update_task', { taskId: t.id, title: 'theirs' })
    expect(refused.status).toBe(409)
    expect(refused.body.holder).toEqual(next.claim)
    const { activity } = await agent.ok('get_board')
    expect(activity).toContainEqual(next.claim)
    expect(
      await agent.ok('heartbeat_task', {
        taskId: t.id,
        agentName: 'Picker',
        house: 'Ops',
        generation: 2,
      }),
    ).toMatchObject({ claim: { taskId: t.id } })
  })

  test('passes over blocked cards, cards under a live claim (the caller’s own too) and cards in a done column unless role is done; a lapsed or released claim’s card is free', async () => {
    const { agent, other, backlog, ready, done, card } = await board()
    const blocker = await card(backlog, { priority: 'low', title: 'blocker' })
    const blocked = await card(backlog, { priority: 'urgent', title: 'blocked' })
    await agent.ok('set_task_dependencies', { taskId: blocked.id, blockedBy: [blocker.id] })
    const held = await card(ready, { priority: 'urgent', title: 'held by other' })
    await other.ok('claim_task', { taskId: held.id, agentName: 'Other' })
    const mine = await card(ready, { priority: 'urgent', title: 'held by me' })
    await agent.ok('claim_task', { taskId: mine.id, agentName: 'Picker' })
    const finished = await card(done, { priority: 'urgent', title: 'done' })
    expect((await agent.ok('claim_next', { agentName: 'Picker' })).task.id).toBe(blocker.id)
    expect(await agent.ok('claim_next', { agentName: 'Picker' })).toEqual({
      task: null,
      claim: null,
    })
    expect((await agent.ok('claim_next', { agentName: 'Picker', role: 'done' })).task.id).toBe(
      finished.id,
    )
    // The blocker done: the card it blocked is free to take.
    await agent.ok('move_task', { taskId: blocker.id, columnId: done, agentName: 'Picker' })
    expect((await agent.ok('claim_next', { agentName: 'Picker' })).task.id).toBe(blocked.id)
    await agent.ok('release_task', { taskId: mine.id, agentName: 'Picker' })
    expect((await agent.ok('claim_next', { agentName: 'Picker' })).task.id).toBe(mine.id)
    server.clock.advance(LEASE_MS + 1)
    expect((await agent.ok('claim_next', { agentName: 'Picker', role: 'ready' })).task.id).toBe(
      held.id,
    )
  })

  test('asks in a row follow every change between them: a card made or reprioritised, a claim made, released or lapsed since the last ask changes what comes next', async () => {
    const { agent, other, backlog, card } = await board()
    const next = async () => (await agent.ok('claim_next', { agentName: 'Picker' })).task?.id
    const high = await card(backlog, { priority: 'high' })
    const normal = await card(backlog, { priority: 'normal' })
    const low = await card(backlog, { priority: 'low' })
    const lowest = await card(backlog, { priority: 'low' })
    const last = await card(backlog, { priority: 'low' })
    expect(await next()).toBe(high.id)
    // Its claim lapses, and nothing else happens: it is the best free card again.
    server.clock.advance(LEASE_MS + 1)
    expect(await next()).toBe(high.id)
    // Made since: an urgent card comes first.
    const urgent = await card(backlog, { priority: 'urgent' })
    expect(await next()).toBe(urgent.id)
    server.clock.advance(60_000)
    expect(await next()).toBe(normal.id)
    // Claimed by another since: passed over.
    await other.ok('claim_task', { taskId: low.id, agentName: 'Other' })
    expect(await next()).toBe(lowest.id)
    // Released since: free again, and better than what is left.
    await agent.ok('release_task', { taskId: normal.id, agentName: 'Picker' })
    expect(await next()).toBe(normal.id)
    // The first two claims lapse (taken a minute before the others): their cards come back.
    server.clock.advance(LEASE_MS - 30_000)
    expect(await next()).toBe(urgent.id)
    expect(await next()).toBe(high.id)
    // Reprioritised since: the last card, now urgent, is free and first.
    await agent.ok('update_task', { taskId: last.id, priority: 'urgent' })
    expect(await next()).toBe(last.id)
    expect(await next()).toBeUndefined()
  })

  test('every filter must match: columnId, projectId, role (of the card’s column), tag (whole, any case) and type', async () => {
    const { owner, agent, backlog, ready, card } = await board()
    const projectId = await owner.createProject('Apollo')
    const target = await card(ready, { projectId, type: 'bug', priority: 'low' })
    await agent.ok('set_task_tags', { taskId: target.id, tags: ['Backend'] })
    const decoys = [
      await card(backlog, { projectId, type: 'bug', priority: 'urgent' }),
      await card(ready, { type: 'bug', priority: 'urgent' }),
      await card(ready, { projectId, type: 'feature', priority: 'urgent' }),
      await card(ready, { projectId, type: 'bug', priority: 'urgent' }),
    ]
    await agent.ok('set_task_tags', { taskId: decoys[0]?.id, tags: ['backend'] })
    await agent.ok('set_task_tags', { taskId: decoys[1]?.id, tags: ['backend'] })
    await agent.ok('set_task_tags', { taskId: decoys[2]?.id, tags: ['backend'] })
    await agent.ok('set_task_tags', { taskId: decoys[3]?.id, tags: ['backend-api'] })
    const filters = { columnId: ready, projectId, role: 'ready', tag: 'BACKEND', type: 'bug' }
    const next = await agent.ok('claim_next', { ...filters, agentName: 'Picker' })
    expect(next.task.id).toBe(target.id)
    expect(await agent.ok('claim_next', { ...filters, agentName: 'Picker' })).toEqual({
      task: null,
      claim: null,
    })
    expect((await agent.ok('claim_next', { role: 'backlog' })).task.id).toBe(decoys[0]?.id)
  })

  // PGlite has one connection: a transaction holding locks there would hold every other.
  test.runIf(kind === 'postgres')(
    'one process deciding in memory passes over a card whose claim lock another transaction holds (the batch never waits for it)',
    async () => {
      const { agent, backlog, card } = await board()
      const order: string[] = []
      for (let i = 0; i < 6; i++) order.push((await card(backlog, { title: `q ${i}` })).id)
      const first = await server.storage.db.transaction(async (tx) => {
        for (const id of order.slice(0, 3)) {
          await tx.query('select pg_advisory_xact_lock($1, hashtext($2))', [CLAIM_LOCK_SPACE, id])
        }
        return agent.ok('claim_next', { agentName: 'Picker' })
      })
      expect(first.task?.id).toBe(order[3])
      const second = await agent.ok('claim_next', { agentName: 'Picker' })
      expect(second.task?.id).toBe(order[0])
    },
    60_000,
  )

  test('wrong filters are refused with 400 naming the parameter', async () => {
    const { agent } = await board()
    const { agent: stranger } = await board()
    const foreign = (await stranger.ok('list_columns')).columns[0].id
    const { projects } = await stranger.ok('list_projects')
    await expectRefused(agent, 'claim_next', { columnId: foreign }, 400, /columnId/)
    await expectRefused(agent, 'claim_next', { projectId: crypto.randomUUID() }, 400, /projectId/)
    await expectRefused(agent, 'claim_next', { role: 'doing' }, 400, /role/)
    await expectRefused(agent, 'claim_next', { type: 'epic' }, 400, /type/)
    await expectRefused(agent, 'claim_next', { note: '' }, 400, /note/)
    await expectRefused(agent, 'claim_next', { taskId: crypto.randomUUID() }, 400, /taskId/)
    expect(projects).toEqual([])
  })
})

/**
 * The race: agents on two server processes sharing one Postgres and one Redis call
 * claim_next at once, over and over, until nothing is left. Claims are locks in Postgres, so
 * no card is handed out twice, whatever each process's copy of the board has heard yet.
 */
describe('claim_next races on real Postgres, two processes', () => {
  const AGENTS = 16
  const CARDS = 240
  const service = scaledOut()

  test('16 agents over two processes take every card exactly once, never one card twice', async () => {
    const { a, storage } = service()
    const owner = new Person(a.url)
    await owner.signUp()
    // Two agents per key, one on each process, as a fleet spread by a balancer.
    const racers = await fleet(service(), owner, AGENTS, 'racer')
    const first = racers[0]?.agent as Agent
    const { columns } = await first.ok('list_columns')
    const levels = ['urgent', 'high', 'normal', 'low', undefined]
    const created: string[] = []
    for (let i = 0; i < CARDS; i++) {
      const { task } = await first.ok('create_task', {
        columnId: columns[i % 3].id,
        title: `work ${i}`,
        ...(levels[i % 5] ? { priority: levels[i % 5] } : {}),
      })
      created.push(task.id)
    }
    const taken = await Promise.all(
      racers.map(async ({ agent, name }) => {
        const mine: string[] = []
        for (;;) {
          const next = await agent.ok('claim_next', { agentName: name })
          if (next.task === null) return mine
          expect(next.claim).toMatchObject({ taskId: next.task.id, agentName: name })
          mine.push(next.task.id)
        }
      }),
    )
    const all = taken.flat()
    expect(new Set(all).size).toBe(all.length)
    expect([...all].sort()).toEqual([...created].sort())
    // Both processes handed out cards.
    expect(taken.slice(0, 2).some((t) => t.length > 0)).toBe(true)
    const live = await storage.db.query<{ n: number }>(
      'select count(*)::int as n from claims where released_at is null',
    )
    expect(live[0]?.n).toBe(CARDS)
  }, 240_000)

  test('a card another transaction holds the claim lock of is passed over, however many come first in the order', async () => {
    const { a, storage } = service()
    const owner = new Person(a.url)
    await owner.signUp()
    const { agent, name } = (await fleet(service(), owner, 2, 'queue'))[0] as {
      agent: Agent
      name: string
    }
    const { columns } = await agent.ok('list_columns')
    const order: string[] = []
    for (let i = 0; i < 45; i++) {
      const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: `q ${i}` })
      order.push(task.id)
    }
    // The first 40 in the order are being claimed elsewhere: their locks are held.
    const first = await storage.db.transaction(async (tx) => {
      for (const id of order.slice(0, 40)) {
        await tx.query('select pg_advisory_xact_lock($1, hashtext($2))', [CLAIM_LOCK_SPACE, id])
      }
      return agent.ok('claim_next', { agentName: name })
    })
    expect(first.task?.id).toBe(order[40])
    // Released, the best card is free again.
    const second = await agent.ok('claim_next', { agentName: name })
    expect(second.task?.id).toBe(order[0])
  }, 120_000)
})
