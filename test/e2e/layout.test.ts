import type { Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { column, openBoard, serverAndBrowser, signedInContext } from './support.ts'

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
})
