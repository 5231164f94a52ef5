import { describe, expect, test } from 'vitest'
import { STORAGES } from '../support/storage.ts'
import {
  card,
  column,
  openBoard,
  serverAndBrowser,
  signedInContext,
  watchErrors,
} from './support.ts'

describe.each(STORAGES)('offline editing (%s)', (kind) => {
  const running = serverAndBrowser(kind)

  test('after a network blip (offline and straight back online) the app reconnects and syncs', async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    const errors = watchErrors(page)
    await openBoard(page, orgId)
    const { columns } = await agent.ok('list_columns')
    await page.locator('[data-sync-state="synced"]').waitFor()
    for (let blip = 0; blip < 3; blip++) {
      // Back online before the socket closed for going offline has finished closing.
      await Promise.all([context.setOffline(true), context.setOffline(false)])
      await page.locator('[data-sync-state="synced"]').waitFor({ timeout: 15_000 })
      // And live again: an agent's write reaches the page.
      const title = `After blip ${blip}`
      await agent.ok('create_task', { columnId: columns[0].id, title })
      await card(page, title).waitFor({ timeout: 15_000 })
    }
    expect(errors).toEqual([])
    await context.close()
  })

  test('the app reopens without a connection, edits made offline are kept, and they reach the server after reconnecting', async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    const errors = watchErrors(page)
    await openBoard(page, orgId)
    const board = await agent.ok('get_board')
    const backlog = board.columns.find((c: { title: string }) => c.title === 'Backlog').id
    const { task } = await agent.ok('create_task', {
      columnId: backlog,
      title: 'Before going offline',
    })
    await card(page, 'Before going offline').waitFor()
    // The service worker keeps the app's files; wait until it has them.
    await page.evaluate(() => navigator.serviceWorker.ready.then(() => true))

    await context.setOffline(true)
    await page.locator('[data-sync-state="offline"]').waitFor()
    // Reopened with no connection: the app and the board come from this device.
    await page.reload()
    await card(page, 'Before going offline').waitFor()
    await expect(page.locator('[data-sync-state]').getAttribute('data-sync-state')).resolves.toBe(
      'offline',
    )

    await column(page, 'Backlog').getByRole('button', { name: 'Add card' }).click()
    await page.getByLabel('Title of the new card in Backlog').fill('Written offline')
    await page.getByLabel('Title of the new card in Backlog').press('Enter')
    await card(page, 'Written offline').waitFor()
    await page.getByLabel('Title of the new card in Backlog').press('Escape')
    await card(page, 'Before going offline').click()
    const panel = page.getByTestId('card-panel')
    await panel.getByLabel('Title', { exact: true }).fill('Renamed offline')
    await panel.getByLabel('Title', { exact: true }).press('Enter')
    await panel.getByLabel('Write a comment').fill('Noted on the train.')
    await panel.getByRole('button', { name: 'Comment', exact: true }).click()
    await panel.locator('.comment-person').waitFor()

    // Nothing has left the browser yet.
    const before = await agent.ok('get_board')
    expect(before.tasks.map((t: { title: string }) => t.title)).toEqual(['Before going offline'])

    await context.setOffline(false)
    await page.locator('[data-sync-state="synced"]').waitFor({ timeout: 20_000 })
    await expect
      .poll(
        async () =>
          (await agent.ok('get_board')).tasks.map((t: { title: string }) => t.title).sort(),
        {
          timeout: 15_000,
        },
      )
      .toEqual(['Renamed offline', 'Written offline'])
    // The comment travels in the card's own document, stored in its own time.
    await expect
      .poll(
        async () =>
          (await agent.ok('get_task', { taskId: task.id })).comments.map(
            (c: { body: string }) => c.body,
          ),
        { timeout: 15_000 },
      )
      .toEqual(['Noted on the train.'])
    const after = await agent.ok('get_task', { taskId: task.id })
    expect(after.task.lastCommentBy).toBe('human')
    expect(errors).toEqual([])
    await context.close()
  })
})
