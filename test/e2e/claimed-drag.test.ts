import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startServer, type TestServer } from '../support/server.ts'
import {
  card,
  centerOf,
  column,
  dragTo,
  launchBrowser,
  openBoard,
  signedInContext,
} from './support.ts'

describe('a card another agent holds cannot be dragged away', () => {
  let server: TestServer
  let browser: Browser

  beforeAll(async () => {
    ;[server, browser] = await Promise.all([startServer('pglite'), launchBrowser()])
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  test('dragging a card another agent holds snaps back with a message', async () => {
    const { context, page, agent, orgId } = await signedInContext(browser, server.url)
    await openBoard(page, orgId)
    const board = await agent.ok('get_board')
    const [backlog, ready] = board.columns.map((c: { id: string }) => c.id)
    const { task } = await agent.ok('create_task', { columnId: backlog, title: 'Held by Zed' })
    await agent.ok('claim_task', {
      taskId: task.id,
      agentName: 'Zed',
      house: 'Atreides',
      generation: 2,
    })
    await card(page, 'Held by Zed').locator('.claim-live').waitFor()

    const from = await centerOf(card(page, 'Held by Zed'))
    const to = await centerOf(column(page, 'Ready').locator('.card-list'))
    await dragTo(page, from, to)
    const message = page.getByTestId('toast-error')
    await message.waitFor()
    await expect(message.textContent()).resolves.toContain('claimed by Zed, 2nd of House Atreides')
    await expect(column(page, 'Backlog').textContent()).resolves.toContain('Held by Zed')
    const after = await agent.ok('get_task', { taskId: task.id })
    expect(after.task.columnId).toBe(backlog)
    expect(after.task.columnId).not.toBe(ready)
    await context.close()
  })

  test('a drag made offline on a card an agent claimed meanwhile is undone by the server on reconnect, and the app says why', async () => {
    const { context, page, agent, orgId } = await signedInContext(browser, server.url)
    await openBoard(page, orgId)
    const board = await agent.ok('get_board')
    const [backlog] = board.columns.map((c: { id: string }) => c.id)
    const { task } = await agent.ok('create_task', {
      columnId: backlog,
      title: 'Claimed while away',
    })
    await card(page, 'Claimed while away').waitFor()

    await context.setOffline(true)
    await page.locator('[data-sync-state="offline"]').waitFor()
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Irulan' })
    // The app cannot know about the claim yet: the drag goes through locally.
    const from = await centerOf(card(page, 'Claimed while away'))
    const to = await centerOf(column(page, 'Done').locator('.card-list'))
    await dragTo(page, from, to)
    await expect.poll(() => column(page, 'Done').textContent()).toContain('Claimed while away')

    await context.setOffline(false)
    const notice = page.getByTestId('toast-revert')
    await notice.waitFor({ timeout: 20_000 })
    await expect(notice.textContent()).resolves.toMatch(/Claimed while away.*claimed by Irulan/)
    await expect.poll(() => column(page, 'Backlog').textContent()).toContain('Claimed while away')
    const after = await agent.ok('get_task', { taskId: task.id })
    expect(after.task.columnId).toBe(backlog)
    await context.close()
  })
})
