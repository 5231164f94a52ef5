import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Agent, type Person } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'
import { boardWithAgents, type ClockServer, startClockServer } from './harness.ts'

const LEASE_SECONDS = 600

interface Entry {
  taskId: string
  status: string
  isLive: boolean
  updatedAt: string
}

/**
 * get_board's answer is kept between reads (the board part until the board document
 * changes, `activity` refreshed from the claim rows changed since the previous read):
 * every read must still show exactly what a read from scratch would.
 */
describe.each(STORAGES)('get_board kept between reads (%s)', (kind) => {
  let server: ClockServer
  let owner: Person
  let one: Agent
  let two: Agent
  let columnId: string

  beforeAll(async () => {
    server = await startClockServer(kind, { claimLeaseSeconds: LEASE_SECONDS })
    const board = await boardWithAgents(server.url, 2)
    owner = board.owner
    ;[one, two] = board.agents as [Agent, Agent]
    columnId = board.columns[0]?.id as string
  })
  afterAll(() => server.close())

  const card = async (title = 'A card') =>
    (await one.ok('create_task', { columnId, title })).task.id as string
  const entryOf = (board: { activity: Entry[] }, taskId: string) =>
    board.activity.find((c) => c.taskId === taskId)
  const forceRelease = (taskId: string) =>
    owner.request('POST', `/api/app/orgs/${owner.orgId}/tasks/${taskId}/force-release`)

  test('activity follows every claim, release and force release between two reads', async () => {
    const a = await card('a')
    const b = await card('b')
    const before = await two.ok('get_board')
    expect(entryOf(before, a)).toBeUndefined()
    await one.ok('claim_task', { taskId: a, agentName: 'Ada' })
    await one.ok('claim_task', { taskId: b, agentName: 'Bo' })
    const claimed = await two.ok('get_board')
    expect(entryOf(claimed, a)).toMatchObject({ status: 'working', isLive: true })
    expect(entryOf(claimed, b)).toMatchObject({ status: 'working', isLive: true })
    await one.ok('release_task', { taskId: a })
    expect((await forceRelease(b)).body).toEqual({ released: true })
    const after = await two.ok('get_board')
    expect(entryOf(after, a)).toMatchObject({ status: 'released', isLive: false })
    expect(entryOf(after, b)).toBeUndefined()
    // Most recently changed first, ties by card id: as ordered by Postgres.
    const order = after.activity.map((c: Entry) => [c.updatedAt, c.taskId])
    const sorted = [...order].sort((x, y) =>
      x[0] !== y[0] ? (x[0] < y[0] ? 1 : -1) : x[1] < y[1] ? -1 : 1,
    )
    expect(order).toEqual(sorted)
  })

  test('an unchanged board read twice gives the same answer, and a lease passing changes it', async () => {
    const taskId = await card('leased')
    await one.ok('claim_task', { taskId, agentName: 'Ada' })
    const first = await two.ok('get_board')
    expect(await two.ok('get_board')).toEqual(first)
    expect(first.tasks.find((t: { id: string }) => t.id === taskId).claim).toMatchObject({
      status: 'working',
    })
    server.clock.advance(LEASE_SECONDS * 1000 + 1)
    const lapsed = await two.ok('get_board')
    // A lapsed claim shows as lapsed on the card and in activity, and the card is free.
    expect(lapsed.tasks.find((t: { id: string }) => t.id === taskId).claim).toMatchObject({
      status: 'lapsed',
      isLive: false,
    })
    expect(entryOf(lapsed, taskId)).toMatchObject({ status: 'lapsed', isLive: false })
    const summary = await two.ok('get_board', { summary: true })
    expect(summary.tasks.find((t: { id: string }) => t.id === taskId).claimedBy).toBeNull()
  })

  test('a card written between two reads is in the second, in each filtered form', async () => {
    const tagged = await card('tagged later')
    const first = await two.ok('get_board', { tag: 'Later' })
    expect(first.tasks.map((t: { id: string }) => t.id)).not.toContain(tagged)
    await one.ok('set_task_tags', { taskId: tagged, tags: ['later'] })
    const second = await two.ok('get_board', { tag: 'Later' })
    expect(second.tasks.map((t: { id: string }) => t.id)).toEqual([tagged])
    expect(second.tags).toContain('later')
    const full = await two.ok('get_board')
    expect(full.tasks.find((t: { id: string }) => t.id === tagged).tags).toEqual(['later'])
  })

  test.runIf(kind === 'postgres')(
    "a claim written or deleted on another server process is in this process's next read",
    async () => {
      const peer = await server.peer()
      const onPeer = new Agent(peer.url, one.key)
      const readsOnPeer = new Agent(peer.url, two.key)
      const taskId = await card('peer')
      expect(entryOf(await two.ok('get_board'), taskId)).toBeUndefined()
      expect(entryOf(await readsOnPeer.ok('get_board'), taskId)).toBeUndefined()
      await onPeer.ok('claim_task', { taskId, agentName: 'Elsewhere' })
      expect(entryOf(await two.ok('get_board'), taskId)).toMatchObject({ status: 'working' })
      expect(entryOf(await readsOnPeer.ok('get_board'), taskId)).toMatchObject({
        status: 'working',
      })
      expect((await forceRelease(taskId)).body).toEqual({ released: true })
      expect(entryOf(await readsOnPeer.ok('get_board'), taskId)).toBeUndefined()
    },
  )
})
