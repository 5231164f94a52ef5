import { execFile } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { promisify } from 'node:util'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startServer, type TestServer } from '../support/server.ts'
import {
  card,
  launchBrowser,
  openBoard,
  serverAndBrowser,
  signedInContext,
  watchErrors,
} from './support.ts'

const run = promisify(execFile)

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
    // The removal reaches the page's board live, a moment after storage has it.
    await expect.poll(() => page.locator('[data-card-id]').count()).toBe(0)
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

  test('a new API key comes with set-ups ready to paste, and they work as shown: curl, MCP over HTTP, Claude Code', async () => {
    const { context, page, orgId } = await signedInContext(browser, server.url)
    await page.goto(`/o/${orgId}/settings/keys`)
    await page.getByLabel('Key name').fill('Pasted agent')
    await page.getByRole('button', { name: 'Create key' }).click()
    const key = (await page.getByTestId('api-key-value').textContent()) ?? ''
    expect(key).toMatch(/^cb_/)
    const usage = page.getByTestId('key-usage')
    const snippet = async (tab: string, id: string) => {
      await usage.getByRole('tab', { name: tab }).click()
      return (await usage.getByTestId(`key-usage-${id}`).textContent()) ?? ''
    }

    // The curl line, run by a shell exactly as shown, answers as the key's robot.
    const curl = await snippet('curl', 'curl')
    // (Not spawnSync: the server answering it runs in this process.)
    const ran = await run('sh', ['-c', curl], { timeout: 10_000 })
    expect(JSON.parse(ran.stdout).organization.id).toBe(orgId)

    // The MCP configuration, given to the SDK's own client, connects and calls a tool.
    const config = JSON.parse(await snippet('MCP over HTTP', 'mcp-http'))
    const entry = config.mcpServers.corkboard
    expect(entry.url).toBe(`${server.url}/mcp`)
    const client = new Client({ name: 'pasted-config', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(entry.url), {
        requestInit: { headers: entry.headers },
      }),
    )
    const whoami = await client.callTool({ name: 'whoami', arguments: {} })
    expect((whoami.structuredContent as { organization: { id: string } }).organization.id).toBe(
      orgId,
    )
    await client.close()

    // Claude Code's one-liner and the stdio set-up carry the key and this service's address.
    const claude = await snippet('Claude Code', 'claude')
    expect(claude).toBe(
      `claude mcp add --transport http corkboard '${server.url}/mcp' --header 'Authorization: Bearer ${key}'`,
    )
    const stdio = JSON.parse(await snippet('MCP over stdio', 'mcp-stdio')).mcpServers.corkboard
    expect(stdio.args).toEqual([
      '/path/to/corkboard/server/faces/mcp/stdio.ts',
      '--url',
      server.url,
    ])
    expect(stdio.env).toEqual({ CORKBOARD_API_KEY: key })
    await context.close()
  })
})

describe('settings say what is wrong and where to go (a server with the default settings)', () => {
  const running = serverAndBrowser()

  test('a webhook refused for a loopback or private address says how an operator allows it (WEBHOOK_ALLOW_PRIVATE)', async () => {
    const { context, page, orgId } = await signedInContext(running.browser, running.server.url)
    await page.goto(`/o/${orgId}/settings/webhooks`)
    await page.getByLabel('Receiving URL').fill('http://127.0.0.1:9/hooks')
    await page.getByRole('button', { name: 'Register webhook' }).click()
    const refusal = page.locator('.toasts [role="alert"]')
    await expect
      .poll(() => refusal.textContent())
      .toMatch(/public address.*127\.0\.0\.1.*WEBHOOK_ALLOW_PRIVATE=1/)
    await context.close()
  })

  test('an unknown settings address says so and links the sections, instead of showing Members', async () => {
    const { context, page, orgId } = await signedInContext(running.browser, running.server.url)
    await page.goto(`/o/${orgId}/settings/api-keys`)
    const notice = page.getByRole('alert').filter({ hasText: 'settings page' })
    await expect(notice.textContent()).resolves.toContain('There is no settings page “api-keys”')
    await expect(page.getByRole('heading', { name: 'Invite someone' }).count()).resolves.toBe(0)
    await notice.getByRole('link', { name: 'API keys' }).click()
    await page.getByLabel('Key name').waitFor()
    expect(page.url()).toMatch(/\/settings\/keys$/)
    await context.close()
  })
})
