import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import type { StoredClaim } from '../../shared/claims.ts'
import { type Agent, connectProvider, eventually, type Person } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'
import { boardWithAgents, type ClockServer, startClockServer } from './harness.ts'

const LEASE_SECONDS = 600

describe.each(STORAGES)('claims (%s)', (kind) => {
  let server: ClockServer
  let owner: Person
  let one: Agent
  let two: Agent
  let columnId: string
  let otherColumnId: string

  beforeAll(async () => {
    server = await startClockServer(kind, { claimLeaseSeconds: LEASE_SECONDS })
    const board = await boardWithAgents(server.url, 2)
    owner = board.owner
    ;[one, two] = board.agents as [Agent, Agent]
    columnId = board.columns[0]?.id as string
    otherColumnId = board.columns[1]?.id as string
  })
  afterAll(() => server.close())

  const card = async (title = 'A card', extra: Record<string, unknown> = {}) =>
    (await one.ok('create_task', { columnId, title, ...extra })).task.id as string

  test('claim_task returns the live claim with expiresAt one lease from now', async () => {
    const taskId = await card()
    const before = server.clock.now()
    const res = await one.call('claim_task', { taskId, agentName: 'Ada', note: 'on it' })
    expect(res.status).toBe(200)
    const { claim } = res.body
    expect(claim).toMatchObject({
      taskId,
      agentName: 'Ada',
      house: null,
      generation: null,
      isSubChild: false,
      status: 'working',
      isLive: true,
      releasedAt: null,
      note: 'on it',
      holder: 'Ada',
    })
    expect(Date.parse(claim.expiresAt)).toBe(before + LEASE_SECONDS * 1000)
    expect(claim.startedAt).toBe(new Date(before).toISOString())
    expect(Object.keys(claim).sort()).toEqual(
      [
        'taskId',
        'agentName',
        'house',
        'generation',
        'isSubChild',
        'status',
        'note',
        'startedAt',
        'updatedAt',
        'expiresAt',
        'releasedAt',
        'isLive',
        'holder',
      ].sort(),
    )
  })

  test("the holder label follows the specification's table", async () => {
    const shapes: [Record<string, unknown>, string][] = [
      [{ agentName: 'Ada' }, 'Ada'],
      [{ agentName: 'Ada', house: 'Lovelace', generation: 3 }, 'Ada, 3rd of House Lovelace'],
      [{ agentName: 'Ada', house: 'Lovelace', generation: 112 }, 'Ada, 112th of House Lovelace'],
      [
        { agentName: 'Ada', house: 'Lovelace', isSubChild: true },
        "Ada's underling (House Lovelace)",
      ],
      [{}, 'An agent'],
    ]
    for (const [identity, label] of shapes) {
      const { claim } = await one.ok('claim_task', { taskId: await card(), ...identity })
      expect(claim.holder).toBe(label)
    }
  })

  test("while a claim is live, another agent's claim-locked actions get 409 with holder and expiresAt", async () => {
    const taskId = await card()
    const { claim } = await one.ok('claim_task', { taskId, agentName: 'Ada' })
    const attempts: [string, Record<string, unknown>][] = [
      ['update_task', { taskId, title: 'taken over' }],
      ['set_task_tags', { taskId, tags: ['x'] }],
      ['move_task', { taskId, columnId: otherColumnId }],
      ['archive_task', { taskId }],
      ['claim_task', { taskId, agentName: 'Cy' }],
      ['heartbeat_task', { taskId }],
      ['release_task', { taskId }],
    ]
    for (const [action, params] of attempts) {
      const res = await two.call(action, params)
      expect(res.status, action).toBe(409)
      expect(res.body.holder, action).toEqual(claim)
      expect(res.body.expiresAt, action).toBe(claim.expiresAt)
      expect(res.body.error, action).toContain('Ada')
    }
    const { task } = await one.ok('get_task', { taskId })
    expect(task).toMatchObject({ title: 'A card', columnId, archivedAt: null, tags: [] })
  })

  test('agents sharing one key are told apart by name; a write with no name is checked by key only', async () => {
    const taskId = await card()
    await one.ok('claim_task', { taskId, agentName: 'Ada', house: 'Lovelace', generation: 2 })
    const other = await one.call('update_task', { taskId, title: 'by Bo', agentName: 'Bo' })
    expect(other.status).toBe(409)
    expect(other.body.holder.holder).toBe('Ada, 2nd of House Lovelace')
    const wrongHouse = await one.call('update_task', {
      taskId,
      title: 'by another Ada',
      agentName: 'Ada',
      house: 'Byron',
      generation: 2,
    })
    expect(wrongHouse.status).toBe(409)
    const same = await one.call('update_task', {
      taskId,
      title: 'by Ada',
      agentName: 'Ada',
      house: 'Lovelace',
      generation: 2,
    })
    expect(same.status).toBe(200)
    const nameless = await one.call('set_task_tags', { taskId, tags: ['keyed'] })
    expect(nameless.status).toBe(200)
    const claimAgain = await one.call('claim_task', { taskId, agentName: 'Bo' })
    expect(claimAgain.status).toBe(409)
  })

  test("add_comment works under anyone's claim", async () => {
    const taskId = await card()
    await one.ok('claim_task', { taskId, agentName: 'Ada' })
    const res = await two.call('add_comment', { taskId, body: 'a note from elsewhere' })
    expect(res.status).toBe(200)
  })

  test('delete_column refuses with 409 while a card in it is actively worked, even by the caller', async () => {
    const { column } = await one.ok('create_column', { title: 'Doomed' })
    const { task } = await one.ok('create_task', { columnId: column.id, title: 'worked' })
    await one.ok('claim_task', { taskId: task.id })
    const refused = await one.call('delete_column', {
      columnId: column.id,
      destinationColumnId: columnId,
    })
    expect(refused.status).toBe(409)
    expect(refused.body.error).toMatch(/actively worked/)
    await one.ok('release_task', { taskId: task.id })
    const done = await one.ok('delete_column', {
      columnId: column.id,
      destinationColumnId: columnId,
    })
    expect(done.movedCount).toBe(1)
  })

  test('heartbeat_task renews expiresAt and replaces the note only when one is sent', async () => {
    const taskId = await card()
    const { claim } = await one.ok('claim_task', { taskId, agentName: 'Ada', note: 'first' })
    server.clock.advance(60_000)
    const kept = await one.ok('heartbeat_task', { taskId, agentName: 'Ada' })
    expect(kept.claim.note).toBe('first')
    expect(Date.parse(kept.claim.expiresAt)).toBe(server.clock.now() + LEASE_SECONDS * 1000)
    expect(kept.claim.startedAt).toBe(claim.startedAt)
    const renamed = await one.ok('heartbeat_task', { taskId, note: 'second' })
    expect(renamed.claim.note).toBe('second')
  })

  test('heartbeat_task without a live claim of the caller is 409 without holder', async () => {
    const taskId = await card()
    const never = await one.call('heartbeat_task', { taskId })
    expect(never.status).toBe(409)
    expect(never.body.holder).toBeUndefined()
    expect(never.body.error).toMatch(/claim_task again/)
    await one.ok('claim_task', { taskId })
    await one.ok('release_task', { taskId })
    const released = await one.call('heartbeat_task', { taskId })
    expect(released.status).toBe(409)
    expect(released.body.holder).toBeUndefined()
  })

  test('release_task frees the card; a second release returns released false; activity keeps the entry', async () => {
    const taskId = await card()
    await one.ok('claim_task', { taskId, agentName: 'Ada' })
    expect(await one.ok('release_task', { taskId, agentName: 'Ada' })).toEqual({
      taskId,
      released: true,
    })
    expect(await one.ok('release_task', { taskId })).toEqual({ taskId, released: false })
    expect(await two.ok('release_task', { taskId })).toEqual({ taskId, released: false })
    const board = await two.ok('get_board')
    const entry = board.activity.find((c: { taskId: string }) => c.taskId === taskId)
    expect(entry).toMatchObject({ isLive: false, status: 'released', agentName: 'Ada' })
    expect(board.tasks.find((t: { id: string }) => t.id === taskId).claim).toBeNull()
    expect((await two.call('update_task', { taskId, title: 'free now' })).status).toBe(200)
  })

  test('a lapsed claim is shown as lapsed and free, and other agents may write to the card', async () => {
    const taskId = await card()
    await one.ok('claim_task', { taskId, agentName: 'Ada' })
    server.clock.advance(LEASE_SECONDS * 1000 + 1)
    const board = await two.ok('get_board')
    const shown = board.tasks.find((t: { id: string }) => t.id === taskId)
    const lapsed = { status: 'lapsed', isLive: false, releasedAt: null, agentName: 'Ada' }
    expect(shown.claim).toMatchObject(lapsed)
    const entry = board.activity.find((c: { taskId: string }) => c.taskId === taskId)
    expect(entry).toEqual(shown.claim)
    expect((await two.ok('get_task', { taskId })).claim).toMatchObject(lapsed)
    const summary = await two.ok('get_board', { summary: true })
    expect(summary.tasks.find((t: { id: string }) => t.id === taskId).claimedBy).toBeNull()
    expect((await two.call('move_task', { taskId, columnId: otherColumnId })).status).toBe(200)
  })

  test("another agent may claim a lapsed card; the former holder's heartbeat and release then get 409 with holder", async () => {
    const taskId = await card()
    await one.ok('claim_task', { taskId, agentName: 'Ada' })
    server.clock.advance(LEASE_SECONDS * 1000 + 1)
    const { claim } = await two.ok('claim_task', { taskId, agentName: 'Cy' })
    expect(claim.holder).toBe('Cy')
    for (const action of ['heartbeat_task', 'release_task']) {
      const res = await one.call(action, { taskId, agentName: 'Ada' })
      expect(res.status, action).toBe(409)
      expect(res.body.holder, action).toEqual(claim)
    }
  })

  test('a claim its holder released reads status released with releasedAt in get_board activity; its card is free', async () => {
    const taskId = await card()
    const { claim } = await one.ok('claim_task', { taskId, agentName: 'Ada', note: 'done soon' })
    server.clock.advance(30_000)
    const releasedAt = new Date(server.clock.now()).toISOString()
    await one.ok('release_task', { taskId, agentName: 'Ada' })
    const released = {
      ...claim,
      status: 'released',
      isLive: false,
      releasedAt,
      updatedAt: releasedAt,
    }
    const board = await two.ok('get_board')
    const entry = board.activity.find((c: { taskId: string }) => c.taskId === taskId)
    expect(entry).toEqual(released)
    // The card itself is free: its claim is null, and nobody is shown working on it.
    expect(board.tasks.find((t: { id: string }) => t.id === taskId).claim).toBeNull()
    const summary = await two.ok('get_board', { summary: true })
    expect(summary.tasks.find((t: { id: string }) => t.id === taskId).claimedBy).toBeNull()
    // Still released, not lapsed, once the lease it had would have passed.
    server.clock.advance(LEASE_SECONDS * 1000 + 1)
    const later = await two.ok('get_board')
    expect(later.activity.find((c: { taskId: string }) => c.taskId === taskId)).toEqual(released)
  })

  test('a claim its holder released reads status released with releasedAt: get_task shows the card free, on the board and archived', async () => {
    const onBoard = await card('released on the board')
    const archived = await card('released then archived')
    for (const taskId of [onBoard, archived]) {
      await one.ok('claim_task', { taskId, agentName: 'Ada' })
      await one.ok('release_task', { taskId, agentName: 'Ada' })
    }
    await one.ok('archive_task', { taskId: archived })
    const board = await two.ok('get_board')
    for (const taskId of [onBoard, archived]) {
      const read = await two.ok('get_task', { taskId })
      expect(read.claim, taskId).toBeNull()
      expect(read.task.claim, taskId).toBeNull()
      const entry = board.activity.find((c: { taskId: string }) => c.taskId === taskId)
      expect(entry, taskId).toMatchObject({
        status: 'released',
        isLive: false,
        releasedAt: expect.any(String),
      })
    }
    // Claimed again, the card's claim is working and no longer carries releasedAt.
    await two.ok('claim_task', { taskId: onBoard, agentName: 'Cy' })
    expect((await one.ok('get_task', { taskId: onBoard })).claim).toMatchObject({
      status: 'working',
      isLive: true,
      releasedAt: null,
      holder: 'Cy',
    })
  })

  test('a live or lapsed claim reads releasedAt null; an archived card keeps its live claim', async () => {
    const taskId = await card('archived while held')
    const { claim } = await one.ok('claim_task', { taskId, agentName: 'Ada' })
    await one.ok('archive_task', { taskId, agentName: 'Ada' })
    const held = await two.ok('get_task', { taskId })
    expect(held.claim).toEqual(claim)
    expect(held.claim).toMatchObject({ status: 'working', releasedAt: null })
    server.clock.advance(LEASE_SECONDS * 1000 + 1)
    const lapsed = await two.ok('get_task', { taskId })
    expect(lapsed.claim).toEqual({ ...claim, status: 'lapsed', isLive: false })
  })

  test('a claim its holder released reads status released with releasedAt in the live board document', async () => {
    const taskId = await card()
    const live = await connectProvider(
      server.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    const entry = () => boardMaps(live.doc).claims.get(taskId) as StoredClaim | undefined
    try {
      await one.ok('claim_task', { taskId, agentName: 'Ada' })
      const working = await eventually(entry)
      expect(working).toMatchObject({ status: 'working', isLive: true, releasedAt: null })
      server.clock.advance(5_000)
      const releasedAt = new Date(server.clock.now()).toISOString()
      await one.ok('release_task', { taskId, agentName: 'Ada' })
      const released = await eventually(() => (entry()?.releasedAt ? entry() : undefined))
      expect(released).toEqual({
        ...working,
        status: 'released',
        isLive: false,
        releasedAt,
        updatedAt: releasedAt,
      })
      // What the board shows from the document agrees with the agent endpoint.
      const board = await two.ok('get_board')
      const { keyId: _k, ...record } = released
      expect(board.activity.find((c: { taskId: string }) => c.taskId === taskId)).toEqual(record)
      await two.ok('claim_task', { taskId, agentName: 'Cy' })
      const again = await eventually(() => (entry()?.agentName === 'Cy' ? entry() : undefined))
      expect(again).toMatchObject({ status: 'working', isLive: true, releasedAt: null })
    } finally {
      live.destroy()
    }
  })

  test('the holder may claim its own lapsed card again; its heartbeat on the lapsed claim is 409 without holder', async () => {
    const taskId = await card()
    const first = await one.ok('claim_task', { taskId, agentName: 'Ada' })
    server.clock.advance(LEASE_SECONDS * 1000 + 1)
    const late = await one.call('heartbeat_task', { taskId, agentName: 'Ada' })
    expect(late.status).toBe(409)
    expect(late.body.holder).toBeUndefined()
    const again = await one.ok('claim_task', { taskId, agentName: 'Ada' })
    expect(again.claim.isLive).toBe(true)
    expect(Date.parse(again.claim.startedAt)).toBeGreaterThan(Date.parse(first.claim.startedAt))
  })

  test('the holder claiming its live card again renews the lease and keeps startedAt', async () => {
    const taskId = await card()
    const first = await one.ok('claim_task', { taskId, agentName: 'Ada', note: 'a' })
    server.clock.advance(5_000)
    const again = await one.ok('claim_task', { taskId, agentName: 'Ada' })
    expect(again.claim.startedAt).toBe(first.claim.startedAt)
    expect(again.claim.note).toBe('a')
    expect(Date.parse(again.claim.expiresAt)).toBe(server.clock.now() + LEASE_SECONDS * 1000)
  })

  test('activity has one entry per card ever claimed, organisation-wide even with a projectId filter', async () => {
    const project = await owner.request('POST', `/api/app/orgs/${owner.orgId}/projects`, {
      name: 'Filtered',
    })
    const projectId = project.body.project.id as string
    const inProject = await card('in project', { projectId })
    const outside = await card('outside')
    await one.ok('claim_task', { taskId: inProject })
    await one.ok('claim_task', { taskId: outside })
    await one.ok('release_task', { taskId: outside })
    await one.ok('claim_task', { taskId: inProject })
    const board = await two.ok('get_board', { projectId })
    expect(board.tasks.map((t: { id: string }) => t.id)).toEqual([inProject])
    const ids = board.activity.map((c: { taskId: string }) => c.taskId)
    expect(ids).toContain(outside)
    expect(ids.filter((id: string) => id === inProject)).toHaveLength(1)
    expect(new Set(ids).size).toBe(ids.length)
  })

  test('every card carries claim, and the summary form carries the live holder as claimedBy', async () => {
    const held = await card('held')
    const free = await card('free')
    await one.ok('claim_task', { taskId: held, agentName: 'Ada', house: 'Lovelace', generation: 1 })
    const full = await two.ok('get_board')
    const byId = (list: { id: string }[], id: string) => list.find((t) => t.id === id) as never
    expect(byId(full.tasks, held)).toMatchObject({
      claim: { holder: 'Ada, 1st of House Lovelace' },
    })
    expect(byId(full.tasks, free)).toMatchObject({ claim: null })
    const summary = await two.ok('get_board', { summary: true })
    expect(byId(summary.tasks, held)).toMatchObject({ claimedBy: 'Ada, 1st of House Lovelace' })
    expect(byId(summary.tasks, free)).toMatchObject({ claimedBy: null })
    const { claim } = await two.ok('get_task', { taskId: held })
    expect(claim).toMatchObject({ isLive: true, holder: 'Ada, 1st of House Lovelace' })
  })

  test('the claim row, its document entry and its change row commit together', async () => {
    const taskId = await card()
    const live = await connectProvider(
      server.url,
      boardDocName(owner.orgId),
      await owner.syncToken(),
    )
    try {
      await one.ok('claim_task', { taskId, agentName: 'Ada' })
      const seen = await eventually(
        () => boardMaps(live.doc).claims.get(taskId) as StoredClaim | undefined,
      )
      expect(seen).toMatchObject({ taskId, agentName: 'Ada', releasedAt: null, isLive: true })
      const db = server.storage.db
      const rows = await db.query('select key_id from claims where task_id = $1', [taskId])
      expect(rows).toHaveLength(1)
      expect(seen.keyId).toBe(rows[0]?.key_id)
      const changes = await db.query(
        "select 1 from changes where kind = 'claim' and entity_id = $1",
        [taskId],
      )
      expect(changes).toHaveLength(1)
      await one.ok('release_task', { taskId })
      const released = await eventually(() => {
        const c = boardMaps(live.doc).claims.get(taskId) as StoredClaim | undefined
        return c?.releasedAt ? c : undefined
      })
      expect(released).toMatchObject({ isLive: false, status: 'released' })
    } finally {
      live.destroy()
    }
  })

  test('claim params are checked, and the 400 names the parameter', async () => {
    const taskId = await card()
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ taskId, note: 'x'.repeat(501) }, /note/],
      [{ taskId, note: '' }, /note/],
      [{ taskId, generation: 0 }, /generation/],
      [{ taskId, agentName: 'x'.repeat(81) }, /agentName/],
      [{ taskId, house: '' }, /house/],
      [{ taskId: 'nope' }, /taskId/],
      [{ taskId, until: 'tomorrow' }, /"until"/],
    ]
    for (const [params, message] of cases) {
      const res = await one.call('claim_task', params)
      expect(res.status, JSON.stringify(params)).toBe(400)
      expect(res.body.error).toMatch(message)
    }
  })

  test('claim, heartbeat and release of a card not in this organisation are 404', async () => {
    const taskId = crypto.randomUUID()
    for (const action of ['claim_task', 'heartbeat_task', 'release_task']) {
      const res = await one.call(action, { taskId })
      expect(res.status, action).toBe(404)
    }
  })
})
