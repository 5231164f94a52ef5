import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type * as Y from 'yjs'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { cardDocName } from '../../shared/doc-names.ts'
import { replaceText } from '../../shared/ytext.ts'
import {
  type Agent,
  connectProvider,
  eventuallyAsync,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/**
 * search_tasks (docs/design.md Contract 1): full-text search over titles, descriptions and
 * comments, stemmed, the last word a prefix, ranked, in the summary form with where it
 * matched; get_board's filters, includeArchived, pages. The index is kept in the write's
 * own transaction, whoever writes: an agent, a person in the app or through /sync.
 */
describe.each(STORAGES)('search_tasks (%s)', (kind) => {
  let server: TestServer
  let agent: Agent
  let owner: Person
  let columns: { id: string }[]
  const ids: Record<string, string> = {}

  const search = async (params: Record<string, unknown>) => agent.ok('search_tasks', params)
  const found = async (query: string, more: Record<string, unknown> = {}) =>
    (await search({ query, ...more })).tasks.map((t: { id: string }) => t.id)

  beforeAll(async () => {
    server = await startServer(kind, { rateLimitPerKey: 100_000 })
    ;({ agent, owner } = await ownerWithAgent(server.url))
    ;({ columns } = await agent.ok('list_columns'))
    const card = async (name: string, title: string, description = '', column = 0) => {
      const { task } = await agent.ok('create_task', {
        columnId: (columns[column] as { id: string }).id,
        title,
        description,
      })
      ids[name] = task.id
    }
    await card('login', 'Investigate the flaky login test', 'It fails on CI once a week.')
    await card(
      'retry',
      'Retry budget for webhooks',
      'Deliveries that fail are retried; login is not involved.',
    )
    await card('docs', 'Write the operations guide', 'Backups, proxies, health.', 1)
    await card('other', 'Plain card', 'Nothing to see.', 1)
    await agent.ok('add_comment', {
      taskId: ids.other,
      body: 'The flakiness comes from the session cookie expiring mid-test.',
      agentName: 'Ada',
    })
  })
  afterAll(() => server?.close())

  test('words are stemmed: "failing tests" finds "fails" and "test"', async () => {
    expect(await found('failing tests')).toEqual([ids.login])
  })

  test('the last word is a prefix as it is typed: "flak" finds flaky and flakiness', async () => {
    const hits = await found('flak')
    expect(hits).toContain(ids.login)
    expect(hits).toContain(ids.other)
  })

  test('hits are ranked: a title match comes before a description match', async () => {
    expect(await found('login')).toEqual([ids.login, ids.retry])
  })

  test('each hit is the summary form with where it matched and a snippet, highlighted', async () => {
    const { tasks, nextCursor } = await search({ query: 'login' })
    expect(nextCursor).toBeNull()
    const [title, description] = tasks
    expect(title.match).toEqual({
      field: 'title',
      snippet: 'Investigate the flaky **login** test',
    })
    expect(description.match.field).toBe('description')
    expect(description.match.snippet).toContain('**login**')
    expect(Object.keys(title).sort()).toEqual(
      [
        'id',
        'columnId',
        'projectId',
        'title',
        'type',
        'priority',
        'tags',
        'blocked',
        'assigneeIds',
        'commentCount',
        'imageCount',
        'lastCommentBy',
        'lastCommentAt',
        'updatedAt',
        'claimedBy',
        'archivedAt',
        'match',
      ].sort(),
    )
    const [comment] = (await search({ query: 'cookie' })).tasks
    expect(comment.id).toBe(ids.other)
    expect(comment.match.field).toBe('comment')
    expect(comment.match.snippet).toContain('**cookie**')
    expect(typeof comment.match.commentId).toBe('string')
  })

  test('words split between a title and its description find the card, its snippet from the description', async () => {
    const [hit] = (await search({ query: 'flaky weekly' })).tasks
    expect(hit.id).toBe(ids.login)
    expect(hit.match.field).toBe('description')
    expect(hit.match.snippet).toContain('**week**')
  })
  test('get_board’s filters combine with the words', async () => {
    const second = (columns[1] as { id: string }).id
    expect(await found('guide', { columnId: second })).toEqual([ids.docs])
    expect(await found('login', { columnId: second })).toEqual([])
    await agent.ok('set_task_tags', { taskId: ids.retry, tags: ['Webhooks'] })
    expect(await found('login', { tag: 'webhooks' })).toEqual([ids.retry])
    await agent.ok('update_task', { taskId: ids.login, priority: 'urgent' })
    expect(await found('login', { priority: 'URGENT' })).toEqual([ids.login])
    expect(await found('login', { priority: 'none' })).toEqual([ids.retry])
    const projectId = await owner.createProject('Search')
    expect(await found('login', { projectId })).toEqual([])
  })

  test('the index follows every write in its own transaction: a new title is found at once, the old one no longer', async () => {
    await agent.ok('update_task', { taskId: ids.docs, title: 'Write the runbook' })
    expect(await found('runbook')).toEqual([ids.docs])
    expect(await found('operations guide')).toEqual([])
    await agent.ok('update_task', { taskId: ids.docs, description: 'Covers the sweeper too.' })
    expect(await found('sweeper')).toEqual([ids.docs])
    expect(await found('proxies')).toEqual([])
  })

  test('an archived card is found only with includeArchived, a restored one again, a deleted one never', async () => {
    const { task } = await agent.ok('create_task', {
      columnId: (columns[0] as { id: string }).id,
      title: 'Quarterly zebra review',
    })
    await agent.ok('archive_task', { taskId: task.id })
    expect(await found('zebra')).toEqual([])
    const archived = (await search({ query: 'zebra', includeArchived: true })).tasks
    expect(archived.map((t: { id: string }) => t.id)).toEqual([task.id])
    expect(archived[0].archivedAt).not.toBeNull()
    const restored = await owner.request(
      'POST',
      `/api/app/orgs/${owner.orgId}/tasks/${task.id}/restore`,
    )
    expect(restored.status).toBe(200)
    expect(await found('zebra')).toEqual([task.id])
    const deleted = await owner.request('DELETE', `/api/app/orgs/${owner.orgId}/tasks/${task.id}`)
    expect(deleted.status).toBe(204)
    expect(await found('zebra', { includeArchived: true })).toEqual([])
  })

  test('a card found by its comments follows its card: hidden once archived, found with includeArchived, again once restored, and a comment added while archived too', async () => {
    const { task } = await agent.ok('create_task', {
      columnId: (columns[0] as { id: string }).id,
      title: 'Plain title',
    })
    await agent.ok('add_comment', { taskId: task.id, body: 'The okapi migration is done.' })
    expect(await found('okapi')).toEqual([task.id])
    await agent.ok('archive_task', { taskId: task.id })
    expect(await found('okapi')).toEqual([])
    expect(await found('okapi', { includeArchived: true })).toEqual([task.id])
    const restored = await owner.request(
      'POST',
      `/api/app/orgs/${owner.orgId}/tasks/${task.id}/restore`,
    )
    expect(restored.status).toBe(200)
    expect(await found('okapi')).toEqual([task.id])
    await agent.ok('archive_task', { taskId: task.id })
    await agent.ok('add_comment', { taskId: task.id, body: 'A narwhal note after archiving.' })
    expect(await found('narwhal')).toEqual([])
    expect(await found('narwhal', { includeArchived: true })).toEqual([task.id])
  })

  test('a broad query over many cards pages through every hit once, best first, on the board and with archived cards', async () => {
    const made: string[] = []
    for (let i = 0; i < 70; i++) {
      const { task } = await agent.ok('create_task', {
        columnId: (columns[i % 2] as { id: string }).id,
        title: i % 3 === 0 ? `Walrus walrus report ${i}` : `Report ${i}`,
        description: i % 3 === 0 ? '' : `About the walrus, item ${i}.`,
      })
      made.push(task.id)
      if (i % 4 === 0) {
        await agent.ok('add_comment', { taskId: task.id, body: 'walrus walrus walrus sighted' })
      }
      if (i % 5 === 0) await agent.ok('archive_task', { taskId: task.id })
    }
    for (const includeArchived of [false, true]) {
      const seen: string[] = []
      let cursor: string | undefined
      do {
        const page = await search({ query: 'walrus', includeArchived, limit: 7, cursor })
        seen.push(...page.tasks.map((t: { id: string }) => t.id))
        cursor = page.nextCursor ?? undefined
      } while (cursor)
      const expected = made.filter((_, i) => includeArchived || i % 5 !== 0)
      expect(new Set(seen).size).toBe(seen.length)
      expect([...seen].sort()).toEqual([...expected].sort())
      // Title matches (weight A, twice) come before description and comment matches.
      const titled = made.filter((_, i) => i % 3 === 0 && (includeArchived || i % 5 !== 0))
      expect(new Set(seen.slice(0, titled.length))).toEqual(new Set(titled))
      const whole = await search({ query: 'walrus', includeArchived, limit: 100 })
      expect(whole.tasks.map((t: { id: string }) => t.id)).toEqual(seen)
    }
  })

  test('a person’s live edits of a title and a description are found, once stored', async () => {
    const token = await owner.syncToken()
    const board = await connectProvider(server.url, boardDocName(owner.orgId), token)
    const card = await connectProvider(
      server.url,
      cardDocName(owner.orgId, ids.retry as string),
      token,
    )
    try {
      const m = boardMaps(board.doc).tasks.get(ids.retry as string) as Y.Map<unknown>
      board.doc.transact(() => m.set('title', 'Retry schedule for pelican deliveries'))
      // Version 3: the description lives in the card's own document.
      card.doc.transact(() =>
        replaceText(cardMaps(card.doc).description, 'Five retries over four hours.'),
      )
      await eventuallyAsync(async () => ((await found('pelican')).length === 1 ? true : undefined))
      expect(await found('pelican')).toEqual([ids.retry])
      await eventuallyAsync(async () =>
        (await found('schedule hours')).length === 1 ? true : undefined,
      )
      expect(await found('schedule hours')).toEqual([ids.retry])
      const { task } = await agent.ok('get_task', { taskId: ids.retry })
      expect(task.description).toBe('Five retries over four hours.')
    } finally {
      card.destroy()
      board.destroy()
    }
  })

  test('pages: limit and cursor walk every hit once', async () => {
    const batch: string[] = []
    for (let i = 0; i < 12; i++) {
      const { task } = await agent.ok('create_task', {
        columnId: (columns[2] as { id: string }).id,
        title: `Kestrel migration step ${i}`,
      })
      batch.push(task.id)
    }
    const seen: string[] = []
    let cursor: string | undefined
    do {
      const page = await search({ query: 'kestrel', limit: 5, ...(cursor ? { cursor } : {}) })
      expect(page.tasks.length).toBeLessThanOrEqual(5)
      seen.push(...page.tasks.map((t: { id: string }) => t.id))
      cursor = page.nextCursor ?? undefined
    } while (cursor)
    expect(new Set(seen)).toEqual(new Set(batch))
    expect(seen).toHaveLength(12)
    const other = await agent.call('search_tasks', {
      query: 'other words',
      cursor: (await search({ query: 'kestrel', limit: 5 })).nextCursor,
    })
    expect(other.status).toBe(400)
    expect(other.body.error).toMatch(/^cursor belongs to a page of other filters/)
  })

  test('pages over archived cards too: includeArchived walks every hit once, each archived one with its archivedAt, with a filter or without', async () => {
    const batch: string[] = []
    for (let i = 0; i < 9; i++) {
      const { task } = await agent.ok('create_task', {
        columnId: (columns[2] as { id: string }).id,
        title: `Osprey survey leg ${i}`,
      })
      batch.push(task.id)
      if (i % 2 === 0) await agent.ok('archive_task', { taskId: task.id })
    }
    for (const filter of [{}, { columnId: (columns[2] as { id: string }).id }]) {
      const seen: { id: string; archivedAt: string | null }[] = []
      let cursor: string | undefined
      do {
        const page = await search({
          query: 'osprey',
          includeArchived: true,
          limit: 2,
          ...filter,
          ...(cursor ? { cursor } : {}),
        })
        seen.push(...page.tasks)
        cursor = page.nextCursor ?? undefined
      } while (cursor)
      expect(seen.map((t) => t.id).sort()).toEqual([...batch].sort())
      for (const [i, id] of batch.entries()) {
        expect(seen.find((t) => t.id === id)?.archivedAt !== null).toBe(i % 2 === 0)
      }
    }
  })

  test('a query of no words, a blank one or one too long is a 400 naming query', async () => {
    for (const query of ['', '   ', '?!', 'x'.repeat(501)]) {
      const res = await agent.call('search_tasks', { query })
      expect(res.status, query).toBe(400)
      expect(res.body.error).toMatch(/^query /)
    }
    const res = await agent.call('search_tasks', {})
    expect(res.status).toBe(400)
    expect(res.body.error).toMatch(/^query is required/)
  })

  test('another organisation’s cards are never found', async () => {
    const other = await ownerWithAgent(server.url)
    const { columns: theirs } = await other.agent.ok('list_columns')
    await other.agent.ok('create_task', { columnId: theirs[0].id, title: 'Flaky login elsewhere' })
    expect(await found('elsewhere')).toEqual([])
    expect(
      (await other.agent.ok('search_tasks', { query: 'flaky login' })).tasks.map(
        (t: { title: string }) => t.title,
      ),
    ).toEqual(['Flaky login elsewhere'])
  })
})
