import type { BrowserContext, Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import type { Agent } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'
import { card, openBoard, serverAndBrowser, signedInContext, watchErrors } from './support.ts'

/**
 * Version 2 of the live documents in the app (docs/design.md Contract 3): archived cards leave
 * the board and are listed from the server; comments live in each card's own document,
 * opened with the card; and what a person did offline to a card that left meanwhile is
 * applied or handed back, never silently dropped.
 */
describe.each(STORAGES)('archived cards and card documents in the app (%s)', (kind) => {
  const running = serverAndBrowser(kind)

  async function start(titles: string[]) {
    const session = await signedInContext(running.browser, running.server.url)
    const errors = watchErrors(session.page)
    const { columns } = await session.agent.ok('list_columns')
    const backlog: string = columns[0].id
    const ids: Record<string, string> = {}
    for (const title of titles) {
      ids[title] = (await session.agent.ok('create_task', { columnId: backlog, title })).task.id
    }
    await openBoard(session.page, session.orgId)
    for (const title of titles) await card(session.page, title).waitFor()
    return { ...session, errors, ids, backlog }
  }

  /** Offline after the app's files are kept by the service worker. */
  async function goOffline(page: Page, context: BrowserContext) {
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => true))
    await context.setOffline(true)
    await page.locator('[data-sync-state="offline"]').waitFor()
  }

  async function goOnline(page: Page, context: BrowserContext) {
    await context.setOffline(false)
    await page.locator('[data-sync-state="synced"]').waitFor({ timeout: 20_000 })
  }

  const titles = async (agent: Agent) =>
    (await agent.ok('get_board')).tasks.map((t: { title: string }) => t.title).sort()

  test('the Archived view lists archived cards from the server, restores one to its column and deletes another for good', async () => {
    const { context, page, agent, ids, errors } = await start(['Keep me', 'Bring back', 'Drop me'])
    await agent.ok('archive_task', { taskId: ids['Bring back'] })
    await agent.ok('archive_task', { taskId: ids['Drop me'] })
    await card(page, 'Bring back').waitFor({ state: 'detached' })
    await card(page, 'Drop me').waitFor({ state: 'detached' })

    await page.getByRole('button', { name: 'Archived' }).click()
    const dialog = page.getByRole('dialog')
    const rows = dialog.getByTestId('archived-card')
    await expect.poll(() => rows.allTextContents()).toHaveLength(2)
    // Newest archive first.
    await expect(rows.first().textContent()).resolves.toContain('Drop me')

    await rows.filter({ hasText: 'Bring back' }).getByRole('button', { name: 'Restore' }).click()
    await card(page, 'Bring back').waitFor()
    await expect.poll(() => titles(agent)).toEqual(['Bring back', 'Keep me'])

    await rows.filter({ hasText: 'Drop me' }).getByRole('button', { name: 'Delete' }).click()
    await page.getByRole('dialog', { name: 'Delete this card?' }).getByRole('button').last().click()
    await expect.poll(() => rows.count()).toBe(0)
    expect((await agent.call('get_task', { taskId: ids['Drop me'] })).status).toBe(404)
    expect(errors).toEqual([])
    await context.close()
  })

  test('a card archived from its panel leaves the board at once, and Undo restores it', async () => {
    const { context, page, agent, errors } = await start(['Archive and undo'])
    await card(page, 'Archive and undo').click()
    await page.getByRole('button', { name: 'Card actions' }).click()
    await page.getByRole('menuitem', { name: 'Archive' }).click()
    await card(page, 'Archive and undo').waitFor({ state: 'detached' })
    await expect.poll(() => titles(agent)).toEqual([])
    await page.getByTestId('toast-success').getByRole('button', { name: 'Undo' }).click()
    await card(page, 'Archive and undo').waitFor()
    await expect.poll(() => titles(agent)).toEqual(['Archive and undo'])
    expect(errors).toEqual([])
    await context.close()
  })

  test('an agent’s comment appears in the open card at once, and the board card counts it', async () => {
    const { context, page, agent, ids, errors } = await start(['Talk here'])
    await card(page, 'Talk here').click()
    const panel = page.getByTestId('card-panel')
    await panel.getByLabel('Write a comment').waitFor()
    await agent.ok('add_comment', {
      taskId: ids['Talk here'],
      body: 'Picked this up.',
      agentName: 'Scout',
    })
    await panel.locator('.comment-agent', { hasText: 'Picked this up.' }).waitFor()
    await card(page, 'Talk here').locator('.count', { hasText: '1' }).waitFor()
    expect(errors).toEqual([])
    await context.close()
  })

  test('an edit made offline to a card archived meanwhile is shown to the person, and “restore and apply” puts the card back with the edit', async () => {
    const { context, page, agent, ids, errors } = await start(['Rename me offline'])
    await goOffline(page, context)
    await card(page, 'Rename me offline').click()
    const panel = page.getByTestId('card-panel')
    await panel.getByLabel('Title', { exact: true }).fill('Renamed on the train')
    await panel.getByLabel('Title', { exact: true }).press('Enter')
    await page.keyboard.press('Escape')
    // Meanwhile an agent archives it.
    await agent.ok('archive_task', { taskId: ids['Rename me offline'] })

    await goOnline(page, context)
    const notice = page.getByTestId('notice')
    await notice.waitFor({ timeout: 15_000 })
    await expect(notice.textContent()).resolves.toContain('was not applied')
    await expect(notice.textContent()).resolves.toContain('Title: Renamed on the train')
    // Not applied behind the person's back.
    const archived = await agent.ok('get_task', { taskId: ids['Rename me offline'] })
    expect(archived.task.archivedAt).not.toBeNull()

    await notice.getByRole('button', { name: 'Restore the card and apply my edit' }).click()
    await card(page, 'Renamed on the train').waitFor()
    await expect
      .poll(async () => (await agent.ok('get_task', { taskId: ids['Rename me offline'] })).task)
      .toMatchObject({ title: 'Renamed on the train', archivedAt: null })
    await notice.waitFor({ state: 'detached' })
    expect(errors).toEqual([])
    await context.close()
  })

  test('a comment written offline on a card archived meanwhile is kept on the archived card', async () => {
    const { context, page, agent, ids, errors } = await start(['Comment then archive'])
    await card(page, 'Comment then archive').click()
    const panel = page.getByTestId('card-panel')
    await panel.getByLabel('Write a comment').waitFor()
    await goOffline(page, context)
    await panel.getByLabel('Write a comment').fill('Written before I knew.')
    await panel.getByRole('button', { name: 'Comment', exact: true }).click()
    await panel.locator('.comment-person').waitFor()
    await agent.ok('archive_task', { taskId: ids['Comment then archive'] })

    await goOnline(page, context)
    await expect
      .poll(
        async () =>
          (await agent.ok('get_task', { taskId: ids['Comment then archive'] })).comments.map(
            (c: { body: string }) => c.body,
          ),
        { timeout: 15_000 },
      )
      .toEqual(['Written before I knew.'])
    const { task } = await agent.ok('get_task', { taskId: ids['Comment then archive'] })
    expect(task.archivedAt).not.toBeNull()
    expect(task.commentCount).toBe(1)
    expect(errors).toEqual([])
    await context.close()
  })

  test('a comment written offline on a card deleted meanwhile is handed back to the person with its words', async () => {
    const { context, page, person, ids, errors } = await start(['Comment then delete'])
    await card(page, 'Comment then delete').click()
    const panel = page.getByTestId('card-panel')
    await panel.getByLabel('Write a comment').waitFor()
    await goOffline(page, context)
    await panel.getByLabel('Write a comment').fill('These words must survive.')
    await panel.getByRole('button', { name: 'Comment', exact: true }).click()
    await panel.locator('.comment-person').waitFor()
    const deleted = await person.request(
      'DELETE',
      `/api/app/orgs/${person.orgId}/tasks/${ids['Comment then delete']}`,
    )
    expect(deleted.status).toBe(204)

    await goOnline(page, context)
    const notice = page.getByTestId('notice')
    await notice.waitFor({ timeout: 15_000 })
    await expect(notice.textContent()).resolves.toContain('was not saved')
    await expect(notice.locator('.notice-text').textContent()).resolves.toBe(
      'These words must survive.',
    )
    expect(errors).toEqual([])
    await context.close()
  })
})
