import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { Agent } from '../support/client.ts'
import { expectRefused, ISO, ids, seededOrg } from '../support/fixtures.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

const TYPES = ['bug', 'feature', 'improvement', 'chore', 'question', 'research'] as const
const LEVELS = ['urgent', 'high', 'normal', 'low'] as const

describe.each(STORAGES)('card writes (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(kind)
  })
  afterAll(() => server.close())

  const org = () => seededOrg(server.url)

  const card = async (agent: Agent, params: Record<string, unknown>) =>
    (await agent.ok('create_task', { title: 'A card', ...params })).task

  const tasksIn = async (agent: Agent, columnId: string) =>
    ids((await agent.ok('get_board', { columnId })).tasks)

  describe('create_task', () => {
    test('create_task returns the new card in full: untriaged, untagged, unclaimed, by the key’s robot account', async () => {
      const { agent, backlog } = await org()
      const me = await agent.ok('whoami')
      const { task } = await agent.ok('create_task', { columnId: backlog, title: 'New card' })
      expect(task).toEqual({
        id: expect.any(String),
        columnId: backlog,
        projectId: null,
        projectName: null,
        title: 'New card',
        description: '',
        type: null,
        priority: null,
        ownPriority: null,
        tags: [],
        blockedBy: [],
        blocked: false,
        assigneeIds: [],
        position: expect.any(Number),
        createdAt: expect.stringMatching(ISO),
        updatedAt: task.createdAt,
        archivedAt: null,
        createdByEmail: me.agent.email,
        claim: null,
        commentCount: 0,
        imageCount: 0,
        lastCommentBy: null,
        lastCommentAt: null,
        lastCommentAuthor: null,
      })
      expect(task.createdByEmail).toMatch(new RegExp(`^key-${me.key.id}@`))
      expect((await agent.ok('get_task', { taskId: task.id })).task).toEqual(task)
    })

    test('with position omitted the card is appended to the bottom of its column', async () => {
      const { agent, backlog, ready } = await org()
      const a = await card(agent, { columnId: backlog })
      const b = await card(agent, { columnId: backlog })
      const top = await card(agent, { columnId: backlog, position: -5 })
      await card(agent, { columnId: ready, position: 1e6 })
      const c = await card(agent, { columnId: backlog })
      expect(b.position).toBeGreaterThan(a.position)
      expect(c.position).toBeGreaterThan(b.position)
      expect(await tasksIn(agent, backlog)).toEqual([top.id, a.id, b.id, c.id])
    })

    test('position places the card where asked, fractions included', async () => {
      const { agent, backlog } = await org()
      const a = await card(agent, { columnId: backlog })
      const b = await card(agent, { columnId: backlog })
      const between = await card(agent, {
        columnId: backlog,
        position: (a.position + b.position) / 2,
      })
      expect(between.position).toBe((a.position + b.position) / 2)
      expect(await tasksIn(agent, backlog)).toEqual([a.id, between.id, b.id])
    })

    test('type is one of the six values and priority one of urgent, high, normal, low', async () => {
      const { agent, backlog } = await org()
      for (const type of TYPES) {
        expect((await card(agent, { columnId: backlog, type })).type).toBe(type)
      }
      for (const priority of LEVELS) {
        const t = await card(agent, { columnId: backlog, priority })
        expect(t).toMatchObject({ priority, ownPriority: priority })
      }
      await expectRefused(
        agent,
        'create_task',
        { columnId: backlog, title: 't', type: 'epic' },
        400,
        /type/,
      )
      await expectRefused(
        agent,
        'create_task',
        { columnId: backlog, title: 't', type: '' },
        400,
        /type/,
      )
      for (const priority of ['none', 'critical', 'URGENT', '', null]) {
        await expectRefused(
          agent,
          'create_task',
          { columnId: backlog, title: 't', priority },
          400,
          /priority/,
        )
      }
    })

    test('projectId files the card under a project of this organisation, with its name', async () => {
      const { owner, agent, backlog } = await org()
      const p = await owner.createProject('Apollo')
      const t = await card(agent, { columnId: backlog, projectId: p })
      expect(t).toMatchObject({ projectId: p, projectName: 'Apollo' })
    })

    test('a projectId that is no project of this organisation is refused with 400 naming it', async () => {
      const { agent, backlog } = await org()
      await expectRefused(
        agent,
        'create_task',
        { columnId: backlog, title: 't', projectId: randomUUID() },
        400,
        /projectId/,
      )
      await expectRefused(
        agent,
        'create_task',
        { columnId: backlog, title: 't', projectId: 'apollo' },
        400,
        /projectId.*UUID/,
      )
    })

    test('a columnId that does not exist is a 404; a malformed or missing one a 400', async () => {
      const { agent } = await org()
      await expectRefused(
        agent,
        'create_task',
        { columnId: randomUUID(), title: 't' },
        404,
        /columnId/,
      )
      await expectRefused(
        agent,
        'create_task',
        { columnId: 'backlog', title: 't' },
        400,
        /columnId.*UUID/,
      )
      await expectRefused(agent, 'create_task', { title: 't' }, 400, /columnId is required/)
    })

    test('title is 1–500 characters', async () => {
      const { agent, backlog } = await org()
      expect((await card(agent, { columnId: backlog, title: 'x' })).title).toBe('x')
      expect((await card(agent, { columnId: backlog, title: 't'.repeat(500) })).title).toHaveLength(
        500,
      )
      await expectRefused(agent, 'create_task', { columnId: backlog, title: '' }, 400, /title/)
      await expectRefused(
        agent,
        'create_task',
        { columnId: backlog, title: 't'.repeat(501) },
        400,
        /title.*500/,
      )
      await expectRefused(agent, 'create_task', { columnId: backlog }, 400, /title is required/)
      await expectRefused(agent, 'create_task', { columnId: backlog, title: 12 }, 400, /title/)
    })

    test('description is at most 20,000 characters', async () => {
      const { agent, backlog } = await org()
      const long = 'd'.repeat(20_000)
      expect((await card(agent, { columnId: backlog, description: long })).description).toBe(long)
      await expectRefused(
        agent,
        'create_task',
        { columnId: backlog, title: 't', description: `${long}d` },
        400,
        /description.*20000/,
      )
    })

    test('refused create_task calls leave nothing on the board', async () => {
      const { agent, backlog } = await org()
      for (const params of [
        { columnId: backlog, title: '' },
        { columnId: randomUUID(), title: 't' },
        { columnId: backlog, title: 't', projectId: randomUUID() },
        { columnId: backlog, title: 't', bogus: true },
      ]) {
        expect((await agent.call('create_task', params)).status).toBeGreaterThanOrEqual(400)
      }
      expect((await agent.ok('get_board')).tasks).toEqual([])
      expect((await agent.ok('whoami')).board).toMatchObject({ tasks: 0 })
    })
  })

  describe('update_task', () => {
    test('update_task writes only the fields sent', async () => {
      const { owner, agent, backlog } = await org()
      const p = await owner.createProject('P')
      const t = await card(agent, {
        columnId: backlog,
        title: 'Before',
        description: 'Kept',
        type: 'bug',
        priority: 'low',
        projectId: p,
      })
      const { task } = await agent.ok('update_task', { taskId: t.id, title: 'After' })
      expect(task).toMatchObject({
        title: 'After',
        description: 'Kept',
        type: 'bug',
        priority: 'low',
        projectId: p,
        columnId: backlog,
        position: t.position,
        createdAt: t.createdAt,
      })
      expect(task.updatedAt >= t.updatedAt).toBe(true)
      expect((await agent.ok('get_task', { taskId: t.id })).task).toEqual(task)
    })

    test('a priority alone is enough', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      const { task } = await agent.ok('update_task', { taskId: t.id, priority: 'urgent' })
      expect(task).toMatchObject({ priority: 'urgent', ownPriority: 'urgent', title: t.title })
    })

    test('update_task sets each field', async () => {
      const { owner, agent, backlog } = await org()
      const p = await owner.createProject('P')
      const t = await card(agent, { columnId: backlog })
      const { task } = await agent.ok('update_task', {
        taskId: t.id,
        title: 'New',
        description: 'Now described',
        type: 'research',
        priority: 'high',
        projectId: p,
      })
      expect(task).toMatchObject({
        title: 'New',
        description: 'Now described',
        type: 'research',
        priority: 'high',
        projectId: p,
        projectName: 'P',
      })
    })

    test('at least one field is required: none, or identity fields only, is a 400', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      await expectRefused(agent, 'update_task', { taskId: t.id }, 400, /at least one/)
      await expectRefused(
        agent,
        'update_task',
        { taskId: t.id, agentName: 'Ada' },
        400,
        /at least one/,
      )
    })

    test('an empty string clears description, type or priority (back to untriaged)', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, {
        columnId: backlog,
        description: 'Some text',
        type: 'feature',
        priority: 'high',
      })
      const { task } = await agent.ok('update_task', {
        taskId: t.id,
        description: '',
        type: '',
        priority: '',
      })
      expect(task).toMatchObject({ description: '', type: null, priority: null, ownPriority: null })
      const board = await agent.ok('get_board', { priority: 'none' })
      expect(ids(board.tasks)).toEqual([t.id])
    })

    test('a null priority is refused with 400 naming priority; other nulls too', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog, priority: 'low' })
      const message = await expectRefused(
        agent,
        'update_task',
        { taskId: t.id, priority: null },
        400,
        /priority/,
      )
      expect(message).toMatch(/null/)
      await expectRefused(agent, 'update_task', { taskId: t.id, type: null }, 400, /type/)
      await expectRefused(
        agent,
        'update_task',
        { taskId: t.id, description: null },
        400,
        /description/,
      )
      await expectRefused(agent, 'update_task', { taskId: t.id, title: null }, 400, /title/)
      expect((await agent.ok('get_task', { taskId: t.id })).task.priority).toBe('low')
    })

    test('there is no way through the API to unset a project', async () => {
      const { owner, agent, backlog } = await org()
      const p = await owner.createProject('P')
      const t = await card(agent, { columnId: backlog, projectId: p })
      const message = await expectRefused(
        agent,
        'update_task',
        { taskId: t.id, projectId: null },
        400,
        /projectId/,
      )
      expect(message).toMatch(/unset/)
      await expectRefused(agent, 'update_task', { taskId: t.id, projectId: '' }, 400, /projectId/)
      expect((await agent.ok('get_task', { taskId: t.id })).task.projectId).toBe(p)
    })

    test('a projectId that is no project of this organisation is refused with 400', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      await expectRefused(
        agent,
        'update_task',
        { taskId: t.id, projectId: randomUUID() },
        400,
        /projectId/,
      )
      expect((await agent.ok('get_task', { taskId: t.id })).task.projectId).toBeNull()
    })

    test('update_task checks the limits: title 1–500, description ≤20,000, type and priority values', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog, title: 'Same' })
      await expectRefused(agent, 'update_task', { taskId: t.id, title: '' }, 400, /title/)
      await expectRefused(
        agent,
        'update_task',
        { taskId: t.id, title: 'x'.repeat(501) },
        400,
        /title.*500/,
      )
      await expectRefused(
        agent,
        'update_task',
        { taskId: t.id, description: 'x'.repeat(20_001) },
        400,
        /description.*20000/,
      )
      await expectRefused(agent, 'update_task', { taskId: t.id, type: 'epic' }, 400, /type/)
      await expectRefused(agent, 'update_task', { taskId: t.id, priority: 'none' }, 400, /priority/)
      const { task } = await agent.ok('update_task', { taskId: t.id, title: 'y'.repeat(500) })
      expect(task.title).toHaveLength(500)
    })

    test('a refused update leaves the card as it was, even when other fields were valid', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog, title: 'Untouched', priority: 'low' })
      await expectRefused(
        agent,
        'update_task',
        { taskId: t.id, title: 'Changed', projectId: randomUUID() },
        400,
        /projectId/,
      )
      expect((await agent.ok('get_task', { taskId: t.id })).task).toEqual(t)
    })

    test('update_task on a card that does not exist is a 404', async () => {
      const { agent } = await org()
      await expectRefused(agent, 'update_task', { taskId: randomUUID(), title: 'x' }, 404, /taskId/)
      await expectRefused(agent, 'update_task', { taskId: 'nope', title: 'x' }, 400, /taskId.*UUID/)
    })
  })

  describe('set_task_tags', () => {
    test('set_task_tags replaces the whole set, and [] clears it', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      const first = await agent.ok('set_task_tags', { taskId: t.id, tags: ['a', 'b'] })
      expect(first.task.tags).toEqual(['a', 'b'])
      const second = await agent.ok('set_task_tags', { taskId: t.id, tags: ['c'] })
      expect(second.task.tags).toEqual(['c'])
      const cleared = await agent.ok('set_task_tags', { taskId: t.id, tags: [] })
      expect(cleared.task.tags).toEqual([])
      expect((await agent.ok('get_task', { taskId: t.id })).task.tags).toEqual([])
    })

    test('each tag is trimmed, and duplicates differing only in case are folded keeping the first casing and the input order', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      const { task } = await agent.ok('set_task_tags', {
        taskId: t.id,
        tags: ['  Backend ', 'ui', 'BACKEND', 'Ops', 'backend', ' UI', 'ops '],
      })
      expect(task.tags).toEqual(['Backend', 'ui', 'Ops'])
    })

    test('20 tags of 40 characters are accepted as they are', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      const tags = Array.from(
        { length: 20 },
        (_, i) => `${String(i).padStart(2, '0')}${'x'.repeat(38)}`,
      )
      const { task } = await agent.ok('set_task_tags', { taskId: t.id, tags })
      expect(task.tags).toEqual(tags)
    })

    test('more than 20 tags is refused with a message naming the limit, and nothing is truncated', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      await agent.ok('set_task_tags', { taskId: t.id, tags: ['keep'] })
      const tags = Array.from({ length: 21 }, (_, i) => `tag${i}`)
      await expectRefused(agent, 'set_task_tags', { taskId: t.id, tags }, 400, /\b20\b/)
      expect((await agent.ok('get_task', { taskId: t.id })).task.tags).toEqual(['keep'])
    })

    test('the 20-tag limit counts tags after trimming and folding case duplicates', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      const tags = [...Array.from({ length: 20 }, (_, i) => `tag${i}`), 'TAG0', ' tag1 ']
      const { task } = await agent.ok('set_task_tags', { taskId: t.id, tags })
      expect(task.tags).toHaveLength(20)
    })

    test('a tag over 40 characters is refused with a message naming the limit, and nothing is truncated', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      await agent.ok('set_task_tags', { taskId: t.id, tags: ['keep'] })
      await expectRefused(
        agent,
        'set_task_tags',
        { taskId: t.id, tags: ['ok', 'y'.repeat(41)] },
        400,
        /\b40\b/,
      )
      expect((await agent.ok('get_task', { taskId: t.id })).task.tags).toEqual(['keep'])
      // Trimming comes first: surrounding spaces do not count.
      const { task } = await agent.ok('set_task_tags', {
        taskId: t.id,
        tags: [` ${'z'.repeat(40)} `],
      })
      expect(task.tags).toEqual(['z'.repeat(40)])
    })

    test('tags must be an array of non-empty strings', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      await expectRefused(agent, 'set_task_tags', { taskId: t.id }, 400, /tags is required/)
      await expectRefused(agent, 'set_task_tags', { taskId: t.id, tags: 'a,b' }, 400, /tags/)
      await expectRefused(agent, 'set_task_tags', { taskId: t.id, tags: ['a', 3] }, 400, /tags/)
      await expectRefused(
        agent,
        'set_task_tags',
        { taskId: t.id, tags: ['a', '   '] },
        400,
        /tags\[1\]/,
      )
    })

    test('set_task_tags on a card that does not exist is a 404', async () => {
      const { agent } = await org()
      await expectRefused(agent, 'set_task_tags', { taskId: randomUUID(), tags: [] }, 404, /taskId/)
    })
  })

  describe('move_task', () => {
    test('move_task with position omitted appends the card to the bottom of the destination', async () => {
      const { agent, backlog, ready } = await org()
      const mover = await card(agent, { columnId: backlog })
      const r1 = await card(agent, { columnId: ready })
      const r2 = await card(agent, { columnId: ready, position: 1e6 })
      const { task } = await agent.ok('move_task', { taskId: mover.id, columnId: ready })
      expect(task.columnId).toBe(ready)
      expect(task.position).toBeGreaterThan(r2.position)
      expect(await tasksIn(agent, ready)).toEqual([r1.id, r2.id, mover.id])
      expect(await tasksIn(agent, backlog)).toEqual([])
    })

    test('moving within the same column with position omitted sends the card to the bottom', async () => {
      const { agent, backlog } = await org()
      const a = await card(agent, { columnId: backlog })
      const b = await card(agent, { columnId: backlog })
      await agent.ok('move_task', { taskId: a.id, columnId: backlog })
      expect(await tasksIn(agent, backlog)).toEqual([b.id, a.id])
    })

    test('move_task with position places the card there', async () => {
      const { agent, backlog, ready } = await org()
      const r1 = await card(agent, { columnId: ready })
      const r2 = await card(agent, { columnId: ready })
      const mover = await card(agent, { columnId: backlog })
      const position = (r1.position + r2.position) / 2
      const { task } = await agent.ok('move_task', { taskId: mover.id, columnId: ready, position })
      expect(task).toMatchObject({ columnId: ready, position })
      expect(await tasksIn(agent, ready)).toEqual([r1.id, mover.id, r2.id])
    })

    test('move_task to a column or of a card that does not exist is a 404, and nothing moves', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      await expectRefused(
        agent,
        'move_task',
        { taskId: t.id, columnId: randomUUID() },
        404,
        /columnId/,
      )
      await expectRefused(
        agent,
        'move_task',
        { taskId: randomUUID(), columnId: backlog },
        404,
        /taskId/,
      )
      await expectRefused(
        agent,
        'move_task',
        { taskId: t.id, columnId: 'done' },
        400,
        /columnId.*UUID/,
      )
      await expectRefused(
        agent,
        'move_task',
        { taskId: t.id, columnId: backlog, position: '1' },
        400,
        /position/,
      )
      expect((await agent.ok('get_task', { taskId: t.id })).task).toEqual(t)
    })
  })

  describe('archive_task', () => {
    test('an archived card leaves get_board and is still readable with get_task', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      const res = await agent.ok('archive_task', { taskId: t.id })
      expect(res).toEqual({ taskId: t.id, archivedAt: expect.stringMatching(ISO) })
      expect((await agent.ok('get_board')).tasks).toEqual([])
      const { task } = await agent.ok('get_task', { taskId: t.id })
      expect(task.archivedAt).toBe(res.archivedAt)
    })

    test('archive_task is idempotent and returns the original archivedAt', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      const first = await agent.ok('archive_task', { taskId: t.id })
      const before = (await agent.ok('get_task', { taskId: t.id })).task
      const again = await agent.ok('archive_task', { taskId: t.id })
      expect(again).toEqual(first)
      expect((await agent.ok('get_task', { taskId: t.id })).task).toEqual(before)
    })

    test('archive_task on a card that does not exist is a 404', async () => {
      const { agent } = await org()
      await expectRefused(agent, 'archive_task', { taskId: randomUUID() }, 404, /taskId/)
      await expectRefused(agent, 'archive_task', {}, 400, /taskId is required/)
    })
  })
})
