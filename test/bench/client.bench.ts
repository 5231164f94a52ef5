import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import type { Browser, Page } from 'playwright-core'
import * as Y from 'yjs'
import { ensureBuilt } from '../../client/ensure-built.ts'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { POSITION_STEP, PRIORITIES, TASK_TYPES } from '../../shared/constants.ts'
import { launchBrowser, VIEWPORT } from '../e2e/support.ts'
import { Agent, Person } from '../support/client.ts'
import { STORAGES, type StorageKind } from '../support/storage.ts'
import { spawnServer } from './harness.ts'
import { line, type Stats, stats } from './stats.ts'

/**
 * The web app in headless Chromium against the real server (its own process): how long a
 * board takes to show after the page loads (a first visit over the network, and a return
 * visit that opens the copy kept in IndexedDB), the longest task that blocked the main
 * thread meanwhile (what a person feels as a frozen page), the JavaScript heap once it is
 * shown, and the frame time while a card is dragged, for boards of 2,000 and 10,000 cards
 * against a baseline measured in the same run (an empty board for loading and the heap, a
 * ten-card board for dragging). And a mind map of 500 thoughts: its first render and the
 * frame time while the canvas is panned, against an empty map and a ten-thought map.
 */

const LOADS = 7
const DRAGS = 4
const SIZES = [2_000, 10_000]
const MAP_SIZES = [0, 10, 500]

/**
 * Fills the board document through a live connection, each card as the app creates one
 * (client/src/board/board-actions.ts, version 3: no description on the board).
 */
async function seedBoard(url: string, owner: Person, key: string, count: number): Promise<void> {
  if (count === 0) return
  const socket = new HocuspocusProviderWebsocket({ url: `${url.replace(/^http/, 'ws')}/sync` })
  const doc = new Y.Doc()
  const provider = new HocuspocusProvider({
    websocketProvider: socket,
    name: boardDocName(owner.orgId),
    document: doc,
    token: key,
  })
  provider.attach()
  await new Promise<void>((resolve) => provider.on('synced', () => resolve()))
  const maps = boardMaps(doc)
  const columns = [...maps.columns.keys()]
  const stamp = new Date().toISOString()
  // In transactions of 1,000 cards: one of 10,000 would be a sync message over the server's
  // limit (SYNC_MAX_MESSAGE_BYTES), refused, and sent again for ever.
  for (let from = 0; from < count; from += 1_000) {
    doc.transact(() => {
      for (let i = from; i < Math.min(count, from + 1_000); i++) {
        const m = new Y.Map<unknown>()
        m.set('columnId', columns[i % columns.length])
        m.set('projectId', null)
        m.set(
          'title',
          `Card ${i}: ${i % 3 === 0 ? 'fix the flaky checkout test on retries' : 'tidy up'}`,
        )
        m.set('type', TASK_TYPES[i % TASK_TYPES.length])
        m.set('priority', i % 5 === 0 ? null : PRIORITIES[i % PRIORITIES.length])
        m.set('tags', i % 2 === 0 ? ['bench', `t${i % 7}`] : [])
        m.set('assigneeIds', [])
        m.set('position', Math.floor(i / columns.length + 1) * POSITION_STEP)
        m.set('createdAt', stamp)
        m.set('updatedAt', stamp)
        m.set('archivedAt', null)
        m.set('createdByEmail', owner.user?.email ?? '')
        maps.tasks.set(crypto.randomUUID(), m)
      }
    })
    while (provider.hasUnsyncedChanges) await new Promise((r) => setTimeout(r, 10))
  }
  while (provider.hasUnsyncedChanges) await new Promise((r) => setTimeout(r, 10))
  provider.destroy()
  socket.destroy()
}

async function pageFor(browser: Browser, url: string, owner: Person): Promise<Page> {
  const context = await browser.newContext({ baseURL: url, viewport: VIEWPORT })
  const [name, value] = owner.cookie.split('=') as [string, string]
  await context.addCookies([{ name, value, url }])
  return context.newPage()
}

/**
 * Milliseconds from navigation start to the first frame in which the board is in sync and
 * every column shows its cards (or, for an empty board, its columns).
 */
async function loadTime(page: Page, orgId: string, cards: number): Promise<number> {
  await page.goto(`/o/${orgId}/board`, { waitUntil: 'commit' })
  const handle = await page.waitForFunction(
    (expectCards) => {
      if (!document.querySelector('[data-sync-state="synced"]')) return false
      const columns = document.querySelectorAll('[data-column-id]')
      if (columns.length === 0) return false
      if (expectCards) {
        for (const c of columns) if (!c.querySelector('[data-card-id]')) return false
      }
      return performance.now()
    },
    cards > 0,
    { polling: 'raf', timeout: 60_000 },
  )
  return (await handle.jsonValue()) as number
}

/** The longest main-thread task (ms) since navigation, from Chromium's long-task entries. */
async function longestTask(page: Page): Promise<number> {
  return page.evaluate(
    () =>
      new Promise<number>((resolve) => {
        let longest = 0
        const observer = new PerformanceObserver((list) => {
          for (const e of list.getEntries()) longest = Math.max(longest, e.duration)
        })
        observer.observe({ type: 'longtask', buffered: true })
        setTimeout(() => {
          observer.disconnect()
          resolve(longest)
        }, 100)
      }),
  )
}

/** Frame intervals (ms) while a column's first card is dragged two columns over. */
async function dragFrames(page: Page, from: number, to: number): Promise<number[]> {
  const source = page.locator('[data-column-id]').nth(from).locator('[data-card-id]').first()
  const target = page.locator('[data-column-id]').nth(to).locator('.card-list')
  const a = await source.boundingBox()
  const b = await target.boundingBox()
  if (!a || !b) throw new Error('board not rendered')
  const stop = await recordFrames(page)
  const start = { x: a.x + a.width / 2, y: a.y + a.height / 2 }
  const end = { x: b.x + b.width / 2, y: b.y + b.height / 3 }
  await page.mouse.move(start.x, start.y)
  await page.mouse.down()
  for (let i = 1; i <= 60; i++) {
    const k = i / 60
    // Down the column and back while crossing, so the drop index changes on the way.
    const wave = Math.sin(k * Math.PI * 2) * 200
    await page.mouse.move(start.x + (end.x - start.x) * k, start.y + (end.y - start.y) * k + wave)
  }
  await page.mouse.up()
  return stop()
}

/** The page's JavaScript heap in use (MB) after a full garbage collection (Chromium's own count). */
async function heapMb(page: Page): Promise<number> {
  const cdp = await page.context().newCDPSession(page)
  try {
    await cdp.send('HeapProfiler.collectGarbage')
    const { usedSize } = await cdp.send('Runtime.getHeapUsage')
    return usedSize / 1_000_000
  } finally {
    await cdp.detach()
  }
}

/** Starts recording frame intervals (requestAnimationFrame) in the page. */
async function recordFrames(page: Page): Promise<() => Promise<number[]>> {
  await page.evaluate(() => {
    const w = window as unknown as { __frames: number[]; __stop: boolean }
    w.__frames = []
    w.__stop = false
    let last = performance.now()
    const tick = (t: number) => {
      w.__frames.push(t - last)
      last = t
      if (!w.__stop) requestAnimationFrame(tick)
    }
    requestAnimationFrame(tick)
  })
  return () =>
    page.evaluate(() => {
      const w = window as unknown as { __frames: number[]; __stop: boolean }
      w.__stop = true
      return w.__frames.slice(1)
    })
}

/** A mind map of `count` thoughts, a tree of them laid out in rows, made by an agent. */
async function seedMap(agent: Agent, count: number): Promise<string> {
  const { map } = await agent.ok('create_map', { title: `${count} thoughts` })
  const ids: string[] = []
  for (let start = 0; start < count; start += 100) {
    const nodes = Array.from({ length: Math.min(100, count - start) }, (_, k) => {
      const i = start + k
      return { text: `Thought ${i}`, x: (i % 25) * 220, y: Math.floor(i / 25) * 90 }
    })
    const created = await agent.ok('create_nodes', { mapId: map.id, nodes })
    ids.push(...created.nodes.map((n: { id: string }) => n.id))
  }
  for (let start = 1; start < ids.length; start += 100) {
    const edges = ids.slice(start, start + 100).map((id, k) => ({
      sourceId: ids[Math.floor((start + k - 1) / 2)] as string,
      targetId: id,
    }))
    await agent.ok('create_edges', { mapId: map.id, edges })
  }
  return map.id
}

/** Milliseconds from navigation to the first frame with the map in sync and its thoughts drawn. */
async function mapLoadTime(page: Page, orgId: string, mapId: string, count: number) {
  await page.goto(`/o/${orgId}/maps/${mapId}`, { waitUntil: 'commit' })
  const handle = await page.waitForFunction(
    (expect) => {
      if (!document.querySelector('[data-sync-state="synced"]')) return false
      if (!document.querySelector('[data-testid="map-canvas"]')) return false
      const drawn = document.querySelectorAll('.react-flow__node').length
      return drawn >= expect ? performance.now() : false
    },
    count,
    { polling: 'raf', timeout: 60_000 },
  )
  return (await handle.jsonValue()) as number
}

/** Frame intervals while the empty canvas is dragged around (panned) with the mouse. */
async function panFrames(page: Page): Promise<number[]> {
  const pane = await page.locator('.react-flow__pane').boundingBox()
  if (!pane) throw new Error('no canvas')
  const stop = await recordFrames(page)
  const start = { x: pane.x + 30, y: pane.y + pane.height - 30 }
  await page.mouse.move(start.x, start.y)
  await page.mouse.down()
  for (let i = 1; i <= 60; i++) {
    const k = i / 60
    await page.mouse.move(start.x + Math.sin(k * Math.PI) * 300, start.y - k * 200)
  }
  await page.mouse.up()
  return stop()
}

async function measureMap(browser: Browser, kind: StorageKind, count: number) {
  const server = await spawnServer(kind, { RATE_LIMIT_PER_KEY: '1000000' })
  try {
    const owner = new Person(server.url)
    await owner.signUp()
    const mapId = await seedMap(new Agent(server.url, await owner.createKey()), count)
    const loads: number[] = []
    let frames: number[] = []
    for (let i = 0; i < LOADS; i++) {
      const page = await pageFor(browser, server.url, owner)
      loads.push(await mapLoadTime(page, owner.orgId, mapId, count))
      if (i < DRAGS) {
        await page.waitForTimeout(300)
        frames = frames.concat(await panFrames(page))
      }
      await page.context().close()
    }
    return { load: stats(loads), frames: stats(frames) }
  } finally {
    await server.close()
  }
}

async function measure(browser: Browser, kind: StorageKind, cards: number) {
  const server = await spawnServer(kind, { RATE_LIMIT_PER_KEY: '1000000' })
  try {
    const owner = new Person(server.url)
    await owner.signUp()
    await seedBoard(server.url, owner, await owner.createKey(), cards)
    const loads: number[] = []
    const blocked: number[] = []
    const reloads: number[] = []
    const reloadBlocked: number[] = []
    const heap: number[] = []
    for (let i = 0; i < LOADS; i++) {
      // A fresh context each time: nothing in IndexedDB, no cached files (a first visit).
      const page = await pageFor(browser, server.url, owner)
      loads.push(await loadTime(page, owner.orgId, cards))
      blocked.push(await longestTask(page))
      heap.push(await heapMb(page))
      // Once IndexedDB has its copy (the worker stores as it goes), the return visit.
      await page.waitForTimeout(500)
      reloads.push(await loadTime(page, owner.orgId, cards))
      reloadBlocked.push(await longestTask(page))
      await page.context().close()
    }
    let frames: number[] = []
    if (cards > 0) {
      const page = await pageFor(browser, server.url, owner)
      await loadTime(page, owner.orgId, cards)
      for (let i = 0; i < DRAGS; i++) {
        // There and back again, so a small board never runs out of cards to drag.
        frames = frames.concat(await dragFrames(page, i % 2 === 0 ? 0 : 2, i % 2 === 0 ? 2 : 0))
      }
      await page.context().close()
    }
    return {
      load: stats(loads),
      blocked: stats(blocked),
      reload: stats(reloads),
      reloadBlocked: stats(reloadBlocked),
      heap: stats(heap),
      frames: frames.length > 0 ? stats(frames) : undefined,
    }
  } finally {
    await server.close()
  }
}

export async function run(log: (line: string) => void): Promise<void> {
  await ensureBuilt(log)
  const browser = await launchBrowser()
  try {
    // BENCH_STORAGES=postgres (say) measures one storage only.
    const kinds = process.env.BENCH_STORAGES?.split(',') ?? STORAGES
    for (const kind of STORAGES.filter((k) => kinds.includes(k))) {
      const empty = await measure(browser, kind, 0)
      const small = await measure(browser, kind, 10)
      log(line(`[${kind}] baseline: empty board shown after page load`, empty.load))
      log(line(`[${kind}] baseline: empty board shown again from IndexedDB`, empty.reload))
      log(line(`[${kind}] baseline: longest main-thread task, empty board`, empty.blocked))
      log(
        line(`[${kind}] baseline: JS heap with the empty board shown`, empty.heap, undefined, 'MB'),
      )
      const base = small.frames as Stats
      log(line(`[${kind}] baseline: frame time dragging a card, 10-card board`, base))
      for (const size of SIZES) {
        const big = await measure(browser, kind, size)
        log(line(`[${kind}] board of ${size} cards shown after page load`, big.load, empty.load))
        log(
          line(
            `[${kind}] board of ${size} cards shown again from IndexedDB`,
            big.reload,
            empty.reload,
          ),
        )
        log(
          line(
            `[${kind}] longest main-thread task, ${size}-card first load`,
            big.blocked,
            empty.blocked,
          ),
        )
        log(
          line(
            `[${kind}] longest main-thread task, ${size}-card return visit`,
            big.reloadBlocked,
            empty.reloadBlocked,
          ),
        )
        log(
          line(
            `[${kind}] frame time dragging a card, ${size}-card board`,
            big.frames as Stats,
            base,
          ),
        )
        log(line(`[${kind}] JS heap, ${size}-card board shown`, big.heap, empty.heap, 'MB'))
      }
      // One at a time: measurements run together would slow each other down.
      const maps = []
      for (const count of MAP_SIZES) maps.push(await measureMap(browser, kind, count))
      const [emptyMap, smallMap, bigMap] = maps
      if (!emptyMap || !smallMap || !bigMap) throw new Error('map measurements missing')
      log(line(`[${kind}] baseline: empty mind map drawn after page load`, emptyMap.load))
      log(line(`[${kind}] baseline: frame time panning a 10-thought map`, smallMap.frames))
      const most = MAP_SIZES[MAP_SIZES.length - 1]
      log(
        line(
          `[${kind}] mind map of ${most} thoughts drawn after page load`,
          bigMap.load,
          emptyMap.load,
        ),
      )
      log(
        line(`[${kind}] frame time panning a ${most}-thought map`, bigMap.frames, smallMap.frames),
      )
    }
  } finally {
    await browser.close()
  }
}
