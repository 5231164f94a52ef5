import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { type App, createApp } from '../../server/app.ts'
import { loadConfig } from '../../server/config.ts'
import { boardMaps } from '../../shared/board-doc.ts'
import { boardDocName, cardDocName } from '../../shared/doc-names.ts'
import { generationOf } from '../../shared/rebase.ts'
import { Agent, Person } from '../support/client.ts'
import {
  type DatabaseFixture,
  fixtureDoc,
  loadFixture,
  readFixture,
} from '../support/database-fixture.ts'
import { freshDb, STORAGES, type TestDb } from '../support/storage.ts'
import {
  card,
  contextAs,
  launchBrowser,
  openBoard,
  serverAndBrowser,
  signedInContext,
  watchErrors,
} from './support.ts'

/**
 * Re-basing as people meet it (docs/design.md, "Re-basing a document"): the app holding a
 * generation the server ended is refused, works out its unsent edits by key, opens the new
 * generation and makes them again, with nothing for the person to do.
 */
describe.each(STORAGES)('the app across a re-base (%s)', (kind) => {
  const running = serverAndBrowser(kind)

  test('a board re-based while the app is offline: back online, the app moves to the new generation by itself and keeps the title typed offline', async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    const errors = watchErrors(page)
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: 'Before' })
    await openBoard(page, orgId)
    await card(page, 'Before').click()
    const panel = page.getByTestId('card-panel')
    await panel.getByLabel('Title', { exact: true }).waitFor()

    await context.setOffline(true)
    await page.locator('[data-sync-state="offline"]').waitFor()
    await panel.getByLabel('Title', { exact: true }).fill('Typed offline')
    await panel.getByLabel('Title', { exact: true }).press('Enter')
    // Meanwhile an agent writes, and the board starts over as a new generation.
    await agent.ok('create_task', { columnId: columns[0].id, title: 'Written meanwhile' })
    const board = boardDocName(orgId)
    const { generation } = await running.server.app.live.rebase(board)

    await context.setOffline(false)
    await new Promise((r) => setTimeout(r, 3000))
    console.log(
      'PAGESTATE',
      await page.locator('[data-sync-state]').first().getAttribute('data-sync-state'),
    )
    await expect
      .poll(async () => (await agent.ok('get_task', { taskId: task.id })).task.title, {
        timeout: 20_000,
        interval: 500,
      })
      .toBe('Typed offline')
    await card(page, 'Written meanwhile').waitFor()
    await page.locator('[data-sync-state="synced"]').waitFor()
    // The page holds the new generation, and goes on editing it live.
    await page.keyboard.press('Escape')
    await agent.ok('update_task', { taskId: task.id, title: 'Renamed by the agent' })
    await card(page, 'Renamed by the agent').waitFor()
    expect(await running.server.app.live.read(board, (doc) => generationOf(doc))).toBe(generation)
    expect(errors).toEqual([])
    await context.close()
  })

  test("a card's document re-based while its panel is open: the description typed offline lands on the new generation", async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    const errors = watchErrors(page)
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', {
      columnId: columns[0].id,
      title: 'Described',
      description: 'First line.',
    })
    await openBoard(page, orgId)
    await card(page, 'Described').click()
    // A description is read as Markdown first; the editor is a click away.
    await page.getByRole('button', { name: 'Edit description' }).click()
    const description = page.getByTestId('card-panel').getByLabel('Description')
    await expect.poll(() => description.textContent()).toBe('First line.')

    await context.setOffline(true)
    await page.locator('[data-sync-state="offline"]').waitFor()
    await description.press('End')
    await description.pressSequentially(' Typed offline.')
    await agent.ok('add_comment', { taskId: task.id, body: 'An agent was here' })
    await running.server.app.live.rebase(cardDocName(orgId, task.id))
    await context.setOffline(false)

    await expect
      .poll(async () => (await agent.ok('get_task', { taskId: task.id })).task.description, {
        timeout: 20_000,
        interval: 500,
      })
      .toBe('First line. Typed offline.')
    // The open panel reads the new generation: the agent's next words appear in it.
    await agent.ok('update_task', { taskId: task.id, description: 'Rewritten by the agent.' })
    await expect.poll(() => description.textContent()).toBe('Rewritten by the agent.')
    expect(errors).toEqual([])
    await context.close()
  })
})

/**
 * A browser that kept the board of a version-2 database (test/fixtures/v2-database.json),
 * with a description edited offline in it, opens the app after the server moved to
 * version 3.
 */
const fixture = readFixture<DatabaseFixture & { descriptions: Record<string, string> }>(
  'v2-database.json',
)

describe.each(STORAGES)('a browser that kept a version-2 copy (%s)', (kind) => {
  let storage: TestDb
  let app: App
  let url: string
  let browser: Browser

  beforeAll(async () => {
    storage = await freshDb(kind, { migrate: false })
    await loadFixture(storage, fixture)
    const config = { ...loadConfig({}), port: 0, host: '127.0.0.1', logLevel: 'error' as const }
    app = await createApp(config, { db: storage.db })
    ;[url, browser] = await Promise.all([app.listen(), launchBrowser()])
  })
  afterAll(async () => {
    await browser?.close()
    await app?.close()
    await storage?.drop()
  })

  test('its offline description edit is sent, and lands in the card document; every card shows', async () => {
    const person = new Person(url)
    expect((await person.request('POST', '/api/app/login', fixture.person)).status).toBe(200)
    const context = await contextAs(browser, url, person)
    const page = await context.newPage()
    const errors = watchErrors(page)
    const userId = person.user?.id ?? (await person.request('GET', '/api/app/me')).body.user.id
    const dbName = `corkboard/${userId}/${boardDocName(fixture.orgId)}`

    // The copy version 2 kept: the board as the fixture's rows hold it, plus an edit made
    // offline in a card's description (on the board card, as version 2 had it).
    const kept = fixtureDoc(fixture, boardDocName(fixture.orgId))
    const taskId = fixture.cards['Commented card'] as string
    const text = boardMaps(kept).tasks.get(taskId)?.get('description') as Y.Text
    text.insert(text.length, ' Typed offline in version 2.')
    await page.goto('/readyz')
    await page.evaluate(
      async ({ name, update }) => {
        const done = <T>(r: IDBRequest<T>) =>
          new Promise<T>((resolve, reject) => {
            r.onsuccess = () => resolve(r.result)
            r.onerror = () => reject(r.error)
          })
        const request = indexedDB.open(name)
        request.onupgradeneeded = () => {
          request.result.createObjectStore('updates', { autoIncrement: true })
          request.result.createObjectStore('custom')
        }
        const db = await done(request)
        const tx = db.transaction('updates', 'readwrite')
        tx.objectStore('updates').add(new Uint8Array(update))
        await new Promise((resolve) => {
          tx.oncomplete = resolve
        })
        db.close()
        localStorage.setItem(`corkboard.copy:${name}`, '1')
      },
      { name: dbName, update: [...Y.encodeStateAsUpdate(kept)] },
    )

    await openBoard(page, fixture.orgId)
    const agent = new Agent(url, fixture.apiKey)
    await expect
      .poll(async () => (await agent.ok('get_task', { taskId })).task.description, {
        timeout: 20_000,
        interval: 500,
      })
      .toBe(`${fixture.descriptions['Commented card']} Typed offline in version 2.`)
    for (const title of ['Plain card', 'Planned card', 'Edited live', 'Commented card'])
      await card(page, title).waitFor()
    // The board document holds no description: the copy's were not sent back.
    const withDescription = await app.live.read(
      boardDocName(fixture.orgId),
      (doc) => [...boardMaps(doc).tasks.values()].filter((m) => m.has('description')).length,
    )
    expect(withDescription).toBe(0)
    expect(errors).toEqual([])
    await context.close()
  })
})
