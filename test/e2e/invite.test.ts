import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startServer, type TestServer } from '../support/server.ts'
import { launchBrowser, newContext, openBoard, signedInContext, watchErrors } from './support.ts'

describe('members and invites in real Chromium', () => {
  let server: TestServer
  let browser: Browser

  beforeAll(async () => {
    ;[server, browser] = await Promise.all([startServer('pglite'), launchBrowser()])
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  test('an invite accepted in a second browser context shows the member; both see each other on the board; roles change; organisations switch', async () => {
    const owner = await signedInContext(browser, server.url, {
      name: 'Ada Lovelace',
      organizationName: 'Analytical Engines',
    })
    const { page, orgId } = owner
    const errors = watchErrors(page)
    await page.goto(`/o/${orgId}/settings/members`)
    await page.getByLabel('Email').fill('linus@example.test')
    await page.getByLabel('Role', { exact: true }).selectOption('member')
    await page.getByRole('button', { name: 'Create invite' }).click()
    const link = (await page.getByTestId('invite-link').textContent()) ?? ''
    expect(link).toMatch(/\/invite\/[\w-]+$/)
    await expect(page.locator('.plain-list').textContent()).resolves.toContain('linus@example.test')

    // A stranger's browser: the link explains the invite, then signs up and joins.
    const second = await newContext(browser, server.url)
    const guest = await second.newPage()
    const guestErrors = watchErrors(guest)
    await guest.goto(link)
    await guest.getByRole('heading', { name: 'Join Analytical Engines' }).waitFor()
    await expect(guest.getByLabel('Email').inputValue()).resolves.toBe('linus@example.test')
    await guest.getByLabel('Your name').fill('Linus Torvalds')
    await guest.getByLabel('Password').fill('correct horse battery')
    await guest.getByLabel('Your own organisation').fill('Linus’s garage')
    await guest.getByRole('button', { name: 'Create account' }).click()
    await guest.waitForURL(`**/o/${orgId}/board`)
    await guest.locator('[data-sync-state="synced"]').waitFor()
    await expect(guest.locator('.org-name').textContent()).resolves.toBe('Analytical Engines')

    await page.reload()
    await expect
      .poll(() => page.getByTestId('members-table').textContent())
      .toContain('Linus Torvalds')

    // Presence: each sees the other on the board.
    await openBoard(page, orgId)
    await page.locator('.presence [title^="Linus Torvalds"]').waitFor()
    await guest.locator('.presence [title^="Ada Lovelace"]').waitFor()

    // Roles: the owner makes the new member an admin.
    await page.goto(`/o/${orgId}/settings/members`)
    await page.getByLabel('Role of Linus Torvalds').selectOption('admin')
    await expect
      .poll(async () => {
        const { body } = await owner.person.request('GET', `/api/app/orgs/${orgId}/members`)
        return body.members.find((m: { name: string }) => m.name === 'Linus Torvalds')?.role
      })
      .toBe('admin')

    // The member belongs to two organisations now and switches between them.
    await guest.getByRole('button', { name: 'Switch organisation' }).click()
    await guest.getByRole('menuitem', { name: 'Linus’s garage' }).click()
    await expect.poll(() => guest.locator('.org-name').textContent()).toBe('Linus’s garage')
    await guest.locator('[data-sync-state="synced"]').waitFor()

    // Log out: back to the log-in screen, and the board is gone from the device.
    await guest.getByRole('button', { name: 'Log out' }).click()
    await guest.getByRole('heading', { name: 'Log in' }).waitFor()
    const left = await guest.evaluate(async () =>
      (await indexedDB.databases()).map((d) => d.name).filter((n) => n?.startsWith('corkboard/')),
    )
    expect(left).toEqual([])
    expect([...errors, ...guestErrors]).toEqual([])
    await second.close()
    await owner.context.close()
  })
})
