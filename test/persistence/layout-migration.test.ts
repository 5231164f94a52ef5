import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type App, createApp } from '../../server/app.ts'
import { loadConfig } from '../../server/config.ts'
import { LAYOUT_V2 } from '../../server/upgrades/layout-v2.ts'
import { boardMaps } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { boardDocName, cardDocName } from '../../shared/doc-names.ts'
import { Agent, Person } from '../support/client.ts'
import { type DatabaseFixture, loadFixture, readFixture } from '../support/database-fixture.ts'
import { freshDb, STORAGES, type TestDb } from '../support/storage.ts'

/**
 * test/fixtures/v1-database.json was written by version 1 of the service (commit b20d156,
 * everything in the board document) through its own actions: an organisation with a
 * project, six cards (tags, priority, comments by agents and by a person through the live
 * board, screenshots, a live claim, a released one), two of them archived (one with a
 * comment, a screenshot and a released claim), a column's worth of history in the change
 * log, and a mind map. The test loads it into a database migrated only as far as version 1
 * went, then starts today's service on it.
 */
const fixture: DatabaseFixture = {
  ...readFixture<Omit<DatabaseFixture, 'lastMigration' | 'migrations' | 'tableOrder'>>(
    'v1-database.json',
  ),
  lastMigration: '008_drop_hold_api_key.sql',
  migrations: [],
  tableOrder: [
    'users',
    'organizations',
    'memberships',
    'api_keys',
    'server_secrets',
    'doc_updates',
    'changes',
    'claims',
    'maps',
    'map_items',
    'files',
  ],
}

describe.each(STORAGES)('a database written by version 1 opens under version 2 (%s)', (kind) => {
  let storage: TestDb
  let app: App
  let agent: Agent
  const card = (title: string) => fixture.cards[title] as string

  const start = async () => {
    const config = { ...loadConfig({}), port: 0, host: '127.0.0.1', logLevel: 'error' as const }
    app = await createApp(config, { db: storage.db })
    agent = new Agent(await app.listen(), fixture.apiKey)
  }

  beforeAll(async () => {
    storage = await freshDb(kind, { migrate: false })
    await loadFixture(storage, fixture)
    await start()
  })
  afterAll(async () => {
    await app.close()
    await storage.drop()
  })

  test('the cards on the board are on the board, with their comment and screenshot counts', async () => {
    const board = await agent.ok('get_board', { include: ['comments', 'attachments'] })
    const byTitle = new Map(board.tasks.map((t: { title: string }) => [t.title, t]))
    expect([...byTitle.keys()].sort()).toEqual(
      ['Claimed card', 'Plain card', 'Released card', 'Screenshot card'].sort(),
    )
    expect(byTitle.get('Plain card')).toMatchObject({
      priority: 'high',
      type: 'bug',
      tags: ['alpha', 'Beta'],
      commentCount: 3,
      imageCount: 0,
      // The person's comment, written through the live board, is the newest.
      lastCommentBy: 'human',
      lastCommentAuthor: fixture.person.email,
      projectName: 'Apollo',
    })
    expect(byTitle.get('Screenshot card')).toMatchObject({ commentCount: 0, imageCount: 1 })
    expect(board.comments.map((c: { body: string }) => c.body).sort()).toEqual(
      ['A note with no agentName', 'A person wrote this in the app', 'An agent note'].sort(),
    )
    expect(board.attachments.map((a: { filename: string }) => a.filename)).toEqual(['shot.png'])
  })

  test('archived cards stay readable by id with their thread, screenshot and claim history', async () => {
    const archived = await agent.ok('get_task', { taskId: card('Archived with history') })
    expect(archived.task).toMatchObject({
      title: 'Archived with history',
      archivedAt: expect.any(String),
      commentCount: 1,
      imageCount: 1,
      lastCommentBy: 'agent',
    })
    expect(archived.comments.map((c: { body: string }) => c.body)).toEqual(['Before archiving'])
    expect(archived.attachments.map((a: { filename: string }) => a.filename)).toEqual([
      'archived-shot.png',
    ])
    expect(archived.images).toHaveLength(1)
    const plain = await agent.ok('get_task', { taskId: card('Archived plain') })
    expect(plain.task.archivedAt).toEqual(expect.any(String))
  })

  test('every claim is in activity: the live one (now lapsed) and the released ones', async () => {
    const { activity } = await agent.ok('get_board')
    const claimed = new Map(activity.map((c: { taskId: string }) => [c.taskId, c]))
    expect(claimed.get(card('Claimed card'))).toMatchObject({
      agentName: 'Ada',
      house: 'Lovelace',
      generation: 2,
      note: 'working on it',
    })
    expect(claimed.get(card('Released card'))).toMatchObject({
      agentName: 'Bob',
      isLive: false,
      status: 'released',
      releasedAt: expect.any(String),
    })
    expect(claimed.get(card('Archived with history'))).toMatchObject({
      agentName: 'Cy',
      isLive: false,
      status: 'released',
      releasedAt: expect.any(String),
    })
  })

  test('the board document holds only what is on the board; each card document its thread', async () => {
    const board = await app.live.read(boardDocName(fixture.orgId), (doc) => ({
      tasks: boardMaps(doc).tasks.size,
      claims: [...boardMaps(doc).claims.keys()],
      comments: doc.getMap('comments').size,
      attachments: doc.getMap('attachments').size,
    }))
    expect(board.tasks).toBe(4)
    expect(board.comments).toBe(0)
    expect(board.attachments).toBe(0)
    expect(board.claims).not.toContain(card('Archived with history'))
    const thread = await app.live.read(
      cardDocName(fixture.orgId, card('Plain card')),
      (doc) => cardMaps(doc).comments.size,
    )
    expect(thread).toBe(3)
  })

  test('archived cards are listed and restored through the app, and the map still reads', async () => {
    const person = new Person(agent.url)
    const login = await person.request('POST', '/api/app/login', fixture.person)
    expect(login.status).toBe(200)
    const org = `/api/app/orgs/${fixture.orgId}`
    const list = await person.request('GET', `${org}/archived-tasks`)
    expect(list.body.tasks.map((t: { title: string }) => t.title).sort()).toEqual([
      'Archived plain',
      'Archived with history',
    ])
    const restored = await person.request('POST', `${org}/tasks/${card('Archived plain')}/restore`)
    expect(restored.status).toBe(200)
    expect(restored.body.task).toMatchObject({ title: 'Archived plain', archivedAt: null })
    const { map, nodes, edges } = await agent.ok('get_map', { mapId: fixture.mapId })
    expect(map.title).toBe('Fixture map')
    expect(nodes).toHaveLength(2)
    expect(edges).toHaveLength(1)
  })

  test('the move runs once: a restart leaves everything as it is', async () => {
    const before = await agent.ok('get_board')
    await app.close()
    await start()
    const rows = await storage.db.query('select 1 from schema_migrations where name = $1', [
      LAYOUT_V2,
    ])
    expect(rows).toHaveLength(1)
    const after = await agent.ok('get_board')
    expect(after.tasks).toEqual(before.tasks)
    // The claim is still the lock it was: its holder takes it again (live or lapsed), and
    // another identity on the same key is refused while it is live.
    const { claim } = await agent.ok('claim_task', {
      taskId: card('Claimed card'),
      agentName: 'Ada',
      house: 'Lovelace',
      generation: 2,
    })
    expect(claim).toMatchObject({ isLive: true, agentName: 'Ada', house: 'Lovelace' })
    const other = await agent.call('claim_task', { taskId: card('Claimed card'), agentName: 'Eve' })
    expect(other.status).toBe(409)
  })
})
