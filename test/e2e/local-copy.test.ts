import type { BrowserContext, Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import * as Y from 'yjs'
import { boardMaps, taskMap } from '../../shared/board-doc.ts'
import { POSITION_STEP } from '../../shared/constants.ts'
import { EMPTY_STATS } from '../../shared/records.ts'
import { Agent } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'
import { card, openBoard, serverAndBrowser, signedInContext, watchErrors } from './support.ts'

/** The cards the board's columns say they show (their lists are virtualised). */
async function shownCount(page: Page): Promise<number> {
  const counts = await page.locator('.column-count').allTextContents()
  return counts.reduce((sum, text) => sum + Number(text), 0)
}

/**
 * The board's copy as the worker left it: how many updates it holds, and whether one of
 * them holds these words (Yjs keeps strings as UTF-8).
 */
async function boardCopy(page: Page, words = ''): Promise<{ rows: number; holds: boolean }> {
  return page.evaluate(async (text) => {
    const done = <T>(r: IDBRequest<T>) =>
      new Promise<T>((resolve, reject) => {
        r.onsuccess = () => resolve(r.result)
        r.onerror = () => reject(r.error)
      })
    const names = (await indexedDB.databases()).map((d) => d.name ?? '')
    const name = names.find((n) => n.startsWith('corkboard/') && n.endsWith('/board'))
    if (!name) return { rows: 0, holds: false }
    const db = await done(indexedDB.open(name))
    try {
      if (!db.objectStoreNames.contains('updates')) return { rows: 0, holds: false }
      const rows = (await done(
        db.transaction('updates').objectStore('updates').getAll(),
      )) as Uint8Array[]
      const decoder = new TextDecoder('utf-8', { fatal: false })
      return { rows: rows.length, holds: rows.some((row) => decoder.decode(row).includes(text)) }
    } finally {
      db.close()
    }
  }, words)
}

/**
 * The copy of each live document kept on the device (client/src/live/local-copy.ts): read
 * and written by a worker, in the layout y-indexeddb wrote before it, so that a copy left by
 * the previous version opens with the edits it holds.
 */
describe.each(STORAGES)('the copy kept on this device (%s)', (kind) => {
  const running = serverAndBrowser(kind)

  /** A signed-in page watched for errors, and an agent of its organisation. */
  async function signedIn() {
    const signed = await signedInContext(running.browser, running.server.url)
    return { ...signed, errors: watchErrors(signed.page) }
  }

  /** An agent's card in the board's first column. */
  async function addCard(agent: Agent, fields: { title: string; description?: string }) {
    const { columns } = await agent.ok('list_columns')
    await agent.ok('create_task', { columnId: columns[0].id, ...fields })
  }

  test('documents are kept on the device by a worker: the page itself opens no IndexedDB database for them, and the board reopens offline from the copy', async () => {
    const { context, page, agent, orgId, errors } = await signedIn()
    // Counts the databases the page's own thread opens (workers have a global of their own).
    await context.addInitScript(() => {
      const opened: string[] = []
      Object.assign(window, { openedOnPage: opened })
      const open = indexedDB.open.bind(indexedDB)
      indexedDB.open = (name: string, version?: number) => {
        opened.push(name)
        return open(name, version)
      }
    })
    await openBoard(page, orgId)
    // Written by an agent: it reaches the copy as the server sent it.
    await addCard(agent, { title: 'Sent by the server' })
    await card(page, 'Sent by the server').waitFor()
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => true))
    // The worker writes in its own time: wait until the copy holds the agent's card.
    await expect.poll(() => boardCopy(page, 'Sent by the server').then((c) => c.holds)).toBe(true)
    await context.setOffline(true)
    await page.locator('[data-sync-state="offline"]').waitFor()
    await page.reload()
    await card(page, 'Sent by the server').waitFor()
    const opened = await page.evaluate(
      () => (window as unknown as { openedOnPage: string[] }).openedOnPage,
    )
    expect(opened.filter((name) => name.startsWith('corkboard/'))).toEqual([])
    expect(errors).toEqual([])
    await context.close()
  })

  test('a copy that has kept 500 updates is replayed into one by the worker, and opens offline with everything', async () => {
    const { context, page, person, agent, orgId, errors } = await signedIn()
    await openBoard(page, orgId)
    const { columns } = await agent.ok('list_columns')
    // Three keys, so that 540 writes stay inside each key's rate budget.
    const agents = [agent, ...(await Promise.all([1, 2].map(() => person.createKey('more'))))].map(
      (key, i) => (i === 0 ? agent : new Agent(running.server.url, key as string)),
    )
    const titles = Array.from({ length: 540 }, (_, i) => `Card number ${i}`)
    for (let i = 0; i < titles.length; i += 30) {
      await Promise.all(
        titles.slice(i, i + 30).map((title, j) =>
          (agents[(i + j) % agents.length] as Agent).ok('create_task', {
            columnId: columns[(i + j) % columns.length].id,
            title,
          }),
        ),
      )
    }
    await expect.poll(() => shownCount(page), { timeout: 20_000 }).toBe(540)
    await expect
      .poll(() => boardCopy(page, 'Card number 539').then((c) => c.holds), { timeout: 15_000 })
      .toBe(true)
    // Each write came as an update of its own (540 rows unreplayed); once the worker has
    // replayed them (it runs beside the page, at its own pace, and takes the page's updates
    // in bursts, so where the 500th falls varies with the machine's load: a busy run saw
    // 181 rows), the copy holds far fewer rows than that.
    await expect
      .poll(() => boardCopy(page).then((c) => c.rows), { timeout: 15_000 })
      .toBeLessThan(300)

    await context.setOffline(true)
    await page.locator('[data-sync-state="offline"]').waitFor()
    await page.reload()
    await expect.poll(() => shownCount(page)).toBe(540)
    expect(errors).toEqual([])
    await context.close()
  })

  test('a first visit asks the server at once: the board syncs while the worker that reads the copy has not even loaded', async () => {
    const { context, page, agent, orgId, errors } = await signedIn()
    await addCard(agent, { title: 'On the server only' })
    // The worker's script is held back: nothing can read (or find empty) a copy meanwhile.
    const release = await holdBack(context, /local-copy\.worker-[^/]*\.js$/)
    await page.goto(`/o/${orgId}/board`)
    await card(page, 'On the server only').waitFor()
    await page.locator('[data-sync-state="synced"]').waitFor()
    release()
    // Once the worker runs, it keeps what the server sent; the next visit waits for it.
    await expect.poll(() => boardCopy(page, 'On the server only').then((c) => c.holds)).toBe(true)
    expect(
      await page.evaluate(() => Object.keys(localStorage).some((k) => k.endsWith('/board'))),
    ).toBe(true)
    expect(errors).toEqual([])
    await context.close()
  })

  test("a board page asks who is signed in and for the sync token once each, before the app's code has even arrived", async () => {
    const { context, page, orgId, errors } = await signedIn()
    const refused: string[] = []
    page.on('console', (m) => {
      if (m.type() === 'error') refused.push(m.text())
    })
    const asked: string[] = []
    page.on('request', (r) => {
      const path = new URL(r.url()).pathname
      if (path === '/api/app/me' || path.endsWith('/sync-token')) asked.push(path)
    })
    // The app's code is held back: whatever asks meanwhile is the page's own first script.
    const release = await holdBack(context, /\/assets\/index-[^/]*\.js$/)
    await page.goto(`/o/${orgId}/board`, { waitUntil: 'commit' })
    await expect.poll(() => asked.length).toBe(2)
    expect(await page.locator('[data-column-id]').count()).toBe(0)
    release()
    await page.locator('[data-sync-state="synced"]').waitFor()
    await page.locator('[data-column-id]').first().waitFor()
    // The app took those answers rather than asking again.
    expect(asked.sort()).toEqual(['/api/app/me', `/api/app/orgs/${orgId}/sync-token`])
    // The policy let the inline script run (a refusal is a console error).
    expect(refused).toEqual([])
    expect(errors).toEqual([])
    await context.close()
  })

  test('the service worker installs only once the board is shown in sync, not while it loads', async () => {
    const { context, page, agent, orgId, errors } = await signedIn()
    await addCard(agent, { title: 'Shown before the worker' })
    // Who is signed in answers late, so the live socket is open well before any document
    // is: a socket with nothing on it yet must not count as the board in sync.
    await context.route('**/api/app/me', async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      await route.continue()
    })
    await context.addInitScript(() => {
      const seen: { registered?: number; synced?: number } = {}
      Object.assign(window, { swTimes: seen })
      const register = navigator.serviceWorker.register.bind(navigator.serviceWorker)
      navigator.serviceWorker.register = (url, options) => {
        seen.registered ??= performance.now()
        return register(url, options)
      }
      new MutationObserver(() => {
        if (document.querySelector('[data-sync-state="synced"]')) seen.synced ??= performance.now()
      }).observe(document, { subtree: true, childList: true, attributes: true })
    })
    await page.goto(`/o/${orgId}/board`)
    await card(page, 'Shown before the worker').waitFor()
    // It still installs, and keeps the app for offline use.
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => true))
    const times = await page.evaluate(
      () => (window as unknown as { swTimes: { registered?: number; synced?: number } }).swTimes,
    )
    expect(times.synced).toBeDefined()
    expect(times.registered).toBeGreaterThan(times.synced as number)
    expect(errors).toEqual([])
    await context.close()
  })

  test('a return visit waits for the copy: the server is asked only for what the copy lacks', async () => {
    const { context, page, agent, orgId, errors } = await signedIn()
    const long = 'words the copy already holds '.repeat(150)
    await addCard(agent, { title: 'Big', description: long })
    await openBoard(page, orgId)
    await expect.poll(() => boardCopy(page, 'Big').then((c) => c.holds)).toBe(true)
    // What the server sends on the next visit, measured on the socket.
    const received: number[] = []
    page.on('websocket', (ws) =>
      ws.on('framereceived', ({ payload }) => {
        received.push(typeof payload === 'string' ? payload.length : payload.byteLength)
      }),
    )
    await page.reload()
    await card(page, 'Big').waitFor()
    await page.locator('[data-sync-state="synced"]').waitFor()
    expect(Math.max(...received)).toBeLessThan(long.length)
    expect(errors).toEqual([])
    await context.close()
  })

  test('a copy in the layout the previous version wrote opens offline with the edit it holds, and the edit reaches the server once online', async () => {
    const { context, page, agent, orgId, errors } = await signedIn()
    await previousVersionCopy(page, agent, orgId)
    await context.setOffline(true)
    await page.goto(`/o/${orgId}/board`)
    await card(page, 'Kept by the previous version').waitFor()

    await context.setOffline(false)
    await previousEditReachesServer(page, agent)
    expect(errors).toEqual([])
    await context.close()
  })

  test('a copy the previous version left, opened online, gives the server its edit although the page did not know of the copy', async () => {
    const { context, page, agent, orgId, errors } = await signedIn()
    await previousVersionCopy(page, agent, orgId)
    await page.goto(`/o/${orgId}/board`)
    await card(page, 'Kept by the previous version').waitFor()
    await previousEditReachesServer(page, agent)
    expect(errors).toEqual([])
    await context.close()
  })
})

/** Holds back the answers to requests matching `url` until the returned function is called. */
async function holdBack(context: BrowserContext, url: RegExp): Promise<() => void> {
  let release = () => {}
  const held = new Promise<void>((resolve) => {
    release = resolve
  })
  await context.route(url, async (route) => {
    await held
    await route.continue()
  })
  return release
}

/** Once the page is in sync, the server holds the edit the previous version's copy kept. */
async function previousEditReachesServer(page: Page, agent: Agent): Promise<void> {
  await page.locator('[data-sync-state="synced"]').waitFor({ timeout: 20_000 })
  await expect
    .poll(async () => (await agent.ok('get_board')).tasks.map((t: { title: string }) => t.title))
    .toEqual(['Kept by the previous version'])
}

/**
 * Leaves the board's copy as the previous version did: in y-indexeddb's layout, holding an
 * edit it never sent (a card), and nothing in localStorage saying the device keeps it.
 * Ends away from the app, at /readyz, so that nothing holds the copy open.
 */
async function previousVersionCopy(page: Page, agent: Agent, orgId: string): Promise<void> {
  await openBoard(page, orgId)
  const { columns } = await agent.ok('list_columns')
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => true))
  const boardDb = await page.evaluate(async () => {
    const names = (await indexedDB.databases()).map((d) => d.name ?? '')
    return names.find((n) => n.startsWith('corkboard/') && n.endsWith('/board')) ?? ''
  })
  expect(boardDb).not.toBe('')

  // An edit made offline by the previous version: a card in its copy, never sent.
  const edit = new Y.Doc()
  const now = new Date().toISOString()
  boardMaps(edit).tasks.set(
    crypto.randomUUID(),
    taskMap({
      columnId: columns[0].id,
      projectId: null,
      title: 'Kept by the previous version',
      type: null,
      priority: null,
      tags: [],
      assigneeIds: [],
      blockedBy: [],
      position: POSITION_STEP * 50,
      createdAt: now,
      updatedAt: now,
      archivedAt: null,
      createdByEmail: '',
      stats: EMPTY_STATS,
    }),
  )
  const bytes = [...Y.encodeStateAsUpdate(edit)]

  // Away from the app (nothing holds the copy open), the copy is rewritten exactly as
  // y-indexeddb made it (stores `updates`, auto-increment, and `custom`), holding what it
  // held plus the edit.
  await page.goto('/readyz')
  await page.evaluate(
    async ({ name, update }) => {
      const done = <T>(r: IDBRequest<T>) =>
        new Promise<T>((resolve, reject) => {
          r.onsuccess = () => resolve(r.result)
          r.onerror = () => reject(r.error)
        })
      const old = await done(indexedDB.open(name))
      const kept = (await done(
        old.transaction('updates').objectStore('updates').getAll(),
      )) as Uint8Array[]
      old.close()
      await done(indexedDB.deleteDatabase(name))
      const request = indexedDB.open(name)
      request.onupgradeneeded = () => {
        request.result.createObjectStore('updates', { autoIncrement: true })
        request.result.createObjectStore('custom')
      }
      const db = await done(request)
      const tx = db.transaction('updates', 'readwrite')
      for (const u of [...kept, new Uint8Array(update)]) tx.objectStore('updates').add(u)
      await new Promise((resolve) => {
        tx.oncomplete = resolve
      })
      db.close()
    },
    { name: boardDb, update: bytes },
  )
  await page.evaluate(() => {
    for (const key of Object.keys(localStorage)) {
      if (key.startsWith('corkboard.copy:')) localStorage.removeItem(key)
    }
  })
}
