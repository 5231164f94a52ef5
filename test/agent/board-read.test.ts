import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type * as Y from 'yjs'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import type { StoredClaim } from '../../shared/claims.ts'
import { Agent, Person } from '../support/client.ts'
import { ISO, ids, seededOrg } from '../support/fixtures.ts'
import {
  seedAttachments as seedAttachmentsAt,
  seedComments as seedCommentsAt,
} from '../support/seed.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/** The Task table of the specification (full form; commentsTruncated only with comments). */
const TASK_FIELDS = [
  'archivedAt',
  'assigneeIds',
  'blocked',
  'blockedBy',
  'claim',
  'columnId',
  'commentCount',
  'createdAt',
  'createdByEmail',
  'description',
  'id',
  'imageCount',
  'lastCommentAt',
  'lastCommentAuthor',
  'lastCommentBy',
  'ownPriority',
  'position',
  'priority',
  'projectId',
  'projectName',
  'tags',
  'title',
  'type',
  'updatedAt',
]
/** The summary form lists exactly these (plus commentsTruncated when comments are asked for). */
const SUMMARY_FIELDS = [
  'assigneeIds',
  'blocked',
  'claimedBy',
  'columnId',
  'commentCount',
  'id',
  'imageCount',
  'lastCommentAt',
  'lastCommentBy',
  'priority',
  'projectId',
  'tags',
  'title',
  'type',
  'updatedAt',
]
const CLAIM_FIELDS = [
  'agentName',
  'expiresAt',
  'generation',
  'holder',
  'house',
  'isLive',
  'isSubChild',
  'note',
  'releasedAt',
  'startedAt',
  'status',
  'taskId',
  'updatedAt',
]
const COMMENT_FIELDS = ['agentName', 'authorEmail', 'body', 'createdAt', 'editedAt', 'id', 'taskId']

const keys = (o: object) => Object.keys(o).sort()

describe.each(STORAGES)('board reading (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(kind)
  })
  afterAll(() => server.close())

  const org = () => seededOrg(server.url)

  const card = async (agent: Agent, params: Record<string, unknown>) =>
    (await agent.ok('create_task', { title: 'A card', ...params })).task

  /** Writes the board document as the server would (for what only people do in the app). */
  const writeDoc = (orgId: string, fn: (doc: Y.Doc) => void) =>
    server.app.live.write(boardDocName(orgId), { type: 'server', orgId }, async (w) => {
      w.mutate(fn)
    })

  const setOnFire = (orgId: string, columnId: string, onFire: boolean) =>
    writeDoc(orgId, (doc) => {
      boardMaps(doc).columns.get(columnId)?.set('onFire', onFire)
    })

  /** n comments by a person on one card, one second apart from `from`. */
  const seedComments = (orgId: string, taskId: string, n: number, from: string, tag: string) =>
    seedCommentsAt(server.app.live, orgId, taskId, n, from, tag)

  const seedAttachments = (orgId: string, taskId: string, n: number, from: string) =>
    seedAttachmentsAt(server.app.live, orgId, taskId, n, from)

  describe('whoami', () => {
    test('whoami returns the organisation by id and name, the key in use and how much is on the board', async () => {
      const owner = new Person(server.url)
      await owner.signUp({ organizationName: 'Lighthouse Keepers' })
      const agent = new Agent(server.url, await owner.createKey('night shift'))
      const { columns } = await agent.ok('list_columns')
      const kept = await card(agent, { columnId: columns[0].id })
      const gone = await card(agent, { columnId: columns[0].id })
      await agent.ok('archive_task', { taskId: gone.id })

      const me = await agent.ok('whoami', {})
      expect(keys(me)).toEqual(['agent', 'board', 'key', 'organization'])
      expect(me.organization).toEqual({ id: owner.orgId, name: 'Lighthouse Keepers' })
      expect(me.key.name).toBe('night shift')
      expect(me.board).toMatchObject({ columns: 4, tasks: 1 })
      expect(kept.createdByEmail).toBe(me.agent.email)
    })

    test('whoami takes no parameters: any is a 400 naming it', async () => {
      const { agent } = await org()
      const res = await agent.call('whoami', { verbose: true })
      expect(res.status).toBe(400)
      expect(res.body.error).toContain('"verbose"')
    })

    test('a key for another organisation still gets a successful, empty board; whoami tells which organisation it is', async () => {
      const a = await org()
      await card(a.agent, { columnId: a.backlog })
      const b = await org()
      const board = await b.agent.call('get_board', {})
      expect(board.status).toBe(200)
      expect(board.body.tasks).toEqual([])
      expect(ids(board.body.columns)).not.toContain(a.backlog)
      const me = await b.agent.ok('whoami')
      expect(me.organization.id).toBe(b.orgId)
      expect(me.organization.id).not.toBe(a.orgId)
    })
  })

  describe('get_board', () => {
    test('get_board returns every column, every non-archived card in board order and the activity array', async () => {
      const { agent, backlog, ready, doing, done } = await org()
      const r1 = await card(agent, { columnId: ready, title: 'ready 1' })
      const b1 = await card(agent, { columnId: backlog, title: 'backlog 1' })
      const b2 = await card(agent, { columnId: backlog, title: 'backlog 2' })
      const archived = await card(agent, { columnId: backlog, title: 'archived' })
      await agent.ok('archive_task', { taskId: archived.id })

      const board = await agent.ok('get_board')
      expect(keys(board)).toEqual(['activity', 'columns', 'tags', 'tasks'])
      expect(ids(board.columns)).toEqual([backlog, ready, doing, done])
      for (const c of board.columns) {
        expect(keys(c)).toEqual(['id', 'onFire', 'position', 'projectId', 'role', 'title'])
      }
      expect(board.columns[0]).toMatchObject({
        title: 'Backlog',
        role: 'backlog',
        projectId: null,
        onFire: false,
      })
      expect(ids(board.tasks)).toEqual([b1.id, b2.id, r1.id])
      expect(board.activity).toEqual([])
      expect(board.tags).toEqual([])
    })

    test('each card of get_board carries every field of the Task table: claim, counts, projectName, ownPriority, createdByEmail', async () => {
      const { owner, agent, backlog } = await org()
      const projectId = await owner.createProject('Apollo')
      const t = await card(agent, {
        columnId: backlog,
        projectId,
        title: 'Shape',
        description: 'All the fields',
        type: 'bug',
        priority: 'low',
      })
      await agent.ok('add_comment', { taskId: t.id, body: 'first', agentName: 'Ada' })
      const me = await agent.ok('whoami')

      const [task] = (await agent.ok('get_board')).tasks
      expect(keys(task)).toEqual(TASK_FIELDS)
      expect(task).toMatchObject({
        id: t.id,
        columnId: backlog,
        projectId,
        projectName: 'Apollo',
        title: 'Shape',
        description: 'All the fields',
        type: 'bug',
        priority: 'low',
        ownPriority: 'low',
        tags: [],
        assigneeIds: [],
        archivedAt: null,
        createdByEmail: me.agent.email,
        claim: null,
        commentCount: 1,
        imageCount: 0,
        lastCommentBy: 'agent',
        lastCommentAuthor: 'Ada',
      })
      expect(task.createdByEmail).toContain(me.key.id)
      expect(task.createdAt).toMatch(ISO)
      expect(task.updatedAt).toMatch(ISO)
      expect(task.lastCommentAt).toMatch(ISO)
      expect(typeof task.position).toBe('number')
    })

    test('projectId returns only that project’s cards, with its own columns, the organisation-level ones and any column a returned card sits in', async () => {
      const { owner, agent, backlog, ready, doing, done } = await org()
      const p = await owner.createProject('P')
      const q = await owner.createProject('Q')
      const pCol = (await agent.ok('create_column', { title: 'P only', projectId: p })).column.id
      const qCol = (await agent.ok('create_column', { title: 'Q only', projectId: q })).column.id
      const qCol2 = (await agent.ok('create_column', { title: 'Q second', projectId: q })).column.id
      const inOwn = await card(agent, { columnId: pCol, projectId: p })
      const inOrg = await card(agent, { columnId: backlog, projectId: p })
      const strayInQ = await card(agent, { columnId: qCol, projectId: p })
      await card(agent, { columnId: qCol2, projectId: q })
      await card(agent, { columnId: backlog })

      const board = await agent.ok('get_board', { projectId: p })
      expect(ids(board.tasks).sort()).toEqual([inOwn.id, inOrg.id, strayInQ.id].sort())
      expect(ids(board.columns)).toEqual([backlog, ready, doing, done, pCol, qCol])
    })

    test('a real project with nothing in it returns 200 with zero cards', async () => {
      const { owner, agent, backlog } = await org()
      await card(agent, { columnId: backlog })
      const empty = await owner.createProject('Empty')
      const res = await agent.call('get_board', { projectId: empty })
      expect(res.status).toBe(200)
      expect(res.body.tasks).toEqual([])
      expect(res.body.columns).toHaveLength(4)
    })

    test('a projectId that is no project of this organisation is a 400 naming projectId, like a malformed one', async () => {
      const { agent } = await org()
      const missing = await agent.call('get_board', { projectId: randomUUID() })
      expect(missing.status).toBe(400)
      expect(missing.body.error).toMatch(/projectId/)
      const malformed = await agent.call('get_board', { projectId: 'project-1' })
      expect(malformed.status).toBe(400)
      expect(malformed.body.error).toMatch(/projectId.*UUID/)
    })

    test('activity stays organisation-wide under projectId; claim records carry exactly their fields; claimedBy is the live holder, null when lapsed', async () => {
      const { owner, agent, orgId, backlog } = await org()
      const me = await agent.ok('whoami')
      const p = await owner.createProject('P')
      const q = await owner.createProject('Q')
      const pCard = await card(agent, { columnId: backlog, projectId: p })
      const qCard = await card(agent, { columnId: backlog, projectId: q })
      const now = Date.now()
      const claim = (taskId: string, expiresAt: number): StoredClaim => ({
        taskId,
        keyId: me.key.id,
        agentName: 'Ada',
        house: 'Lovelace',
        generation: 2,
        isSubChild: false,
        status: 'working',
        note: 'on it',
        startedAt: new Date(now - 60_000).toISOString(),
        updatedAt: new Date(now - 60_000).toISOString(),
        expiresAt: new Date(expiresAt).toISOString(),
        isLive: true,
        holder: 'Ada, 2nd of House Lovelace',
        releasedAt: null,
      })
      // Claims are written by the server only (claim_task is tested elsewhere): the lock rows
      // in Postgres (activity reads them) and their projection on the board.
      for (const c of [claim(pCard.id, now - 1000), claim(qCard.id, now + 600_000)]) {
        await server.storage.db.query(
          `insert into claims (task_id, org_id, key_id, agent_name, house, generation, note,
                               started_at, updated_at, expires_at)
           values ($1, $2, $3, $4, $5, $6, $7, $8::text::timestamptz, $8::text::timestamptz,
                   $9::text::timestamptz)`,
          [
            c.taskId,
            orgId,
            c.keyId,
            c.agentName,
            c.house,
            c.generation,
            c.note,
            c.startedAt,
            c.expiresAt,
          ],
        )
      }
      await writeDoc(orgId, (doc) => {
        boardMaps(doc).claims.set(pCard.id, claim(pCard.id, now - 1000))
        boardMaps(doc).claims.set(qCard.id, claim(qCard.id, now + 600_000))
      })

      const board = await agent.ok('get_board', { projectId: p })
      expect(ids(board.tasks)).toEqual([pCard.id])
      expect(board.activity.map((c: { taskId: string }) => c.taskId).sort()).toEqual(
        [pCard.id, qCard.id].sort(),
      )
      for (const c of board.activity) expect(keys(c)).toEqual(CLAIM_FIELDS)
      expect(board.tasks[0].claim).toMatchObject({
        status: 'lapsed',
        isLive: false,
        releasedAt: null,
      })

      const summary = await agent.ok('get_board', { summary: true })
      const byId = new Map(summary.tasks.map((t: { id: string }) => [t.id, t]))
      expect(byId.get(qCard.id)).toMatchObject({ claimedBy: 'Ada, 2nd of House Lovelace' })
      expect(byId.get(pCard.id)).toMatchObject({ claimedBy: null })
    })

    test('columnId returns the cards of that column only; the columns list is unchanged', async () => {
      const { agent, backlog, ready } = await org()
      const inReady = await card(agent, { columnId: ready })
      await card(agent, { columnId: backlog })
      const whole = await agent.ok('get_board')
      const board = await agent.ok('get_board', { columnId: ready })
      expect(ids(board.tasks)).toEqual([inReady.id])
      expect(board.columns).toEqual(whole.columns)
    })

    test('a columnId not on the board asked about is refused with 400 rather than answered as empty', async () => {
      const { owner, agent, backlog } = await org()
      const p = await owner.createProject('P')
      const q = await owner.createProject('Q')
      const qCol = (await agent.ok('create_column', { title: 'Q only', projectId: q })).column.id
      await card(agent, { columnId: backlog, projectId: p })

      const otherProject = await agent.call('get_board', { projectId: p, columnId: qCol })
      expect(otherProject.status).toBe(400)
      expect(otherProject.body.error).toMatch(/columnId/)
      const missing = await agent.call('get_board', { columnId: randomUUID() })
      expect(missing.status).toBe(400)
      expect(missing.body.error).toMatch(/columnId/)
      const malformed = await agent.call('get_board', { columnId: 'col-7' })
      expect(malformed.status).toBe(400)
      expect(malformed.body.error).toMatch(/columnId.*UUID/)
      // An empty column that is on the board is answered, empty.
      const empty = await agent.call('get_board', { projectId: p, columnId: backlog })
      expect(empty.status).toBe(200)
    })

    test('a column in which a returned card sits counts as on the board for columnId', async () => {
      const { owner, agent } = await org()
      const p = await owner.createProject('P')
      const q = await owner.createProject('Q')
      const qCol = (await agent.ok('create_column', { title: 'Q only', projectId: q })).column.id
      const stray = await card(agent, { columnId: qCol, projectId: p })
      await card(agent, { columnId: qCol, projectId: q })
      const board = await agent.ok('get_board', { projectId: p, columnId: qCol })
      expect(ids(board.tasks)).toEqual([stray.id])
    })

    test('tag narrows tasks only, matched case-insensitively against the whole tag', async () => {
      const { agent, backlog } = await org()
      const a = await card(agent, { columnId: backlog })
      const b = await card(agent, { columnId: backlog })
      await card(agent, { columnId: backlog })
      await agent.ok('set_task_tags', { taskId: a.id, tags: ['Backend', 'ui-kit'] })
      await agent.ok('set_task_tags', { taskId: b.id, tags: ['backend-legacy'] })

      expect(ids((await agent.ok('get_board', { tag: 'backend' })).tasks)).toEqual([a.id])
      expect(ids((await agent.ok('get_board', { tag: 'UI-KIT' })).tasks)).toEqual([a.id])
      expect((await agent.ok('get_board', { tag: 'back' })).tasks).toEqual([])
      const board = await agent.ok('get_board', { tag: 'BACKEND-legacy' })
      expect(ids(board.tasks)).toEqual([b.id])
      expect(board.columns).toHaveLength(4)
    })

    test('tags is every tag in use, computed before the tag filter and the other narrowing filters', async () => {
      const { agent, backlog, ready } = await org()
      const a = await card(agent, { columnId: backlog, priority: 'high' })
      const b = await card(agent, { columnId: ready })
      const archived = await card(agent, { columnId: ready })
      await agent.ok('set_task_tags', { taskId: a.id, tags: ['ops', 'db'] })
      await agent.ok('set_task_tags', { taskId: b.id, tags: ['ui'] })
      await agent.ok('set_task_tags', { taskId: archived.id, tags: ['retired'] })
      await agent.ok('archive_task', { taskId: archived.id })

      const everything = ['db', 'ops', 'ui']
      expect((await agent.ok('get_board')).tags.sort()).toEqual(everything)
      for (const filter of [
        { tag: 'ui' },
        { tag: 'nothing-has-this' },
        { columnId: backlog },
        { priority: 'none' },
        { lastCommentBy: 'human' },
      ]) {
        const board = await agent.ok('get_board', filter)
        expect(board.tags.sort(), JSON.stringify(filter)).toEqual(everything)
      }
    })

    test('priority narrows tasks by level, case-insensitively; none returns the untriaged cards', async () => {
      const { agent, backlog } = await org()
      const made: Record<string, string> = {}
      for (const level of ['urgent', 'high', 'normal', 'low'] as const) {
        made[level] = (await card(agent, { columnId: backlog, priority: level })).id
      }
      made.none = (await card(agent, { columnId: backlog })).id
      for (const [asked, want] of [
        ['urgent', 'urgent'],
        ['HIGH', 'high'],
        ['Normal', 'normal'],
        ['low', 'low'],
        ['none', 'none'],
        ['NONE', 'none'],
      ] as const) {
        const board = await agent.ok('get_board', { priority: asked })
        expect(ids(board.tasks), asked).toEqual([made[want]])
        expect(board.columns).toHaveLength(4)
      }
      const untriaged = (await agent.ok('get_board', { priority: 'none' })).tasks[0]
      expect(untriaged.priority).toBeNull()
    })

    test('a card in an on-fire column counts as at least high in priority and in the filter; ownPriority keeps its level, read again when the fire is out', async () => {
      const { agent, orgId, backlog, ready } = await org()
      const urgent = await card(agent, { columnId: ready, priority: 'urgent' })
      const low = await card(agent, { columnId: ready, priority: 'low' })
      const untriaged = await card(agent, { columnId: ready })
      const calm = await card(agent, { columnId: backlog, priority: 'low' })
      await setOnFire(orgId, ready, true)

      const board = await agent.ok('get_board')
      expect(board.columns.find((c: { id: string }) => c.id === ready).onFire).toBe(true)
      const byId = new Map(board.tasks.map((t: { id: string }) => [t.id, t]))
      expect(byId.get(urgent.id)).toMatchObject({ priority: 'urgent', ownPriority: 'urgent' })
      expect(byId.get(low.id)).toMatchObject({ priority: 'high', ownPriority: 'low' })
      expect(byId.get(untriaged.id)).toMatchObject({ priority: 'high', ownPriority: null })
      expect(byId.get(calm.id)).toMatchObject({ priority: 'low', ownPriority: 'low' })

      const high = await agent.ok('get_board', { priority: 'high' })
      expect(ids(high.tasks).sort()).toEqual([low.id, untriaged.id].sort())
      expect(ids((await agent.ok('get_board', { priority: 'none' })).tasks)).toEqual([])
      expect(ids((await agent.ok('get_board', { priority: 'low' })).tasks)).toEqual([calm.id])
      const summary = await agent.ok('get_board', { summary: true, priority: 'high' })
      expect(summary.tasks.map((t: { priority: string }) => t.priority)).toEqual(['high', 'high'])
      const full = await agent.ok('get_task', { taskId: low.id })
      expect(full.task).toMatchObject({ priority: 'high', ownPriority: 'low' })
      // Writes answer with the effective level too.
      const created = await card(agent, { columnId: ready, priority: 'normal' })
      expect(created).toMatchObject({ priority: 'high', ownPriority: 'normal' })
      const moved = (await agent.ok('move_task', { taskId: calm.id, columnId: ready })).task
      expect(moved).toMatchObject({ priority: 'high', ownPriority: 'low' })
      await agent.ok('move_task', { taskId: calm.id, columnId: backlog })
      await agent.ok('archive_task', { taskId: created.id })

      await setOnFire(orgId, ready, false)
      const after = await agent.ok('get_board', { columnId: ready })
      const afterById = new Map(after.tasks.map((t: { id: string }) => [t.id, t]))
      expect(afterById.get(low.id)).toMatchObject({ priority: 'low', ownPriority: 'low' })
      expect(afterById.get(untriaged.id)).toMatchObject({ priority: null, ownPriority: null })
      expect(ids((await agent.ok('get_board', { priority: 'none' })).tasks)).toEqual([untriaged.id])
    })

    test('lastCommentBy human returns only cards whose newest comment came from a person, and keeps them until an agent comments', async () => {
      const { agent, backlog } = await org()
      const answered = await card(agent, { columnId: backlog, title: 'answered' })
      const handled = await card(agent, { columnId: backlog, title: 'handled' })
      await card(agent, { columnId: backlog, title: 'silent' })
      await agent.ok('add_comment', { taskId: answered.id, body: 'question?', agentName: 'Ada' })
      await agent.ok('add_comment', { taskId: answered.id, body: 'answer' })
      await agent.ok('add_comment', { taskId: handled.id, body: 'hi' })
      await agent.ok('add_comment', { taskId: handled.id, body: 'done', agentName: 'Ada' })

      const queue = await agent.ok('get_board', { lastCommentBy: 'human' })
      expect(ids(queue.tasks)).toEqual([answered.id])
      expect(queue.tasks[0]).toMatchObject({ lastCommentBy: 'human' })
      expect(ids((await agent.ok('get_board', { lastCommentBy: 'agent' })).tasks)).toEqual([
        handled.id,
      ])
      // A second person's comment does not take the card out of the queue.
      await agent.ok('add_comment', { taskId: answered.id, body: 'and another thing' })
      expect(ids((await agent.ok('get_board', { lastCommentBy: 'human' })).tasks)).toEqual([
        answered.id,
      ])
      await agent.ok('add_comment', { taskId: answered.id, body: 'thanks', agentName: 'Ada' })
      expect((await agent.ok('get_board', { lastCommentBy: 'human' })).tasks).toEqual([])
    })

    test('summary: true returns exactly the fields of the summary form', async () => {
      const { owner, agent, backlog } = await org()
      const p = await owner.createProject('P')
      const t = await card(agent, {
        columnId: backlog,
        projectId: p,
        title: 'Brief',
        description: 'left out of the summary',
        type: 'chore',
        priority: 'normal',
      })
      await agent.ok('set_task_tags', { taskId: t.id, tags: ['x'] })
      await agent.ok('add_comment', { taskId: t.id, body: 'note' })

      const [s] = (await agent.ok('get_board', { summary: true })).tasks
      expect(keys(s)).toEqual(SUMMARY_FIELDS)
      expect(s).toMatchObject({
        id: t.id,
        columnId: backlog,
        projectId: p,
        title: 'Brief',
        type: 'chore',
        priority: 'normal',
        tags: ['x'],
        assigneeIds: [],
        commentCount: 1,
        imageCount: 0,
        lastCommentBy: 'human',
        claimedBy: null,
      })
      expect(s.lastCommentAt).toMatch(ISO)
      expect(s.updatedAt).toMatch(ISO)

      const withComments = await agent.ok('get_board', { summary: true, include: ['comments'] })
      expect(keys(withComments.tasks[0])).toEqual([...SUMMARY_FIELDS, 'commentsTruncated'].sort())
      const full = await agent.ok('get_board', { summary: false })
      expect(keys(full.tasks[0])).toEqual(TASK_FIELDS)
    })

    test('include comments adds a flat array of the newest comments of each card, newest first, with a per-card commentsTruncated (default 5)', async () => {
      const { agent, backlog } = await org()
      const busy = await card(agent, { columnId: backlog, title: 'busy' })
      const quiet = await card(agent, { columnId: backlog, title: 'quiet' })
      const silent = await card(agent, { columnId: backlog, title: 'silent' })
      for (let i = 0; i < 7; i++) await agent.ok('add_comment', { taskId: busy.id, body: `b${i}` })
      for (let i = 0; i < 2; i++) await agent.ok('add_comment', { taskId: quiet.id, body: `q${i}` })

      const board = await agent.ok('get_board', { include: ['comments'] })
      expect(keys(board)).toEqual(['activity', 'columns', 'comments', 'tags', 'tasks'])
      for (const c of board.comments) expect(keys(c)).toEqual(COMMENT_FIELDS)
      const bodies = (taskId: string) =>
        board.comments
          .filter((c: { taskId: string }) => c.taskId === taskId)
          .map((c: { body: string }) => c.body)
      expect(bodies(busy.id)).toEqual(['b6', 'b5', 'b4', 'b3', 'b2'])
      expect(bodies(quiet.id)).toEqual(['q1', 'q0'])
      const byId = new Map(board.tasks.map((t: { id: string }) => [t.id, t]))
      expect(byId.get(busy.id)).toMatchObject({ commentsTruncated: true, commentCount: 7 })
      expect(byId.get(quiet.id)).toMatchObject({ commentsTruncated: false, commentCount: 2 })
      expect(byId.get(silent.id)).toMatchObject({ commentsTruncated: false, commentCount: 0 })
      expect('commentsTruncated' in (await agent.ok('get_board')).tasks[0]).toBe(false)
    })

    test('commentsPerCard sets how many comments of each card are returned', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      for (let i = 0; i < 3; i++) await agent.ok('add_comment', { taskId: t.id, body: `c${i}` })
      const one = await agent.ok('get_board', { include: ['comments'], commentsPerCard: 1 })
      expect(one.comments.map((c: { body: string }) => c.body)).toEqual(['c2'])
      expect(one.tasks[0].commentsTruncated).toBe(true)
      const three = await agent.ok('get_board', { include: ['comments'], commentsPerCard: 3 })
      expect(three.comments.map((c: { body: string }) => c.body)).toEqual(['c2', 'c1', 'c0'])
      expect(three.tasks[0].commentsTruncated).toBe(false)
      const fifty = await agent.call('get_board', { include: ['comments'], commentsPerCard: 50 })
      expect(fifty.status).toBe(200)
    })

    test('include attachments adds a flat attachments array, and comments only when asked for', async () => {
      const { agent, orgId, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      await seedAttachments(orgId, t.id, 2, '2024-01-01T00:00:00.000Z')
      const board = await agent.ok('get_board', { include: ['attachments'] })
      expect(keys(board)).toEqual(['activity', 'attachments', 'columns', 'tags', 'tasks'])
      expect(board.attachments).toHaveLength(2)
      expect(board.attachments[0]).toMatchObject({ taskId: t.id, filename: 'shot-1.png' })
      expect(board.tasks[0].imageCount).toBe(2)
      expect('commentsTruncated' in board.tasks[0]).toBe(false)
      const both = await agent.ok('get_board', { include: ['comments', 'attachments'] })
      expect(keys(both)).toEqual([
        'activity',
        'attachments',
        'columns',
        'comments',
        'tags',
        'tasks',
      ])
    })

    test('the newest 500 comments are read across the organisation before narrowing, so a project filter can look sparse', async () => {
      const { owner, agent, orgId, backlog } = await org()
      const p = await owner.createProject('P')
      const q = await owner.createProject('Q')
      const old = await card(agent, { columnId: backlog, projectId: p })
      const chatty = await card(agent, { columnId: backlog, projectId: q })
      await seedComments(orgId, old.id, 3, '2020-01-01T00:00:00.000Z', 'old')
      await seedComments(orgId, chatty.id, 499, '2021-01-01T00:00:00.000Z', 'new')

      // 499 newer + the newest of the old card's three fill the 500.
      const narrowed = { projectId: p, include: ['comments'], commentsPerCard: 50 }
      const board = await agent.ok('get_board', narrowed)
      expect(board.comments.map((c: { body: string }) => c.body)).toEqual(['old 2'])
      expect(board.tasks[0]).toMatchObject({ commentCount: 3, commentsTruncated: true })

      await seedComments(orgId, chatty.id, 1, '2022-01-01T00:00:00.000Z', 'newest')
      const sparse = await agent.ok('get_board', narrowed)
      expect(sparse.comments).toEqual([])
      expect(sparse.tasks[0]).toMatchObject({ commentCount: 3, commentsTruncated: true })
      const whole = await agent.ok('get_board', { include: ['comments'], commentsPerCard: 50 })
      expect(whole.comments).toHaveLength(50)
    })

    test('the newest 250 attachments are read across the organisation before narrowing', async () => {
      const { owner, agent, orgId, backlog } = await org()
      const p = await owner.createProject('P')
      const q = await owner.createProject('Q')
      const old = await card(agent, { columnId: backlog, projectId: p })
      const busy = await card(agent, { columnId: backlog, projectId: q })
      await seedAttachments(orgId, old.id, 2, '2020-01-01T00:00:00.000Z')
      await seedAttachments(orgId, busy.id, 249, '2021-01-01T00:00:00.000Z')

      const narrowed = { projectId: p, include: ['attachments'] }
      const board = await agent.ok('get_board', narrowed)
      expect(board.attachments.map((a: { filename: string }) => a.filename)).toEqual(['shot-1.png'])
      expect(board.tasks[0].imageCount).toBe(2)
      await seedAttachments(orgId, busy.id, 1, '2022-01-01T00:00:00.000Z')
      expect((await agent.ok('get_board', narrowed)).attachments).toEqual([])
      expect((await agent.ok('get_board', { include: ['attachments'] })).attachments).toHaveLength(
        250,
      )
    })

    test.each([
      ['include', { include: ['images'] }],
      ['include', { include: 'comments' }],
      ['commentsPerCard', { include: ['comments'], commentsPerCard: 0 }],
      ['commentsPerCard', { include: ['comments'], commentsPerCard: 51 }],
      ['commentsPerCard', { include: ['comments'], commentsPerCard: 2.5 }],
      ['lastCommentBy', { lastCommentBy: 'robot' }],
      ['priority', { priority: 'critical' }],
      ['priority', { priority: null }],
      ['tag', { tag: 7 }],
      ['summary', { summary: 'yes' }],
      ['columnId', { columnId: 42 }],
      ['projectId', { projectId: '' }],
    ])('a wrong value of %s is a 400 naming the parameter (%j)', async (name, params) => {
      const { agent } = await org()
      const res = await agent.call('get_board', params)
      expect(res.status).toBe(400)
      expect(res.body.error).toContain(name)
    })

    test('every filter combines', async () => {
      const { owner, agent, backlog, ready } = await org()
      const p = await owner.createProject('P')
      const q = await owner.createProject('Q')
      const make = async (
        fields: { projectId?: string; columnId?: string; priority?: string },
        tags: string[],
        lastBy: 'human' | 'agent',
      ) => {
        const t = await card(agent, {
          columnId: backlog,
          projectId: p,
          priority: 'high',
          ...fields,
        })
        await agent.ok('set_task_tags', { taskId: t.id, tags })
        await agent.ok('add_comment', {
          taskId: t.id,
          body: 'latest',
          ...(lastBy === 'agent' ? { agentName: 'Ada' } : {}),
        })
        return t.id
      }
      const match = await make({}, ['ops'], 'human')
      await make({ projectId: q }, ['ops', 'qonly'], 'human')
      await make({ columnId: ready }, ['ops'], 'human')
      await make({}, ['dev'], 'human')
      await make({ priority: 'low' }, ['ops'], 'human')
      await make({}, ['ops'], 'agent')
      const waiting = await make({}, ['ops'], 'human')
      const blocker = await card(agent, { columnId: ready })
      await agent.ok('set_task_dependencies', { taskId: waiting, blockedBy: [blocker.id] })

      const board = await agent.ok('get_board', {
        blocked: false,
        projectId: p,
        columnId: backlog,
        tag: 'OPS',
        priority: 'High',
        lastCommentBy: 'human',
        summary: true,
        include: ['comments', 'attachments'],
        commentsPerCard: 1,
      })
      expect(ids(board.tasks)).toEqual([match])
      expect(keys(board.tasks[0])).toEqual([...SUMMARY_FIELDS, 'commentsTruncated'].sort())
      expect(board.comments.map((c: { taskId: string }) => c.taskId)).toEqual([match])
      expect(board.attachments).toEqual([])
      expect(board.tags.sort()).toEqual(['dev', 'ops'])
    })
  })

  describe('get_task', () => {
    test('get_task returns the card in full with its whole comment thread, oldest first', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog, title: 'Thread', description: 'Body' })
      const bodies = Array.from({ length: 8 }, (_, i) => `comment ${i}`)
      for (const body of bodies) await agent.ok('add_comment', { taskId: t.id, body })

      const res = await agent.ok('get_task', { taskId: t.id })
      expect(keys(res)).toEqual(['assignees', 'attachments', 'claim', 'comments', 'images', 'task'])
      expect(keys(res.task)).toEqual(TASK_FIELDS)
      expect(res.task).toMatchObject({ id: t.id, title: 'Thread', description: 'Body' })
      expect(res.comments.map((c: { body: string }) => c.body)).toEqual(bodies)
      for (const c of res.comments) expect(keys(c)).toEqual(COMMENT_FIELDS)
      expect(res.claim).toBeNull()
      expect(res.assignees).toEqual([])
      expect(res.attachments).toEqual([])
      expect(res.images).toEqual([])
    })

    test('archived cards are still readable by id', async () => {
      const { agent, backlog } = await org()
      const t = await card(agent, { columnId: backlog })
      await agent.ok('add_comment', { taskId: t.id, body: 'before archiving' })
      const { archivedAt } = await agent.ok('archive_task', { taskId: t.id })
      const res = await agent.ok('get_task', { taskId: t.id })
      expect(res.task).toMatchObject({ id: t.id, archivedAt, commentCount: 1 })
      expect(res.comments).toHaveLength(1)
    })

    test('get_task lists the assignees who are members of the organisation, by id, name and e-mail', async () => {
      const { owner, agent, orgId, backlog } = await org()
      const outsider = new Person(server.url)
      await outsider.signUp({ name: 'Olive Outsider' })
      const t = await card(agent, { columnId: backlog })
      const me = owner.user as { id: string; email: string; name: string }
      // Assigning is done by people in the app.
      await writeDoc(orgId, (doc) => {
        boardMaps(doc)
          .tasks.get(t.id)
          ?.set('assigneeIds', [me.id, (outsider.user as { id: string }).id])
      })
      const res = await agent.ok('get_task', { taskId: t.id })
      expect(res.assignees).toEqual([{ id: me.id, name: me.name, email: me.email }])
      expect(res.task.assigneeIds).toContain(me.id)
    })

    test('get_task of a card that does not exist is a 404; a malformed or missing taskId a 400; ids are case-insensitive', async () => {
      const { agent, backlog } = await org()
      const missing = await agent.call('get_task', { taskId: randomUUID() })
      expect(missing.status).toBe(404)
      expect(missing.body.error).toMatch(/taskId/)
      const malformed = await agent.call('get_task', { taskId: '123' })
      expect(malformed.status).toBe(400)
      expect(malformed.body.error).toMatch(/taskId/)
      const t = await card(agent, { columnId: backlog })
      const upper = await agent.ok('get_task', { taskId: t.id.toUpperCase() })
      expect(upper.task.id).toBe(t.id)
      const absent = await agent.call('get_task', {})
      expect(absent.status).toBe(400)
      expect(absent.body.error).toMatch(/taskId is required/)
    })
  })

  describe('list_columns and list_projects', () => {
    test('list_columns returns every column in board order with id, title, position, role and projectId', async () => {
      const { owner, agent, backlog, ready, doing, done } = await org()
      const p = await owner.createProject('P')
      const first = (await agent.ok('create_column', { title: 'First', position: 1 })).column.id
      const pCol = (await agent.ok('create_column', { title: 'P', projectId: p })).column.id
      const { columns } = await agent.ok('list_columns', {})
      expect(ids(columns)).toEqual([first, backlog, ready, doing, done, pCol])
      for (const c of columns)
        expect(keys(c)).toEqual(['id', 'position', 'projectId', 'role', 'title'])
      expect(columns[1]).toEqual({
        id: backlog,
        title: 'Backlog',
        position: expect.any(Number),
        role: 'backlog',
        projectId: null,
      })
      const positions = columns.map((c: { position: number }) => c.position)
      expect(positions).toEqual([...positions].sort((a, b) => a - b))
    })

    test('list_columns with projectId returns that project’s own columns plus the organisation-level ones', async () => {
      const { owner, agent, backlog, ready, doing, done } = await org()
      const p = await owner.createProject('P')
      const q = await owner.createProject('Q')
      const pCol = (await agent.ok('create_column', { title: 'P', projectId: p })).column.id
      await agent.ok('create_column', { title: 'Q', projectId: q })
      const { columns } = await agent.ok('list_columns', { projectId: p })
      expect(ids(columns)).toEqual([backlog, ready, doing, done, pCol])
      expect((await agent.ok('list_columns')).columns).toHaveLength(6)
    })

    test('list_columns with a projectId that is no project of this organisation is a 400 naming it', async () => {
      const { agent } = await org()
      const missing = await agent.call('list_columns', { projectId: randomUUID() })
      expect(missing.status).toBe(400)
      expect(missing.body.error).toMatch(/projectId/)
      const malformed = await agent.call('list_columns', { projectId: 'p' })
      expect(malformed.status).toBe(400)
      expect(malformed.body.error).toMatch(/projectId.*UUID/)
    })

    test('list_projects returns each project with exactly id, name, color and createdAt', async () => {
      const { owner, agent } = await org()
      expect(await agent.ok('list_projects')).toEqual({ projects: [] })
      const a = await owner.createProject('Apollo')
      const res = await owner.request('POST', `/api/app/orgs/${owner.orgId}/projects`, {
        name: 'Gemini',
        color: '#112233',
      })
      const { projects } = await agent.ok('list_projects', {})
      expect(projects).toHaveLength(2)
      for (const p of projects) expect(keys(p)).toEqual(['color', 'createdAt', 'id', 'name'])
      const byName = new Map(projects.map((p: { name: string }) => [p.name, p]))
      expect(byName.get('Apollo')).toMatchObject({ id: a, color: expect.stringMatching(/^#/) })
      expect(byName.get('Gemini')).toMatchObject({ id: res.body.project.id, color: '#112233' })
      expect((byName.get('Gemini') as { createdAt: string }).createdAt).toMatch(ISO)
    })
  })
})
