import type { Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import {
  card,
  centerOf,
  column,
  dragTo,
  joinedMember,
  openBoard,
  serverAndBrowser,
  signedInContext,
} from './support.ts'

const LAPTOP = { width: 1280, height: 800 }
const PHONE = { width: 390, height: 844 }

/** Whether the page itself scrolls sideways (inner panes may; the page must not). */
const pageOverflows = (page: Page) =>
  page.evaluate(() => {
    const root = document.scrollingElement ?? document.documentElement
    return root.scrollWidth > window.innerWidth
  })

/** A webhook the server refuses (loopback), to have an error toast on screen. */
async function refusedWebhook(page: Page, orgId: string): Promise<void> {
  await page.goto(`/o/${orgId}/settings/webhooks`)
  await page.getByLabel('Receiving URL').fill('http://127.0.0.1:9/hooks')
  await page.getByRole('button', { name: 'Register webhook' }).click()
  await page.getByTestId('toast-error').waitFor()
}

describe('the app fits a laptop and a phone', () => {
  const running = serverAndBrowser()

  test('at 1280×800 the default board shows all four columns, and no role badge repeats its column’s name', async () => {
    const { context, page, orgId } = await signedInContext(running.browser, running.server.url)
    await page.setViewportSize(LAPTOP)
    await openBoard(page, orgId)
    const done = await column(page, 'Done').boundingBox()
    if (!done) throw new Error('no Done column')
    expect(done.x + done.width).toBeLessThanOrEqual(LAPTOP.width)
    expect(await page.locator('[data-column-id] .role').count()).toBe(0)
    // A column named otherwise still shows its role.
    await column(page, 'Ready').locator('.column-title').dblclick()
    await page.getByLabel('Column title').fill('Up next')
    await page.getByLabel('Column title').press('Enter')
    await expect.poll(() => column(page, 'Up next').locator('.role').textContent()).toBe('Ready')
    await context.close()
  })

  test('on a 390×844 phone, Settings is usable: wide fields, labels above their inputs, tables scroll in their cards, the page never scrolls sideways', async () => {
    const { context, page, orgId } = await signedInContext(running.browser, running.server.url)
    await page.setViewportSize(PHONE)
    await page.goto(`/o/${orgId}/settings/members`)
    const email = page.getByLabel('Email')
    await email.waitFor()
    const field = await email.boundingBox()
    expect(field?.width).toBeGreaterThanOrEqual(250)
    for (const name of ['Email', 'Role']) {
      const label = await page.locator('label', { hasText: new RegExp(`^${name}$`) }).boundingBox()
      const input = await page.getByLabel(name, { exact: true }).boundingBox()
      if (!label || !input) throw new Error(`no ${name} field`)
      expect(label.y + label.height).toBeLessThanOrEqual(input.y + 1)
    }
    const card = await page.locator('.settings-card', { hasText: 'Members' }).first().boundingBox()
    expect((card?.x ?? 0) + (card?.width ?? 0)).toBeLessThanOrEqual(PHONE.width)
    for (const section of ['members', 'keys', 'webhooks', 'projects']) {
      await page.goto(`/o/${orgId}/settings/${section}`)
      await page.locator('.settings-card').first().waitFor()
      expect({ section, overflows: await pageOverflows(page) }).toEqual({
        section,
        overflows: false,
      })
    }
    await context.close()
  })

  test('a toast shows at the bottom, inside the screen, on a laptop and a phone', async () => {
    const { context, page, orgId } = await signedInContext(running.browser, running.server.url)
    for (const size of [LAPTOP, PHONE]) {
      await page.setViewportSize(size)
      await refusedWebhook(page, orgId)
      const box = await page.getByTestId('toast-error').last().boundingBox()
      if (!box) throw new Error('no toast')
      // Clear of both edges: on a phone it spans the screen, with a margin each side.
      expect(box.x).toBeGreaterThanOrEqual(8)
      expect(box.x + box.width).toBeLessThanOrEqual(size.width - 8)
      expect(box.y + box.height).toBeLessThanOrEqual(size.height)
      expect(box.y + box.height).toBeGreaterThan(size.height - 60)
    }
    await context.close()
  })

  test('going to another page takes the old page’s toasts away', async () => {
    const { context, page, orgId } = await signedInContext(running.browser, running.server.url)
    await page.setViewportSize(LAPTOP)
    await refusedWebhook(page, orgId)
    // Errors stay nine seconds on their page; on another page they are gone at once.
    await page.waitForTimeout(1_200)
    await page.getByRole('link', { name: 'Board' }).click()
    await page.getByTestId('toast-error').waitFor({ state: 'detached', timeout: 2_000 })
    await context.close()
  })

  test('on a 390 px phone the member and API-key tables are stacked rows: every cell, Role included, shows whole inside its card under its column’s name, and nothing scrolls sideways', async () => {
    const { context, page, person, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    await joinedMember(running.server.url, person, 'Maximiliana Featherstonehaugh-Oyelaran')
    await person.createKey('deploy bot with a rather long descriptive name')
    await page.setViewportSize(PHONE)
    const tables = [
      { section: 'members', id: 'members-table', labels: ['Person', 'Role', 'Joined'] },
      {
        section: 'keys',
        id: 'api-keys-table',
        labels: ['Name', 'Key', 'Created', 'By', 'Last used'],
      },
    ]
    for (const { section, id, labels } of tables) {
      await page.goto(`/o/${orgId}/settings/${section}`)
      const table = page.getByTestId(id)
      await table.locator('tbody tr').first().waitFor()
      const laidOut = await table.evaluate((el) => {
        const card = (el.closest('.settings-card') as HTMLElement).getBoundingClientRect()
        const cells = [...el.querySelectorAll('tbody td')].map((td) => {
          const box = td.getBoundingClientRect()
          return {
            label: getComputedStyle(td, '::before').content,
            inside: box.left >= card.left - 0.5 && box.right <= card.right + 0.5,
            whole: td.scrollWidth <= td.clientWidth + 1,
            width: box.width,
          }
        })
        return { scrolls: el.scrollWidth > el.clientWidth + 1, cells }
      })
      expect({ section, scrolls: laidOut.scrolls }).toEqual({ section, scrolls: false })
      for (const cell of laidOut.cells) {
        expect({ section, ...cell }).toMatchObject({ section, inside: true, whole: true })
      }
      const shownLabels = new Set(laidOut.cells.map((c) => c.label.replace(/^"|"$/g, '')))
      for (const label of labels) expect(shownLabels, `${section}: ${label}`).toContain(label)
      expect(await pageOverflows(page)).toBe(false)
    }
    // The Role of each member is on screen, not scrolled away.
    await page.goto(`/o/${orgId}/settings/members`)
    const role = page.getByTestId('members-table').locator('td[data-label="Role"]').first()
    const box = await role.boundingBox()
    expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(PHONE.width)
    expect(await role.isVisible()).toBe(true)
    await context.close()
  })

  test('on a phone, a card panel’s long title wraps onto more lines, as on the board, and none of it is cut', async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    const { columns } = await agent.ok('list_columns')
    const title = 'Investigate flaky login test number 0'
    const { task } = await agent.ok('create_task', { columnId: columns[0].id, title })
    await page.setViewportSize(PHONE)
    await page.goto(`/o/${orgId}/board?card=${task.id}`)
    const field = page.locator('.panel-title')
    await expect.poll(() => field.inputValue()).toBe(title)
    const shown = await field.evaluate((el) => {
      const box = el.getBoundingClientRect()
      const line = Number.parseFloat(getComputedStyle(el).lineHeight)
      return {
        cutSideways: el.scrollWidth > el.clientWidth + 1,
        cutBelow: el.scrollHeight > el.clientHeight + 1,
        lines: Math.round((el.clientHeight - 8) / line),
        right: box.right,
      }
    })
    expect(shown).toMatchObject({ cutSideways: false, cutBelow: false })
    expect(shown.lines).toBeGreaterThanOrEqual(2)
    expect(shown.right).toBeLessThanOrEqual(PHONE.width)
    await context.close()
  })

  test('a refusal shown just before leaving the board stays with the board: Settings opens without it', async () => {
    const { context, page, agent, orgId } = await signedInContext(
      running.browser,
      running.server.url,
    )
    await page.setViewportSize(LAPTOP)
    await openBoard(page, orgId)
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: 'Held card' })
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Zed' })
    await card(page, 'Held card').locator('.claim-live').waitFor()
    const from = await centerOf(card(page, 'Held card'))
    const to = await centerOf(column(page, 'Ready').locator('.card-list'))
    await dragTo(page, from, to)
    await page.getByTestId('toast-error').waitFor()
    // Straight away, as a person who moves on does.
    await page.getByRole('link', { name: 'Settings' }).click()
    await page.locator('.settings-card').first().waitFor()
    expect(await page.getByTestId('toast-error').count()).toBe(0)
    // A refusal raised on Settings stays on Settings.
    await page.goto(`/o/${orgId}/settings/webhooks`)
    await page.getByLabel('Receiving URL').fill('http://127.0.0.1:9/hooks')
    await page.getByRole('button', { name: 'Register webhook' }).click()
    await page.getByTestId('toast-error').waitFor()
    await page.getByRole('link', { name: 'Members' }).click()
    await page.getByTestId('members-table').waitFor()
    expect(await page.getByTestId('toast-error').count()).toBe(0)
    await context.close()
  })
})
