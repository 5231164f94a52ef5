import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { auth, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { listGrants } from '../../server/auth/oauth-grants.ts'
import { Person } from '../support/client.ts'
import { Browser, MemoryProvider, PASSWORD, REDIRECT } from '../support/oauth-browser.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

/**
 * Client ID metadata documents, served over real HTTPS on loopback with a certificate made
 * for this file; the server trusts that certificate's authority through createApp's option.
 */
function selfSignedCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cb-cimd-'))
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-days',
        '1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    )
    return {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** An https server answering documents by path, counting the requests for each. */
class DocumentHost {
  readonly documents = new Map<string, unknown>()
  readonly requests = new Map<string, number>()
  readonly server: Server
  origin = ''
  constructor(tls: { key: string; cert: string }) {
    this.server = createServer(tls, (req, res) => {
      const path = req.url ?? '/'
      this.requests.set(path, (this.requests.get(path) ?? 0) + 1)
      const doc = this.documents.get(path)
      if (doc === undefined) {
        res.writeHead(404).end()
        return
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc))
    })
  }
  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    this.origin = `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`
  }
  /** Publishes a document at `path` and returns its URL, the client_id. */
  publish(path: string, doc: (url: string) => Record<string, unknown>): string {
    const url = `${this.origin}${path}`
    this.documents.set(path, doc(url))
    return url
  }
  close(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
}

const clientDocument = (url: string) => ({
  client_id: url,
  client_name: 'Claude Desktop',
  redirect_uris: [REDIRECT],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none',
})

/** An authorization request as a client sends it, PKCE and all. */
function authorizeUrl(server: string, clientId: string, redirectUri = REDIRECT): string {
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri,
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
    state: 'xyz',
  })
  return `${server}/oauth/authorize?${params}`
}

/** The authorization endpoint shows an error page for it, and redirects nowhere. */
async function expectErrorPage(url: string, message: RegExp): Promise<void> {
  const res = await fetch(url, { redirect: 'manual' })
  expect(res.status).toBe(400)
  expect(res.headers.get('location')).toBeNull()
  expect(await res.text()).toMatch(message)
}

describe.each(STORAGES)('MCP sign-in with a client ID metadata document (%s)', (kind) => {
  let host: DocumentHost
  let server: TestServer
  /** The same service without OAUTH_ALLOW_PRIVATE_CLIENT_DOCS. */
  let guarded: TestServer
  let person: Person

  beforeAll(async () => {
    const tls = selfSignedCertificate()
    host = new DocumentHost(tls)
    await host.listen()
    server = await startServer(
      kind,
      { oauthAllowPrivateClientDocs: true },
      { oauthClientDocsCa: tls.cert },
    )
    guarded = await startServer(kind, {}, { oauthClientDocsCa: tls.cert })
    person = new Person(server.url)
    await person.signUp({ password: PASSWORD })
  })
  afterAll(async () => {
    await server?.close()
    await guarded?.close()
    await host?.close()
  })

  test('the metadata says client_id_metadata_document_supported', async () => {
    const meta = await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json()
    expect(meta.client_id_metadata_document_supported).toBe(true)
  })

  test('the SDK client with a clientMetadataUrl signs in without registering; the consent page and the grant show the document’s client_name', async () => {
    const docUrl = host.publish('/clients/claude.json', clientDocument)
    const provider = new MemoryProvider(docUrl)
    const called: string[] = []
    const recorded = (input: string | URL, init?: RequestInit) => {
      called.push(new URL(input).pathname)
      return fetch(input, init)
    }
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), {
      authProvider: provider,
      fetch: recorded,
    })
    await expect(
      new Client({ name: 'cimd-test', version: '1.0.0' }).connect(transport),
    ).rejects.toBeInstanceOf(UnauthorizedError)
    expect(provider.info?.client_id).toBe(docUrl)
    const authorizationUrl = provider.authorizationUrl as URL
    expect(authorizationUrl.searchParams.get('client_id')).toBe(docUrl)

    const browser = new Browser(server.url, person)
    await browser.consentForm(authorizationUrl)
    const consent = await (await browser.get(String(authorizationUrl))).text()
    expect(consent).toContain('Claude Desktop')
    expect(consent).toContain('127.0.0.1:33418')
    const redirect = await browser.decide(authorizationUrl, 'approve')
    expect(`${redirect.origin}${redirect.pathname}`).toBe(REDIRECT)
    await transport.finishAuth(redirect.searchParams.get('code') ?? '')
    expect(provider.saved?.access_token).toMatch(/^cbat_/)

    const client = new Client({ name: 'cimd-test', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { authProvider: provider }),
    )
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('create_task')
    await client.close()
    expect(await auth(provider, { serverUrl: `${server.url}/mcp` })).toBe('AUTHORIZED')

    expect(called).not.toContain('/oauth/register')
    expect(called).toContain('/oauth/token')
    const grants = await listGrants(server.app.db, person.orgId)
    expect(grants.map((g) => [g.clientName, g.redirectHost])).toEqual([
      ['Claude Desktop', '127.0.0.1:33418'],
    ])
    expect(
      (await server.app.db.query<{ id: string }>('select id from oauth_clients')).map((r) => r.id),
    ).toEqual([docUrl])
    // Authorize, consent, approval and the token exchange share one fetch (the cache).
    expect(host.requests.get('/clients/claude.json')).toBe(1)
  })

  test('a document naming another client_id is refused on an error page', async () => {
    const liar = host.publish('/clients/liar.json', (url) => ({
      ...clientDocument(url),
      client_id: `${host.origin}/clients/claude.json`,
    }))
    await expectErrorPage(authorizeUrl(server.url, liar), /names another client_id/)
  })

  test('a redirect URI the document does not list is refused on an error page', async () => {
    const docUrl = host.publish('/clients/listed.json', clientDocument)
    await expectErrorPage(
      authorizeUrl(server.url, docUrl, 'http://127.0.0.1:9/elsewhere'),
      /not one this client registered/,
    )
  })

  test('a document whose redirect URIs are neither https nor loopback http is refused', async () => {
    const docUrl = host.publish('/clients/plain-http.json', (url) => ({
      ...clientDocument(url),
      redirect_uris: ['http://example.com/callback'],
    }))
    await expectErrorPage(
      authorizeUrl(server.url, docUrl, 'http://example.com/callback'),
      /must be https, or http to localhost/,
    )
  })

  test('an http client_id is refused without fetching it', async () => {
    host.publish('/clients/over-http.json', clientDocument)
    const httpUrl = `${host.origin.replace('https:', 'http:')}/clients/over-http.json`
    await expectErrorPage(authorizeUrl(server.url, httpUrl), /must be an https URL/)
    expect(host.requests.get('/clients/over-http.json')).toBeUndefined()
  })

  test('a document on a loopback address is refused unless OAUTH_ALLOW_PRIVATE_CLIENT_DOCS=1, without a request reaching it', async () => {
    const docUrl = host.publish('/clients/private.json', clientDocument)
    await expectErrorPage(
      authorizeUrl(guarded.url, docUrl),
      /loopback address.*OAUTH_ALLOW_PRIVATE_CLIENT_DOCS=1/,
    )
    expect(host.requests.get('/clients/private.json')).toBeUndefined()
  })

  test('the token endpoint refuses a code for a document client_id whose document now refuses', async () => {
    const docUrl = host.publish('/clients/gone.json', clientDocument)
    host.documents.delete('/clients/gone.json')
    const res = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: docUrl,
        code: 'whatever',
        code_verifier: 'x'.repeat(43),
        redirect_uri: REDIRECT,
      }).toString(),
    })
    expect(res.status).toBe(401)
    expect(await res.json()).toMatchObject({ error: 'invalid_client' })
  })
})
