import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startServer, type TestServer } from '../support/server.ts'
import { card, launchBrowser, openBoard, signedInContext, watchErrors } from './support.ts'

describe('settings: webhooks and projects in real Chromium', () => {
  let server: TestServer
  let browser: Browser
  let receiver: Server
  let receiverUrl: string
  const received: string[] = []

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => {
        body += c.toString()
      })
      req.on('end', () => {
        received.push(body)
        res.writeHead(204)
        res.end()
      })
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`
    ;[server, browser] = await Promise.all([
      startServer('pglite', { webhookAllowPrivate: true }),
      launchBrowser(),
    ])
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
    receiver?.close()
  })

  test('a webhook is registered with chosen events, its secret shown once; deliveries and their status show; a switched-off one says why and is re-enabled', async () => {
    const { context, page, agent, orgId, person } = await signedInContext(browser, server.url)
    const errors = watchErrors(page)
    await page.goto(`/o/${orgId}/settings/webhooks`)
    await page.getByLabel('Receiving URL').fill(receiverUrl)
    await page.getByRole('checkbox', { name: /comment\.added/ }).uncheck()
    await page.getByRole('button', { name: 'Register webhook' }).click()
    await expect(page.getByTestId('webhook-secret').textContent()).resolves.toMatch(/^whsec_/)
    const hook = page.getByTestId('webhook')
    await expect(hook.textContent()).resolves.toMatch(/Active.*Events: card\.created, card\.moved/)

    const { columns } = await agent.ok('list_columns')
    await agent.ok('create_task', { columnId: columns[0].id, title: 'Announce me' })
    await expect.poll(() => received.length, { timeout: 15_000 }).toBeGreaterThan(0)
    await page.getByRole('button', { name: 'Refresh' }).click()
    await expect.poll(() => hook.locator('.delivery-delivered').count()).toBe(1)
    await expect(hook.locator('tbody').textContent()).resolves.toContain('card.created')

    // An endpoint that switched itself off after failing: the reason, and a way back on.
    const { body } = await person.request('GET', `/api/app/orgs/${orgId}/webhooks`)
    await server.storage.db.query(
      `update webhooks set enabled = false, disabled_at = now(),
         disabled_reason = 'switched off after 5 failed events in a row; last: HTTP 500'
       where id = $1`,
      [body.webhooks[0].id],
    )
    await page.reload()
    await expect(hook.textContent()).resolves.toMatch(/Switched off.*HTTP 500/)
    await hook.getByRole('button', { name: 'Re-enable' }).click()
    await expect.poll(() => hook.textContent()).toMatch(/Active/)
    const after = await person.request('GET', `/api/app/orgs/${orgId}/webhooks`)
    expect(after.body.webhooks[0]).toMatchObject({ enabled: true, disabledReason: null })
    expect(errors).toEqual([])
    await context.close()
  })

  test('a project made in settings files cards: it shows in the filter and the card panel, and a card’s project is removed again', async () => {
    const { context, page, agent, orgId } = await signedInContext(browser, server.url)
    await page.goto(`/o/${orgId}/settings/projects`)
    await page.getByLabel('Name').fill('Mobile app')
    await page.getByRole('radio', { name: 'Colour #8b5cf6' }).check()
    await page.getByRole('button', { name: 'Create project' }).click()
    await expect.poll(() => page.locator('.plain-list').textContent()).toContain('Mobile app')
    const { projects } = await agent.ok('list_projects')
    expect(projects).toMatchObject([{ name: 'Mobile app', color: '#8b5cf6' }])

    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: 'Splash' })
    await openBoard(page, orgId)
    await card(page, 'Splash').click()
    const panel = page.getByTestId('card-panel')
    await panel.getByLabel('Project', { exact: true }).selectOption({ label: 'Mobile app' })
    await expect
      .poll(async () => (await agent.ok('get_task', { taskId: task.id })).task.projectName)
      .toBe('Mobile app')
    await panel.getByRole('button', { name: 'Remove project' }).click()
    await expect
      .poll(async () => (await agent.ok('get_task', { taskId: task.id })).task.projectId)
      .toBeNull()
    await page.keyboard.press('Escape')
    await page.getByLabel('Filter by project').selectOption({ label: 'Mobile app' })
    await expect(page.locator('[data-card-id]').count()).resolves.toBe(0)
    await context.close()
  })
})

describe('claims over time', () => {
  let server: TestServer
  let browser: Browser

  beforeAll(async () => {
    ;[server, browser] = await Promise.all([
      startServer('pglite', { claimLeaseSeconds: 2 }),
      launchBrowser(),
    ])
  })
  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  test('a claim whose lease passes shows as lapsed on the open board, and the card is free to move and edit', async () => {
    const { context, page, agent, orgId } = await signedInContext(browser, server.url)
    await openBoard(page, orgId)
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: 'Ghost' })
    await agent.ok('claim_task', {
      taskId: task.id,
      agentName: 'Duncan',
      house: 'Idaho',
      generation: 11,
    })
    const label = card(page, 'Ghost').locator('.claim')
    await expect.poll(() => label.getAttribute('class')).toContain('claim-live')
    await expect(label.textContent()).resolves.toBe('Claimed by Duncan, 11th of House Idaho')
    // Nothing is written when the lease passes: the board works it out from the clock.
    await card(page, 'Ghost').locator('.claim-lapsed').waitFor({ timeout: 10_000 })
    await expect(label.locator('.claim-holder').textContent()).resolves.toBe(
      'Duncan, 11th of House Idaho',
    )
    await expect(label.locator('.claim-state').textContent()).resolves.toBe('lapsed')

    // Keyboard: Enter opens the card, the lapsed claim is explained, and it can be edited.
    await card(page, 'Ghost').focus()
    await page.keyboard.press('Enter')
    const panel = page.getByTestId('card-panel')
    await expect(panel.getByTestId('claim-details').textContent()).resolves.toContain(
      'claim lapsed; the card is free',
    )
    await panel.getByLabel('Priority', { exact: true }).selectOption('urgent')
    await expect
      .poll(async () => (await agent.ok('get_task', { taskId: task.id })).task.priority)
      .toBe('urgent')
    await page.keyboard.press('Escape')
    await panel.waitFor({ state: 'detached' })
    await context.close()
  })

  test('a claim its holder released shows as released, not lapsed, on the board and in the card', async () => {
    const { context, page, agent, orgId } = await signedInContext(browser, server.url)
    await openBoard(page, orgId)
    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', { columnId: columns[0].id, title: 'Let go' })
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Jessica', house: 'Atreides' })
    const label = card(page, 'Let go').locator('.claim')
    await expect.poll(() => label.getAttribute('class')).toContain('claim-live')
    await agent.ok('release_task', { taskId: task.id })
    await expect.poll(() => label.locator('.claim-state').textContent()).toBe('released')
    await expect(label.getAttribute('title')).resolves.toMatch(/^Released by its holder at /)

    await card(page, 'Let go').focus()
    await page.keyboard.press('Enter')
    const details = page.getByTestId('card-panel').getByTestId('claim-details')
    await expect(details.textContent()).resolves.toContain('released the card; it is free')
    await expect(details.textContent()).resolves.toContain('Released at')
    await context.close()
  })
})
