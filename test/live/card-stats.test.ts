import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { asStats, boardMaps } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { boardDocName, cardDocName } from '../../shared/doc-names.ts'
import {
  type Agent,
  connectProvider,
  eventually,
  eventuallyAsync,
  ownerWithAgent,
  type Person,
} from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/**
 * A card's `stats` (its comment count, its last comment) follow its thread wherever the
 * card is: on the board document, or in its archived row. A person's comment can reach a
 * card's document while the board is not in memory (just re-based, nobody looking at it):
 * the server then makes the stats follow in a write of its own.
 */
describe.each(STORAGES)("a card's stats follow its thread (%s)", (kind) => {
  let server: TestServer
  let owner: Person
  let agent: Agent
  let columnId: string

  beforeAll(async () => {
    server = await startServer(kind)
    ;({ owner, agent } = await ownerWithAgent(server.url))
    columnId = (await agent.ok('list_columns')).columns[0].id
  })
  afterAll(() => server.close())

  /**
   * A person comments on the card through its own document while nobody holds the board:
   * a re-base first drops the board's copy from memory. Their edit is stored before this
   * returns.
   */
  const commentWhileBoardAway = async (taskId: string, body: string) => {
    const thread = await connectProvider(
      server.url,
      cardDocName(owner.orgId, taskId),
      await owner.syncToken(),
    )
    try {
      await server.app.live.rebase(boardDocName(owner.orgId))
      const m = new Y.Map<unknown>()
      m.set('taskId', taskId)
      m.set('body', body)
      cardMaps(thread.doc).comments.set(crypto.randomUUID(), m)
      await eventually(() => (thread.provider.hasUnsyncedChanges ? undefined : true), 10_000)
      await server.app.live.flushPeople(owner.orgId)
    } finally {
      thread.destroy()
    }
  }

  test("a person's comment on an archived card while its board is not in memory counts in the archived card's stats", async () => {
    const { task } = await agent.ok('create_task', { columnId, title: 'Archived, then discussed' })
    await agent.ok('archive_task', { taskId: task.id })
    await commentWhileBoardAway(task.id, 'Still worth a look')
    await eventuallyAsync(async () => {
      const [row] = await server.storage.db.query<{ record: { stats?: unknown } }>(
        'select record from archived_tasks where id = $1',
        [task.id],
      )
      return asStats(row?.record.stats).commentCount === 1 ? true : undefined
    }, 10_000)
    const { task: read } = await agent.ok('get_task', { taskId: task.id })
    expect(read).toMatchObject({ commentCount: 1, lastCommentBy: 'human' })
  })

  test("a person's comment on a card while its board is not in memory counts in the board card's stats", async () => {
    const { task } = await agent.ok('create_task', { columnId, title: 'Discussed' })
    await commentWhileBoardAway(task.id, 'A first thought')
    await eventuallyAsync(async () => {
      const stats = await server.app.live.read(boardDocName(owner.orgId), (doc) =>
        asStats(boardMaps(doc).tasks.get(task.id)?.get('stats')),
      )
      return stats.commentCount === 1 ? true : undefined
    }, 10_000)
  })
})
