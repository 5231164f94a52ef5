import {
  auth,
  discoverAuthorizationServerMetadata,
  exchangeAuthorization,
  type OAuthClientProvider,
  refreshAuthorization,
  startAuthorization,
  UnauthorizedError,
} from '@modelcontextprotocol/sdk/client/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {
  AuthorizationServerMetadata,
  OAuthClientInformationMixed,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { listGrants, revokeGrant } from '../../server/auth/oauth-grants.ts'
import { Person } from '../support/client.ts'
import { Browser, MemoryProvider, PASSWORD, REDIRECT } from '../support/oauth-browser.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { invited } from '../webhooks/support.ts'

const text = (result: unknown) =>
  ((result as CallToolResult).content[0] as { type: 'text'; text: string }).text

async function mcpClient(url: string, provider: OAuthClientProvider): Promise<Client> {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider: provider }),
  )
  return client
}

const postMcp = (url: string, token: string) =>
  fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  })

describe.each(STORAGES)('MCP sign-in by OAuth (%s)', (kind) => {
  let server: TestServer
  let person: Person
  let browser: Browser
  let metadata: AuthorizationServerMetadata
  const provider = new MemoryProvider()

  beforeAll(async () => {
    server = await startServer(kind)
    person = new Person(server.url)
    await person.signUp({ password: PASSWORD })
    browser = new Browser(server.url, person)
  })
  afterAll(() => server?.close())

  test('POST /mcp without credentials, or with a bad key, is a 401 pointing at the protected resource metadata', async () => {
    const challenge = `Bearer resource_metadata="${server.url}/.well-known/oauth-protected-resource/mcp"`
    const bare = await fetch(`${server.url}/mcp`, { method: 'POST', body: '{}' })
    expect(bare.status).toBe(401)
    expect(bare.headers.get('www-authenticate')).toBe(challenge)
    expect((await bare.json()).error).toMatch(/organisation API key.*OAuth sign-in/)
    const badKey = await postMcp(server.url, 'cb_nonsense')
    expect(badKey.status).toBe(401)
    expect(badKey.headers.get('www-authenticate')).toBe(challenge)

    const resource = await (
      await fetch(`${server.url}/.well-known/oauth-protected-resource/mcp`)
    ).json()
    expect(resource).toMatchObject({
      resource: `${server.url}/mcp`,
      authorization_servers: [server.url],
    })
    const found = await discoverAuthorizationServerMetadata(server.url)
    expect(found).toMatchObject({
      issuer: server.url,
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['none'],
      registration_endpoint: `${server.url}/oauth/register`,
      revocation_endpoint: `${server.url}/oauth/revoke`,
    })
    metadata = found as AuthorizationServerMetadata
  })

  test('the SDK client discovers, registers, signs in through consent, lists tools and writes as the grant’s robot', async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      authProvider: provider,
    })
    const first = new Client({ name: 'oauth-test', version: '1.0.0' })
    await expect(first.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError)
    expect(provider.info?.client_id).toBeTruthy()
    const authorizationUrl = provider.authorizationUrl as URL
    expect(authorizationUrl.searchParams.get('resource')).toBe(`${server.url}/mcp`)
    const redirect = await browser.decide(authorizationUrl, 'approve')
    expect(`${redirect.origin}${redirect.pathname}`).toBe(REDIRECT)
    expect(redirect.searchParams.get('state')).toBe(authorizationUrl.searchParams.get('state'))
    await transport.finishAuth(redirect.searchParams.get('code') ?? '')
    expect(provider.saved?.access_token).toMatch(/^cbat_/)
    expect(provider.saved?.expires_in).toBe(3600)

    const client = await mcpClient(server.url, provider)
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toContain('create_task')
    const board = JSON.parse(text(await client.callTool({ name: 'get_board', arguments: {} })))
    const created = JSON.parse(
      text(
        await client.callTool({
          name: 'create_task',
          arguments: { title: 'Written through OAuth', columnId: board.columns[0].id },
        }),
      ),
    )
    const [grant] = await listGrants(server.app.db, person.orgId)
    expect(grant).toMatchObject({
      clientName: 'Claude',
      redirectHost: '127.0.0.1:33418',
      grantedByEmail: person.user?.email,
    })
    expect(grant?.lastUsedAt).not.toBeNull()
    expect(created.task?.createdByEmail ?? created.createdByEmail).toBe(grant?.robotEmail)
    const robot = await server.app.db.query<{ name: string }>(
      'select name from users where email = $1',
      [grant?.robotEmail],
    )
    expect(robot[0]?.name).toBe(`Claude via ${person.user?.email}`)
    // The grant is no API key: the keys list does not show it.
    expect((await person.request('GET', `/api/app/orgs/${person.orgId}/api-keys`)).body).toEqual({
      apiKeys: [],
    })
    await client.close()
  })

  test('an access token is good for /mcp only: /api/agent and the app API refuse it', async () => {
    const token = provider.saved?.access_token ?? ''
    const agent = await fetch(`${server.url}/api/agent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'get_board', params: {} }),
    })
    expect(agent.status).toBe(401)
    expect((await agent.json()).error).toMatch(/\/mcp only/)
    const app = await fetch(`${server.url}/api/app/me`, {
      headers: { authorization: `Bearer ${token}` },
    })
    expect(app.status).toBe(401)
  })

  test('the refresh token rotates; the new access token works; a reused refresh token revokes the grant', async () => {
    const before = provider.saved as OAuthTokens
    expect(await auth(provider, { serverUrl: `${server.url}/mcp` })).toBe('AUTHORIZED')
    const after = provider.saved as OAuthTokens
    expect(after.refresh_token).not.toBe(before.refresh_token)
    expect((await postMcp(server.url, after.access_token)).status).toBe(200)

    await expect(
      refreshAuthorization(server.url, {
        metadata,
        clientInformation: provider.info as OAuthClientInformationMixed,
        refreshToken: before.refresh_token as string,
      }),
    ).rejects.toThrow(/used before/)
    expect(await listGrants(server.app.db, person.orgId)).toEqual([])
    const refused = await postMcp(server.url, after.access_token)
    expect(refused.status).toBe(401)
    expect(refused.headers.get('www-authenticate')).toMatch(/resource_metadata=/)
    await expect(
      refreshAuthorization(server.url, {
        metadata,
        clientInformation: provider.info as OAuthClientInformationMixed,
        refreshToken: after.refresh_token as string,
      }),
    ).rejects.toThrow(/unknown, expired, revoked/)
  })

  /** A fresh authorization (the browser is signed in by now): its code and verifier. */
  const authorize = async (state = 'st-1') => {
    const clientInformation = provider.info as OAuthClientInformationMixed
    const { authorizationUrl, codeVerifier } = await startAuthorization(server.url, {
      metadata,
      clientInformation,
      redirectUrl: REDIRECT,
      state,
      resource: new URL(`${server.url}/mcp`),
    })
    return { authorizationUrl, codeVerifier, clientInformation }
  }
  const exchange = (
    clientInformation: OAuthClientInformationMixed,
    code: string,
    codeVerifier: string,
    redirectUri = REDIRECT,
  ) =>
    exchangeAuthorization(server.url, {
      metadata,
      clientInformation,
      authorizationCode: code,
      codeVerifier,
      redirectUri,
      resource: new URL(`${server.url}/mcp`),
    })

  test('the revocation endpoint ends a grant at once; revokeGrant does too', async () => {
    const { authorizationUrl, codeVerifier, clientInformation } = await authorize()
    const code = (await browser.decide(authorizationUrl, 'approve')).searchParams.get('code')
    const tokens = await exchange(clientInformation, code ?? '', codeVerifier)
    expect((await postMcp(server.url, tokens.access_token)).status).toBe(200)
    const revoke = await fetch(`${server.url}/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        token: tokens.refresh_token ?? '',
        client_id: clientInformation.client_id,
      }),
    })
    expect(revoke.status).toBe(200)
    expect((await postMcp(server.url, tokens.access_token)).status).toBe(401)

    const again = await authorize()
    const code2 = (await browser.decide(again.authorizationUrl, 'approve')).searchParams.get('code')
    const tokens2 = await exchange(again.clientInformation, code2 ?? '', again.codeVerifier)
    const [grant] = await listGrants(server.app.db, person.orgId)
    const revoked = await revokeGrant(server.app.db, person.orgId, grant?.id ?? '')
    expect(revoked?.keyId).toBeTruthy()
    expect((await postMcp(server.url, tokens2.access_token)).status).toBe(401)
    expect(await revokeGrant(server.app.db, person.orgId, grant?.id ?? '')).toBeUndefined()
  })

  test('Settings lists the connected app with its last use, only to owners and admins; disconnecting it refuses its token at once', async () => {
    const { authorizationUrl, codeVerifier, clientInformation } = await authorize()
    const code = (await browser.decide(authorizationUrl, 'approve')).searchParams.get('code')
    const tokens = await exchange(clientInformation, code ?? '', codeVerifier)
    expect((await postMcp(server.url, tokens.access_token)).status).toBe(200)
    const apps = `/api/app/orgs/${person.orgId}/connected-apps`
    const listed = await person.request('GET', apps)
    expect(listed.status).toBe(200)
    const app = (listed.body.apps as { id: string; lastUsedAt: string | null }[]).at(-1)
    expect(app).toMatchObject({
      clientName: 'Claude',
      redirectHost: '127.0.0.1:33418',
      grantedByEmail: person.user?.email,
    })
    expect(app?.lastUsedAt).not.toBeNull()

    const member = await invited(person, 'member')
    expect((await member.request('GET', apps)).status).toBe(403)
    expect((await member.request('DELETE', `${apps}/${app?.id}`)).status).toBe(403)
    expect((await postMcp(server.url, tokens.access_token)).status).toBe(200)

    expect((await person.request('DELETE', `${apps}/${app?.id}`)).status).toBe(204)
    expect((await postMcp(server.url, tokens.access_token)).status).toBe(401)
    const after = (await person.request('GET', apps)).body.apps as { id: string }[]
    expect(after.map((a) => a.id)).not.toContain(app?.id)
    expect((await person.request('DELETE', `${apps}/${app?.id}`)).status).toBe(404)
  })

  test('a wrong PKCE verifier, or another redirect URI at the token endpoint, gets no token (and spends the code)', async () => {
    const { authorizationUrl, codeVerifier, clientInformation } = await authorize()
    const code = (await browser.decide(authorizationUrl, 'approve')).searchParams.get('code') ?? ''
    await expect(exchange(clientInformation, code, `${codeVerifier.slice(1)}x`)).rejects.toThrow(
      /code_verifier/,
    )
    await expect(exchange(clientInformation, code, codeVerifier)).rejects.toThrow(/spent/)

    const second = await authorize()
    const code2 =
      (await browser.decide(second.authorizationUrl, 'approve')).searchParams.get('code') ?? ''
    await expect(
      exchange(
        second.clientInformation,
        code2,
        second.codeVerifier,
        'http://127.0.0.1:33418/other',
      ),
    ).rejects.toThrow(/redirect_uri/)
  })

  test('an unregistered redirect URI is shown as an error, never redirected to', async () => {
    const { authorizationUrl } = await authorize()
    authorizationUrl.searchParams.set('redirect_uri', 'https://evil.example/callback')
    const res = await browser.get(String(authorizationUrl))
    expect(res.status).toBe(400)
    expect(res.headers.get('location')).toBeNull()
    expect(await res.text()).toContain('not one this client registered')
  })

  test('deny redirects back with error=access_denied and the state', async () => {
    const { authorizationUrl } = await authorize('st-deny')
    const redirect = await browser.decide(authorizationUrl, 'deny')
    expect(redirect.searchParams.get('error')).toBe('access_denied')
    expect(redirect.searchParams.get('state')).toBe('st-deny')
    expect(redirect.searchParams.get('code')).toBeNull()
  })

  test('a cross-site consent post is refused: another Origin, or no token of this session', async () => {
    const { authorizationUrl } = await authorize()
    const fields: Record<string, string> = {
      ...(await browser.consentForm(authorizationUrl)),
      decision: 'approve',
    }
    const foreign = await browser.post('/oauth/authorize', fields, {
      origin: 'https://evil.example',
    })
    expect(foreign.status).toBe(403)
    const { csrf: _csrf, ...withoutToken } = fields
    const noToken = await browser.post('/oauth/authorize', withoutToken)
    expect(noToken.status).toBe(403)
    const crossSite = await browser.post('/oauth/authorize', fields, {
      'sec-fetch-site': 'cross-site',
    })
    expect(crossSite.status).toBe(403)
    // Another session's token is no token for this one.
    const other = new Browser(server.url, person)
    const otherFields = await other.consentForm(authorizationUrl)
    const swapped = await browser.post('/oauth/authorize', {
      ...fields,
      csrf: otherFields.csrf ?? '',
    })
    expect(swapped.status).toBe(403)
    expect((await browser.post('/oauth/authorize', fields)).status).toBe(303)
  })

  test('registration refuses redirect URIs that are neither https nor loopback http', async () => {
    const register = (redirect_uris: string[]) =>
      fetch(`${server.url}/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'X', redirect_uris }),
      })
    const plain = await register(['http://example.com/cb'])
    expect(plain.status).toBe(400)
    expect(await plain.json()).toMatchObject({ error: 'invalid_redirect_uri' })
    expect((await register(['https://claude.ai/api/mcp/auth_callback'])).status).toBe(201)
    expect((await register(['http://localhost:6274/oauth/callback'])).status).toBe(201)
  })
})
