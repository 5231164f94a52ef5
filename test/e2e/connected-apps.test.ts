import { createHash, randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { Page } from 'playwright-core'
import { describe, expect, test } from 'vitest'
import { Person } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'
import { newContext, serverAndBrowser, signedInContext, watchErrors } from './support.ts'

/**
 * MCP sign-in as a person meets it: an assistant sends them to the consent page (the
 * server's own HTML, no app script), they approve in the browser, the assistant's token
 * works on /mcp, and Settings lists the app beside the API keys until they disconnect it.
 */

/** A loopback redirect URI that catches the authorization code, as a desktop client does. */
async function callbackReceiver(): Promise<{ uri: string; code: Promise<URL>; server: Server }> {
  let arrived!: (url: URL) => void
  const code = new Promise<URL>((resolve) => {
    arrived = resolve
  })
  const server = createServer((req, res) => {
    arrived(new URL(req.url ?? '/', 'http://127.0.0.1'))
    res.setHeader('content-type', 'text/html')
    res.end('<p>You may close this window.</p>')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return { uri: `http://127.0.0.1:${port}/callback`, code, server }
}

/**
 * What an assistant does to connect, with `page` as the person's browser: registers, sends
 * the person to the consent page, and trades the code it gets back for tokens. `onConsent`
 * plays the person on the page before they approve.
 */
async function connect(
  page: Page,
  url: string,
  clientName: string,
  onConsent: () => Promise<void> = async () => {},
): Promise<string> {
  const callback = await callbackReceiver()
  try {
    const registered = await fetch(`${url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: clientName,
        redirect_uris: [callback.uri],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      }),
    })
    expect(registered.status).toBe(201)
    const { client_id } = await registered.json()
    const verifier = randomBytes(32).toString('base64url')
    const authorize = new URL(`${url}/oauth/authorize`)
    for (const [k, v] of Object.entries({
      response_type: 'code',
      client_id,
      redirect_uri: callback.uri,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      state: 'from-the-desk',
      resource: `${url}/mcp`,
    })) {
      authorize.searchParams.set(k, v)
    }
    await page.goto(authorize.toString())
    await onConsent()
    await page.getByText(clientName).first().waitFor()
    await page.getByText('127.0.0.1').first().waitFor()
    await page.getByRole('button', { name: 'Approve' }).click()
    const back = await callback.code
    expect(back.searchParams.get('state')).toBe('from-the-desk')
    const token = await fetch(`${url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: back.searchParams.get('code') ?? '',
        redirect_uri: callback.uri,
        client_id,
        code_verifier: verifier,
        resource: `${url}/mcp`,
      }),
    })
    expect(token.status).toBe(200)
    return (await token.json()).access_token
  } finally {
    callback.server.close()
  }
}

const mcpWith = (url: string, token: string) =>
  fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-06-18',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  })

describe.each(STORAGES)('connecting an assistant by signing in (%s)', (kind) => {
  const running = serverAndBrowser(kind)

  test('approving on the consent page connects the app; Settings lists it and Disconnect refuses its token at once', async () => {
    const url = running.server.url
    const { context, page, orgId } = await signedInContext(running.browser, url)
    const errors = watchErrors(page)
    const accessToken = await connect(page, url, 'Desk Assistant')
    expect((await mcpWith(url, accessToken)).status).toBe(200)

    await page.goto(`${url}/o/${orgId}/settings/keys`)
    const row = page
      .getByTestId('connected-apps-table')
      .getByRole('row', { name: /Desk Assistant/ })
    await row.waitFor()
    await expect(row.textContent()).resolves.toContain('127.0.0.1')
    await row.getByRole('button', { name: 'Disconnect' }).click()
    await page.getByRole('dialog').getByRole('button', { name: 'Disconnect' }).click()
    await page.getByTestId('toast-success').waitFor()
    await row.waitFor({ state: 'detached' })
    expect((await mcpWith(url, accessToken)).status).toBe(401)
    expect(errors).toEqual([])
    await context.close()
  })

  test('someone not signed in signs in on the page and comes back to the consent', async () => {
    const url = running.server.url
    const person = new Person(url)
    await person.signUp({ password: 'correct horse battery' })
    const context = await newContext(running.browser, url)
    const page = await context.newPage()
    const accessToken = await connect(page, url, 'Phone Assistant', async () => {
      await page.getByLabel('E-mail').fill(person.user?.email ?? '')
      await page.getByLabel('Password').fill('correct horse battery')
      await page.getByRole('button', { name: 'Sign in' }).click()
    })
    expect((await mcpWith(url, accessToken)).status).toBe(200)
    await context.close()
  })
})
