import { readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { Agent } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import {
  centerOf,
  contextAs,
  dragTo,
  joinedMember,
  launchBrowser,
  pngBase64,
  screenshot,
  serverAndBrowser,
  signedInContext,
  watchErrors,
} from './support.ts'

interface MapNode {
  id: string
  text: string
  x: number
  y: number
  color: string | null
  imageUrl?: string
}

const thought = (page: Page, text: string) => page.locator('.react-flow__node', { hasText: text })

async function nodes(agent: Agent, mapId: string): Promise<MapNode[]> {
  return (await agent.ok('get_map', { mapId })).nodes
}

/** Where the canvas draws a node, in map coordinates (its transform). */
async function drawnAt(page: Page, nodeId: string): Promise<{ x: number; y: number }> {
  const transform = await page
    .locator(`.react-flow__node[data-id="${nodeId}"]`)
    .evaluate((el) => (el as HTMLElement).style.transform)
  const m = /translate\(([-\d.]+)px, ?([-\d.]+)px\)/.exec(transform)
  if (!m) throw new Error(`no position in ${transform}`)
  return { x: Number(m[1]), y: Number(m[2]) }
}

async function newMap(page: Page, orgId: string, title: string): Promise<string> {
  await page.goto(`/o/${orgId}/maps`)
  await page.getByRole('button', { name: 'New map' }).click()
  await page.getByRole('dialog').getByLabel('Title').fill(title)
  await page.getByRole('dialog').getByRole('button', { name: 'Create map' }).click()
  await page.getByTestId('map-canvas').waitFor()
  await page.locator('[data-sync-state="synced"]').waitFor()
  return page.url().split('/maps/')[1] as string
}

describe.each(STORAGES)('mind-map canvas persistence (%s)', (kind) => {
  const running = serverAndBrowser(kind)

  test('a node dragged on the canvas keeps its position after reload (written once, at the drop)', async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    const mapId = await newMap(page, orgId, 'Roadmap')
    const [node] = (
      await agent.ok('create_nodes', { mapId, nodes: [{ text: 'Drag me', x: 0, y: 0 }] })
    ).nodes as MapNode[]
    if (!node) throw new Error('no node')
    await thought(page, 'Drag me').waitFor()
    const from = await centerOf(thought(page, 'Drag me'))
    await dragTo(page, from, { x: from.x + 160, y: from.y + 90 })
    await expect
      .poll(async () => (await nodes(agent, mapId))[0], { timeout: 10_000 })
      .toSatisfy((n: MapNode) => n.x > 50 && n.y > 30)
    const [stored] = await nodes(agent, mapId)
    if (!stored) throw new Error('node gone')
    await page.reload()
    await thought(page, 'Drag me').waitFor()
    await expect(drawnAt(page, node.id)).resolves.toEqual({ x: stored.x, y: stored.y })
    await context.close()
  })
})

describe('the mind-map canvas in real Chromium', () => {
  let server: TestServer
  let browser: Browser
  let page: Page
  let agent: Agent
  let orgId: string
  let mapId: string
  let owner: Awaited<ReturnType<typeof signedInContext>>['person']
  let errors: string[]
  let closeContext: () => Promise<void>

  beforeAll(async () => {
    ;[server, browser] = await Promise.all([startServer('pglite'), launchBrowser()])
    const s = await signedInContext(browser, server.url, { name: 'Ada Lovelace' })
    ;({ page, agent, orgId, person: owner } = s)
    closeContext = () => s.context.close()
    errors = watchErrors(page)
    mapId = await newMap(page, orgId, 'Launch plan')
  })
  afterAll(async () => {
    await closeContext?.()
    await browser?.close()
    await server?.close()
  })

  test('an agent’s create_nodes and create_edges appear while you watch', async () => {
    const created = await agent.ok('create_nodes', {
      mapId,
      nodes: [
        { text: 'Launch', x: 0, y: 0, color: '#6366f1' },
        { text: 'Marketing', x: -240, y: 150, color: '#ec4899' },
        { text: 'Engineering', x: 240, y: 150, color: '#10b981' },
        { text: 'Press kit', x: -240, y: 300 },
        { text: 'Load testing', x: 240, y: 300, color: '#f59e0b' },
      ],
    })
    const ids = created.nodes.map((n: MapNode) => n.id)
    await agent.ok('create_edges', {
      mapId,
      edges: [
        { sourceId: ids[0], targetId: ids[1] },
        { sourceId: ids[0], targetId: ids[2] },
        { sourceId: ids[1], targetId: ids[3] },
        { sourceId: ids[2], targetId: ids[4] },
      ],
    })
    for (const text of ['Launch', 'Marketing', 'Engineering', 'Press kit', 'Load testing']) {
      await thought(page, text).waitFor()
    }
    await expect.poll(() => page.locator('.react-flow__edge').count()).toBe(4)
  })

  /** The new thought's text box shows and has the caret (it never gets it without the fix). */
  const focusedOnThought = () =>
    expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('aria-label')))
      .toBe('Thought text')

  test('a new thought takes the focus: what you type after “Add thought” or a double-click becomes its text', async () => {
    await page.getByRole('button', { name: 'Add thought' }).click()
    // A person types once the new thought's box shows. Typed as keys, not filled into a
    // field: they go wherever the focus is.
    await focusedOnThought()
    await page.keyboard.type('Typed after the button')
    await page.keyboard.press('Enter')
    await expect
      .poll(async () => (await nodes(agent, mapId)).map((n) => n.text))
      .toContain('Typed after the button')

    const pane = await page.locator('.react-flow__pane').boundingBox()
    if (!pane) throw new Error('no canvas')
    await page.mouse.dblclick(pane.x + 140, pane.y + 100)
    await focusedOnThought()
    await page.keyboard.type('Typed after a double-click')
    await page.keyboard.press('Enter')
    await expect
      .poll(async () => (await nodes(agent, mapId)).map((n) => n.text))
      .toContain('Typed after a double-click')
    // Neither the spaces typed nor Enter made more (empty) thoughts.
    expect((await nodes(agent, mapId)).filter((n) => n.text === '')).toEqual([])
    for (const text of ['Typed after the button', 'Typed after a double-click']) {
      const node = (await nodes(agent, mapId)).find((n) => n.text === text) as MapNode
      await agent.ok('delete_node', { nodeId: node.id })
    }
  })

  test('nodes are added, edited, coloured, given an image and deleted; edges are drawn and deleted', async () => {
    // Double-click the empty canvas: a new thought, in edit mode.
    const pane = await page.locator('.react-flow__pane').boundingBox()
    if (!pane) throw new Error('no canvas')
    await page.mouse.dblclick(pane.x + pane.width - 160, pane.y + 120)
    await page.getByLabel('Thought text').fill('Beta invites')
    await page.getByLabel('Thought text').press('Enter')
    await expect
      .poll(async () => (await nodes(agent, mapId)).map((n) => n.text))
      .toContain('Beta invites')
    const beta = (await nodes(agent, mapId)).find((n) => n.text === 'Beta invites') as MapNode

    // Select it: the toolbar sets a colour and an image.
    await thought(page, 'Beta invites').click()
    await page.getByRole('button', { name: 'Colour #ef4444' }).click()
    await expect
      .poll(async () => (await nodes(agent, mapId)).find((n) => n.id === beta.id)?.color)
      .toBe('#ef4444')
    const file = join(tmpdir(), `node-${process.pid}.png`)
    writeFileSync(file, Buffer.from(pngBase64(120, 60, [91, 91, 214]), 'base64'))
    await page.locator('.thought-toolbar input[type="file"]').setInputFiles(file)
    await expect
      .poll(async () => (await nodes(agent, mapId)).find((n) => n.id === beta.id)?.imageUrl)
      .toMatch(/\/files\/public\/.+\.png$/)
    await thought(page, 'Beta invites').locator('img.thought-image').waitFor()

    // Draw an edge from Beta invites to Launch by its handle, then delete it.
    const handle = await centerOf(thought(page, 'Beta invites').locator('.react-flow__handle-left'))
    const launch = await centerOf(thought(page, 'Launch'))
    await page.mouse.move(handle.x, handle.y)
    await page.mouse.down()
    await page.mouse.move((handle.x + launch.x) / 2, (handle.y + launch.y) / 2, { steps: 5 })
    await page.mouse.move(launch.x, launch.y, { steps: 5 })
    await page.mouse.up()
    const edgesOf = async () =>
      (await agent.ok('get_map', { mapId })).edges.filter(
        (e: { sourceId: string; targetId: string }) =>
          e.sourceId === beta.id || e.targetId === beta.id,
      )
    await expect.poll(async () => (await edgesOf()).length).toBe(1)
    const [edge] = await edgesOf()
    await page.locator(`.react-flow__edge[data-id="${edge.id}"]`).click({ force: true })
    await page.keyboard.press('Delete')
    await expect.poll(async () => (await edgesOf()).length).toBe(0)

    // Delete the node from its toolbar.
    await thought(page, 'Beta invites').click()
    await page.getByRole('button', { name: 'Delete thought' }).click()
    await expect
      .poll(async () => (await nodes(agent, mapId)).map((n) => n.text))
      .not.toContain('Beta invites')
    expect(errors).toEqual([])
  })

  test('live cursors: the others’ pointers move on the canvas', async () => {
    const member = await joinedMember(server.url, owner, 'Brian Kernighan')
    const context = await contextAs(browser, server.url, member)
    const other = await context.newPage()
    await other.goto(`/o/${orgId}/maps/${mapId}`)
    await thought(other, 'Launch').waitFor()
    const spot = await centerOf(thought(other, 'Marketing'))
    await other.mouse.move(spot.x + 30, spot.y + 80, { steps: 4 })
    await page.locator('.peer-cursor', { hasText: 'Brian Kernighan' }).waitFor()
    await screenshot(page, 'mind-map.png')
    await context.close()
  })

  test('the map list shows maps most recently changed first', async () => {
    await agent.ok('create_map', { title: 'Older idea' })
    await agent.ok('create_map', { title: 'Newest idea' })
    await page.goto(`/o/${orgId}/maps`)
    await page.getByTestId('map-tile').first().waitFor()
    await expect
      .poll(() => page.locator('.map-tile-title').allTextContents())
      .toEqual(['Newest idea', 'Older idea', 'Launch plan'])
  })

  test('the map list is live: a map an agent creates, renames or deletes shows at once', async () => {
    await page.goto(`/o/${orgId}/maps`)
    await page.getByTestId('map-tile').first().waitFor()
    // Well within the list's old 10-second refresh: the server says when the list changed.
    const soon = { timeout: 4_000 }
    const { map } = await agent.ok('create_map', { title: 'Made by an agent' })
    await page.locator('.map-tile-title', { hasText: 'Made by an agent' }).waitFor(soon)
    await agent.ok('rename_map', { mapId: map.id, title: 'Renamed by an agent' })
    await page.locator('.map-tile-title', { hasText: 'Renamed by an agent' }).waitFor(soon)
    await agent.ok('create_node', { mapId, text: 'Moves the list' })
    await expect
      .poll(() => page.locator('.map-tile-title').first().textContent(), soon)
      .toBe('Launch plan')
    await agent.ok('delete_map', { mapId: map.id })
    await page
      .locator('.map-tile-title', { hasText: 'Renamed by an agent' })
      .waitFor({ state: 'detached', ...soon })
    expect(errors).toEqual([])
  })
})

describe('tidy up and export on the map page, in real Chromium', () => {
  const running = serverAndBrowser('pglite')

  test('Tidy up rearranges the map into a tree, and an export downloads with the map title as file name', async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    const errors = watchErrors(page)
    const mapId = await newMap(page, orgId, 'Q3 plans')
    const created = (
      await agent.ok('create_nodes', {
        mapId,
        nodes: [
          { text: 'Root idea', x: 0, y: 0 },
          { text: 'Left branch', x: 40, y: 400 },
          { text: 'Right branch', x: 600, y: -200 },
        ],
      })
    ).nodes as MapNode[]
    const [root, left, right] = created.map((n) => n.id) as [string, string, string]
    await agent.ok('create_edges', {
      mapId,
      edges: [
        { sourceId: root, targetId: left },
        { sourceId: root, targetId: right },
      ],
    })
    await thought(page, 'Right branch').waitFor()
    await page.getByRole('button', { name: 'Tidy up' }).click()
    // The canvas itself redraws the children one level (220 px) right of the root.
    await expect
      .poll(async () => (await drawnAt(page, left)).x - (await drawnAt(page, root)).x, {
        timeout: 10_000,
      })
      .toBe(220)
    expect((await drawnAt(page, right)).x - (await drawnAt(page, root)).x).toBe(220)
    const stored = new Map((await nodes(agent, mapId)).map((n) => [n.id, n]))
    await expect(drawnAt(page, left)).resolves.toEqual({
      x: stored.get(left)?.x,
      y: stored.get(left)?.y,
    })

    await page.getByText('Export', { exact: true }).click()
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Markdown outline' }).click(),
    ])
    expect(download.suggestedFilename()).toBe('Q3 plans.md')
    const saved = join(tmpdir(), `corkboard-export-${mapId}.md`)
    await download.saveAs(saved)
    expect(readFileSync(saved, 'utf8')).toContain('- Root idea\n  - Right branch\n  - Left branch')
    expect(errors).toEqual([])
    await context.close()
  })
})
