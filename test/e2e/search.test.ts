import { describe, expect, test } from 'vitest'
import { STORAGES } from '../support/storage.ts'
import { openBoard, screenshot, serverAndBrowser, signedInContext, watchErrors } from './support.ts'

/** The board's search box (issue 32): "/" or Ctrl+K, results as you type, the card at the match. */
describe.each(STORAGES)('search in the app (%s)', (kind) => {
  const running = serverAndBrowser(kind)

  test('"/" focuses the search, results come as you type, Enter opens the card at the matching comment; Ctrl+K and archived cards on request', async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    const errors = watchErrors(page)
    const { columns } = await agent.ok('list_columns')
    const columnId = columns[0].id
    for (let i = 0; i < 8; i++) {
      await agent.ok('create_task', { columnId, title: `Filler card ${i}`, description: 'x' })
    }
    const ledger = (await agent.ok('create_task', { columnId, title: 'Ledger' })).task
    for (let i = 0; i < 6; i++) {
      await agent.ok('add_comment', { taskId: ledger.id, body: `Note ${i}: nothing here.` })
    }
    const { comment } = await agent.ok('add_comment', {
      taskId: ledger.id,
      body: 'The reconciliation double-posts refunds.',
    })
    const old = (await agent.ok('create_task', { columnId, title: 'Reconciliation report' })).task
    await agent.ok('archive_task', { taskId: old.id })
    await openBoard(page, orgId)

    await page.locator('body').press('/')
    const box = page.getByRole('combobox', { name: 'Search cards' })
    await expect
      .poll(() => box.evaluate((el) => el === document.activeElement), { timeout: 5_000 })
      .toBe(true)
    await page.keyboard.type('reconcil')
    const hits = page.getByRole('listbox', { name: 'Search results' }).getByRole('option')
    await expect.poll(() => hits.count(), { timeout: 10_000 }).toBe(1)
    await expect(hits.first().textContent()).resolves.toContain('Ledger')
    await expect(hits.first().locator('strong').first().textContent()).resolves.toMatch(
      /^reconciliation$/i,
    )
    await screenshot(page, 'search.png')
    await page.keyboard.press('Enter')
    const panel = page.getByTestId('card-panel')
    await expect(panel.locator('.panel-title').inputValue()).resolves.toBe('Ledger')
    expect(new URL(page.url()).searchParams.get('card')).toBe(ledger.id)
    const matched = panel.locator(`[data-comment-id="${comment.id}"]`)
    await expect
      .poll(() => matched.evaluate((el) => el.classList.contains('at-match')), { timeout: 10_000 })
      .toBe(true)
    await expect
      .poll(
        () =>
          matched.evaluate((el) => {
            const r = el.getBoundingClientRect()
            return r.top >= 0 && r.bottom <= window.innerHeight
          }),
        { timeout: 5_000 },
      )
      .toBe(true)

    // Ctrl+K from anywhere, archived cards on request.
    await page.keyboard.press('Escape')
    await page.keyboard.press('Control+k')
    await expect
      .poll(() => box.evaluate((el) => el === document.activeElement), { timeout: 5_000 })
      .toBe(true)
    await page.getByLabel('Archived too').check()
    await box.focus()
    await expect.poll(() => hits.count(), { timeout: 10_000 }).toBe(2)
    await expect(hits.allTextContents()).resolves.toEqual([
      expect.stringContaining('Reconciliation report'),
      expect.stringContaining('Ledger'),
    ])
    await expect(hits.first().textContent()).resolves.toContain('Archived')
    // A word nothing holds: said so.
    await box.fill('zebra')
    await expect
      .poll(() => page.getByText('No card matches.').isVisible(), { timeout: 10_000 })
      .toBe(true)
    expect(errors).toEqual([])
    await context.close()
  })
})
