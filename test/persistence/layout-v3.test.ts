import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { type App, createApp } from '../../server/app.ts'
import { loadConfig } from '../../server/config.ts'
import { LAYOUT_V3 } from '../../server/upgrades/layout-v3.ts'
import { boardMaps } from '../../shared/board-doc.ts'
import { cardMaps } from '../../shared/card-doc.ts'
import { boardDocName, cardDocName } from '../../shared/doc-names.ts'
import { CLOSE } from '../../shared/live-protocol.ts'
import { carry, type DocJson, editsToCarry, generationOf } from '../../shared/rebase.ts'
import { Agent, connectProvider, eventually, eventuallyAsync, Person } from '../support/client.ts'
import {
  type DatabaseFixture,
  fixtureDoc,
  loadFixture,
  readFixture,
} from '../support/database-fixture.ts'
import { freshDb, STORAGES, type TestDb } from '../support/storage.ts'

/**
 * test/fixtures/v2-database.json was written by version 2 of the service (commit 3458479:
 * a card's description on its board card, as a Y.Text) through its own actions: an
 * organisation with a project, cards with descriptions (a long Markdown plan, one a person
 * edited live in the board document, one claimed, one archived, one with a thread a person
 * answered), and a mind map. The test loads it into a database migrated only as far as
 * version 2 went, then starts today's service on it.
 */
const fixture = readFixture<DatabaseFixture & { descriptions: Record<string, string> }>(
  'v2-database.json',
)

/** The board as version 2 left it, from the fixture's own rows: what a browser kept. */
function versionTwoBoard(): Y.Doc {
  return fixtureDoc(fixture, boardDocName(fixture.orgId))
}

describe.each(STORAGES)('a database written by version 2 opens under version 3 (%s)', (kind) => {
  let storage: TestDb
  let app: App
  let url: string
  let agent: Agent
  const card = (title: string) => fixture.cards[title] as string

  const start = async () => {
    const config = { ...loadConfig({}), port: 0, host: '127.0.0.1', logLevel: 'error' as const }
    app = await createApp(config, { db: storage.db })
    url = await app.listen()
    agent = new Agent(url, fixture.apiKey)
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

  test('every card keeps its description, on the board or archived, as agents read it', async () => {
    for (const [title, description] of Object.entries(fixture.descriptions)) {
      const { task } = await agent.ok('get_task', { taskId: card(title) })
      expect({ title, description: task.description }).toEqual({ title, description })
    }
    const { tasks } = await agent.ok('get_board', {})
    for (const t of tasks as { title: string; description: string }[]) {
      expect(t.description).toBe(fixture.descriptions[t.title])
    }
  })

  test("each description is in its card's document now, and none is left on the board", async () => {
    for (const [title, description] of Object.entries(fixture.descriptions)) {
      const text = await app.live.read(cardDocName(fixture.orgId, card(title)), (doc) =>
        cardMaps(doc).description.toString(),
      )
      expect({ title, text }).toEqual({ title, text: description })
    }
    const board = await app.live.read(boardDocName(fixture.orgId), (doc) => ({
      generation: generationOf(doc),
      withDescription: [...boardMaps(doc).tasks.values()].filter((m) => m.has('description'))
        .length,
    }))
    expect(board).toEqual({ generation: 1, withDescription: 0 })
    const done = await storage.db.query('select 1 from schema_migrations where name = $1', [
      LAYOUT_V3,
    ])
    expect(done).toHaveLength(1)
  })

  test('search finds a card by the words of its description', async () => {
    const { tasks } = await agent.ok('search_tasks', { query: 'person added' })
    expect((tasks as { id: string }[]).map((t) => t.id)).toEqual([card('Edited live')])
  })

  test("a restored card's description comes back with it", async () => {
    const person = new Person(url)
    expect((await person.request('POST', '/api/app/login', fixture.person)).status).toBe(200)
    const res = await person.request(
      'POST',
      `/api/app/orgs/${fixture.orgId}/tasks/${card('Archived with description')}/restore`,
    )
    expect(res.status).toBe(200)
    const { task } = await agent.ok('get_task', { taskId: card('Archived with description') })
    expect(task.description).toBe(fixture.descriptions['Archived with description'])
  })

  test('starting again moves nothing twice', async () => {
    const rows = async () =>
      (await storage.db.query<{ n: number }>('select count(*)::int as n from doc_updates'))[0]?.n
    const before = await rows()
    await app.close()
    await start()
    expect(await rows()).toBe(before)
    const { task } = await agent.ok('get_task', { taskId: card('Planned card') })
    expect(task.description).toBe(fixture.descriptions['Planned card'])
  })

  test('a replica that kept the version-2 board is refused as holding an ended generation, and its offline description edit lands in the card document', async () => {
    const person = new Person(url)
    expect((await person.request('POST', '/api/app/login', fixture.person)).status).toBe(200)
    const token = await person.syncToken(fixture.orgId)
    const kept = versionTwoBoard()
    const text = boardMaps(kept).tasks.get(card('Commented card'))?.get('description') as Y.Text
    text.insert(text.length, ' Typed offline in version 2.')
    const socket = new HocuspocusProviderWebsocket({ url: `${url.replace(/^http/, 'ws')}/sync` })
    const closed: string[] = []
    const provider = new HocuspocusProvider({
      websocketProvider: socket,
      name: boardDocName(fixture.orgId),
      document: kept,
      token,
      onClose: ({ event }) => {
        closed.push(event.reason)
      },
    })
    provider.attach()
    try {
      await eventually(() => (closed.includes(CLOSE.rebased.reason) ? true : undefined), 10_000)
    } finally {
      provider.destroy()
      socket.destroy()
    }
    // Carried across as the app does: the ended generation's base, by key.
    const ended = await person.request<{ base: DocJson; stateVector: string }>(
      'GET',
      `/api/app/orgs/${fixture.orgId}/documents/generations/0?document=${boardDocName(fixture.orgId)}`,
    )
    expect(ended.status).toBe(200)
    const edits = editsToCarry(
      boardDocName(fixture.orgId),
      ended.body.base,
      Y.decodeStateVector(Buffer.from(ended.body.stateVector, 'base64')),
      kept,
    )
    const target = cardDocName(fixture.orgId, card('Commented card'))
    expect(edits.map((e) => ({ kind: e.kind, doc: e.doc }))).toEqual([
      { kind: 'text', doc: target },
    ])
    const thread = await connectProvider(url, target, token)
    try {
      carry(thread.doc, edits)
      await eventually(() => (thread.provider.hasUnsyncedChanges ? undefined : true), 10_000)
    } finally {
      thread.destroy()
    }
    const got = await eventuallyAsync(async () => {
      const { task } = await agent.ok('get_task', { taskId: card('Commented card') })
      return task.description.endsWith('offline in version 2.') ? task.description : undefined
    }, 10_000)
    expect(got).toBe(`${fixture.descriptions['Commented card']} Typed offline in version 2.`)
  })
})
