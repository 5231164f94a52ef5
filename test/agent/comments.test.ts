import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { cardMaps } from '../../shared/card-doc.ts'
import { cardDocName } from '../../shared/doc-names.ts'
import {
  Agent,
  connectProvider,
  eventuallyAsync,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { expectRefused, ISO } from '../support/fixtures.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

describe.each(STORAGES)('comments (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(kind)
  })
  afterAll(() => server.close())

  async function orgWithCard() {
    const { owner, agent, orgId } = await ownerWithAgent(server.url)
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: 'Talk' })
    return { owner, agent, orgId, taskId: task.id as string }
  }

  /** A person comments in the app: a new comment in the card's document, over a real provider. */
  async function personComments(owner: Person, agent: Agent, taskId: string, body: string) {
    const live = await connectProvider(
      server.url,
      cardDocName(owner.orgId, taskId),
      await owner.syncToken(),
    )
    const id = randomUUID()
    try {
      live.doc.transact(() => {
        const m = new Y.Map<unknown>()
        m.set('taskId', taskId)
        m.set('body', body)
        m.set('authorEmail', owner.user?.email)
        m.set('agentName', null)
        m.set('createdAt', new Date().toISOString())
        m.set('editedAt', null)
        cardMaps(live.doc).comments.set(id, m)
      })
      await eventuallyAsync(async () => {
        const { comments } = await agent.ok('get_task', { taskId })
        return comments.some((c: { id: string }) => c.id === id) ? true : undefined
      })
    } finally {
      live.destroy()
    }
    return id
  }

  const queue = async (agent: Agent) =>
    (await agent.ok('get_board', { lastCommentBy: 'human' })).tasks.map((t: { id: string }) => t.id)

  describe('add_comment', () => {
    test('add_comment returns the comment with its id, body, the key’s robot e-mail as author, agentName and creation time', async () => {
      const { agent, taskId } = await orgWithCard()
      const me = await agent.ok('whoami')
      const { comment } = await agent.ok('add_comment', { taskId, body: 'Hello', agentName: 'Ada' })
      expect(comment).toEqual({
        id: expect.any(String),
        taskId,
        body: 'Hello',
        authorEmail: me.agent.email,
        agentName: 'Ada',
        createdAt: expect.stringMatching(ISO),
        editedAt: null,
      })
      const read = await agent.ok('get_task', { taskId })
      expect(read.comments).toEqual([comment])
      expect(read.task).toMatchObject({
        commentCount: 1,
        lastCommentBy: 'agent',
        lastCommentAt: comment.createdAt,
        lastCommentAuthor: 'Ada',
      })
    })

    test('body is 1–10,000 characters', async () => {
      const { agent, taskId } = await orgWithCard()
      const long = 'b'.repeat(10_000)
      expect((await agent.ok('add_comment', { taskId, body: long })).comment.body).toBe(long)
      await expectRefused(agent, 'add_comment', { taskId, body: '' }, 400, /body/)
      await expectRefused(agent, 'add_comment', { taskId, body: `${long}b` }, 400, /body.*10000/)
      await expectRefused(agent, 'add_comment', { taskId }, 400, /body is required/)
      expect((await agent.ok('get_task', { taskId })).comments).toHaveLength(1)
    })

    test('add_comment works on archived cards', async () => {
      const { agent, taskId } = await orgWithCard()
      await agent.ok('archive_task', { taskId })
      const { comment } = await agent.ok('add_comment', { taskId, body: 'Post-mortem' })
      expect((await agent.ok('get_task', { taskId })).comments).toEqual([comment])
    })

    test('add_comment on a card that does not exist is a 404', async () => {
      const { agent } = await orgWithCard()
      await expectRefused(agent, 'add_comment', { taskId: randomUUID(), body: 'x' }, 404, /taskId/)
      await expectRefused(
        agent,
        'add_comment',
        { taskId: 'card-1', body: 'x' },
        400,
        /taskId.*UUID/,
      )
    })

    test('a comment sent without agentName counts as a human’s for lastCommentBy', async () => {
      const { agent, taskId } = await orgWithCard()
      const me = await agent.ok('whoami')
      const { comment } = await agent.ok('add_comment', { taskId, body: 'no name' })
      expect(comment.agentName).toBeNull()
      const { task } = await agent.ok('get_task', { taskId })
      expect(task).toMatchObject({ lastCommentBy: 'human', lastCommentAuthor: me.agent.email })
      expect(await queue(agent)).toEqual([taskId])
    })

    test('a person’s comment puts the card in the lastCommentBy human queue, where it stays until an agent comments', async () => {
      const { owner, agent, taskId } = await orgWithCard()
      await agent.ok('add_comment', { taskId, body: 'Which colour?', agentName: 'Ada' })
      expect(await queue(agent)).toEqual([])

      await personComments(owner, agent, taskId, 'Blue, please')
      expect(await queue(agent)).toEqual([taskId])
      const { task } = await agent.ok('get_task', { taskId })
      expect(task).toMatchObject({ lastCommentBy: 'human', lastCommentAuthor: owner.user?.email })
      // A write without a name is attributed to a person, so the card stays.
      await agent.ok('add_comment', { taskId, body: 'ack' })
      expect(await queue(agent)).toEqual([taskId])
      await agent.ok('add_comment', { taskId, body: 'Done in blue', agentName: 'Ada' })
      expect(await queue(agent)).toEqual([])
    })
  })

  test('comments written at the same moment keep the order they were added in: the thread, the newest and lastCommentBy follow it', async () => {
    const { owner, agent, taskId } = await orgWithCard()
    const other = new Agent(server.url, await owner.createKey('racing key'))
    const live = await connectProvider(
      server.url,
      cardDocName(owner.orgId, taskId),
      await owner.syncToken(),
    )
    const committed: string[] = []
    cardMaps(live.doc).comments.observe((event) => {
      for (const [key, change] of event.changes.keys)
        if (change.action === 'add') committed.push(key)
    })
    try {
      const n = 40
      await Promise.all(
        Array.from({ length: n }, (_, i) =>
          (i % 2 ? agent : other).ok('add_comment', {
            taskId,
            body: `c${i}`,
            ...(i % 3 ? { agentName: 'Ada' } : {}),
          }),
        ),
      )
      await eventuallyAsync(async () => (committed.length === n ? true : undefined))
      const { task, comments } = await agent.ok('get_task', { taskId })
      expect(comments.map((c: { id: string }) => c.id)).toEqual(committed)
      const stamps = comments.map((c: { createdAt: string }) => c.createdAt)
      expect(new Set(stamps).size).toBe(n)
      const newest = comments.at(-1)
      expect(task.lastCommentAt).toBe(newest.createdAt)
      expect(task.lastCommentBy).toBe(newest.agentName ? 'agent' : 'human')
    } finally {
      live.destroy()
    }
  })

  describe('update_comment', () => {
    test('update_comment changes the body, sets editedAt and keeps the author and the creation time', async () => {
      const { agent, taskId } = await orgWithCard()
      const { comment } = await agent.ok('add_comment', { taskId, body: 'tpyo', agentName: 'Ada' })
      const { comment: edited } = await agent.ok('update_comment', {
        commentId: comment.id,
        body: 'typo',
      })
      expect(edited).toEqual({ ...comment, body: 'typo', editedAt: expect.stringMatching(ISO) })
      expect(edited.editedAt >= comment.createdAt).toBe(true)
      const read = await agent.ok('get_task', { taskId })
      expect(read.comments).toEqual([edited])
      expect(read.task).toMatchObject({ commentCount: 1, lastCommentAt: comment.createdAt })
    })

    test('comments are the calling key’s whatever agentName the edit sends', async () => {
      const { agent, taskId } = await orgWithCard()
      const { comment } = await agent.ok('add_comment', { taskId, body: 'a', agentName: 'Ada' })
      const res = await agent.ok('update_comment', {
        commentId: comment.id,
        body: 'b',
        agentName: 'Grace',
      })
      expect(res.comment).toMatchObject({ body: 'b', agentName: 'Ada' })
    })

    test('update_comment body is 1–10,000 characters', async () => {
      const { agent, taskId } = await orgWithCard()
      const { comment } = await agent.ok('add_comment', { taskId, body: 'keep' })
      await expectRefused(agent, 'update_comment', { commentId: comment.id, body: '' }, 400, /body/)
      await expectRefused(
        agent,
        'update_comment',
        { commentId: comment.id, body: 'x'.repeat(10_001) },
        400,
        /body.*10000/,
      )
      await expectRefused(
        agent,
        'update_comment',
        { commentId: comment.id },
        400,
        /body is required/,
      )
      expect((await agent.ok('get_task', { taskId })).comments).toEqual([comment])
      const ok = await agent.ok('update_comment', {
        commentId: comment.id,
        body: 'y'.repeat(10_000),
      })
      expect(ok.comment.body).toHaveLength(10_000)
    })
  })

  describe('only the calling key’s comments', () => {
    test('update_comment and delete_comment on a person’s comment are a 403, and the comment stays as it was', async () => {
      const { owner, agent, taskId } = await orgWithCard()
      const commentId = await personComments(owner, agent, taskId, 'Mine, not yours')
      const before = (await agent.ok('get_task', { taskId })).comments
      await expectRefused(
        agent,
        'update_comment',
        { commentId, body: 'hijack' },
        403,
        /not written by this key/,
      )
      await expectRefused(agent, 'delete_comment', { commentId }, 403, /not written by this key/)
      expect((await agent.ok('get_task', { taskId })).comments).toEqual(before)
    })

    test('update_comment and delete_comment on another key’s comment are a 403', async () => {
      const { owner, agent, taskId } = await orgWithCard()
      const other = new Agent(server.url, await owner.createKey('second key'))
      const { comment } = await other.ok('add_comment', {
        taskId,
        body: 'from key two',
        agentName: 'Ada',
      })
      await expectRefused(
        agent,
        'update_comment',
        { commentId: comment.id, body: 'x', agentName: 'Ada' },
        403,
        /not written by this key/,
      )
      await expectRefused(
        agent,
        'delete_comment',
        { commentId: comment.id },
        403,
        /not written by this key/,
      )
      expect((await agent.ok('get_task', { taskId })).comments).toEqual([comment])
      // Its own key may.
      expect(
        (await other.ok('update_comment', { commentId: comment.id, body: 'edited' })).comment.body,
      ).toBe('edited')
    })

    test('update_comment and delete_comment of a comment that does not exist are a 404', async () => {
      const { agent } = await orgWithCard()
      const commentId = randomUUID()
      await expectRefused(agent, 'update_comment', { commentId, body: 'x' }, 404, /commentId/)
      await expectRefused(agent, 'delete_comment', { commentId }, 404, /commentId/)
      await expectRefused(agent, 'delete_comment', { commentId: 'c1' }, 400, /commentId.*UUID/)
    })
  })

  describe('delete_comment', () => {
    test('delete_comment is permanent: gone from the thread and the counts, and a second delete is a 404', async () => {
      const { agent, taskId } = await orgWithCard()
      const { comment: first } = await agent.ok('add_comment', {
        taskId,
        body: 'first',
        agentName: 'Ada',
      })
      const { comment: second } = await agent.ok('add_comment', { taskId, body: 'second' })
      expect(await queue(agent)).toEqual([taskId])

      const res = await agent.ok('delete_comment', { commentId: second.id })
      expect(res).toEqual({ deleted: true, commentId: second.id })
      const read = await agent.ok('get_task', { taskId })
      expect(read.comments).toEqual([first])
      expect(read.task).toMatchObject({
        commentCount: 1,
        lastCommentBy: 'agent',
        lastCommentAuthor: 'Ada',
      })
      expect(await queue(agent)).toEqual([])
      const board = await agent.ok('get_board', { include: ['comments'] })
      expect(board.comments).toEqual([first])
      await expectRefused(agent, 'delete_comment', { commentId: second.id }, 404, /commentId/)
      await expectRefused(
        agent,
        'update_comment',
        { commentId: second.id, body: 'back?' },
        404,
        /commentId/,
      )
    })
  })
})
