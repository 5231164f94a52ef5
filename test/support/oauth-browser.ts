import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js'
import { expect } from 'vitest'
import type { Person } from './client.ts'

export const PASSWORD = 'correct horse battery'
export const REDIRECT = 'http://127.0.0.1:33418/callback'

/** An MCP client's OAuth state, kept in memory as a desktop client keeps it on disk. */
export class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined
  saved: OAuthTokens | undefined
  verifier = ''
  authorizationUrl: URL | undefined
  readonly redirectUrl = REDIRECT
  /** Set: the client is named by its metadata document at this URL, not registered. */
  readonly clientMetadataUrl: string | undefined
  readonly clientMetadata: OAuthClientMetadata = {
    client_name: 'Claude',
    redirect_uris: [REDIRECT],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  }
  constructor(clientMetadataUrl?: string) {
    this.clientMetadataUrl = clientMetadataUrl
  }
  clientInformation() {
    return this.info
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info
  }
  tokens() {
    return this.saved
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier
  }
  codeVerifier() {
    return this.verifier
  }
}

/** The hidden and named fields of the page's (only) form. */
export function formFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[m[1] as string] = (m[2] as string)
      .replaceAll('&quot;', '"')
      .replaceAll('&#39;', "'")
      .replaceAll('&lt;', '<')
      .replaceAll('&gt;', '>')
      .replaceAll('&amp;', '&')
  }
  return fields
}

/**
 * Plays the person's browser: follows the authorization URL, signs in on the form the
 * server shows (once), reads the consent form and submits it. Returns the redirect it ends
 * on (the client's redirect URI with `code` or `error`).
 */
export class Browser {
  cookie = ''
  readonly url: string
  readonly person: Person
  constructor(url: string, person: Person) {
    this.url = url
    this.person = person
  }

  async get(address: string): Promise<Response> {
    return fetch(address, { headers: { cookie: this.cookie }, redirect: 'manual' })
  }

  async post(
    path: string,
    fields: Record<string, string>,
    headers: Record<string, string> = { origin: this.url },
  ): Promise<Response> {
    const res = await fetch(`${this.url}${path}`, {
      method: 'POST',
      headers: {
        cookie: this.cookie,
        'content-type': 'application/x-www-form-urlencoded',
        ...headers,
      },
      body: new URLSearchParams(fields).toString(),
      redirect: 'manual',
    })
    const set = res.headers.getSetCookie().find((c) => c.startsWith('cb_session='))
    if (set) this.cookie = set.split(';')[0] ?? ''
    return res
  }

  /** The consent page's form fields, signing in first when the server asks. */
  async consentForm(authorizationUrl: URL | string): Promise<Record<string, string>> {
    let page = await this.get(String(authorizationUrl))
    let html = await page.text()
    if (html.includes('action="/oauth/sign-in"')) {
      const signIn = await this.post('/oauth/sign-in', {
        ...formFields(html),
        email: this.person.user?.email ?? '',
        password: PASSWORD,
      })
      expect(signIn.status).toBe(303)
      const back = signIn.headers.get('location') ?? ''
      expect(back.startsWith('/oauth/authorize?')).toBe(true)
      page = await this.get(`${this.url}${back}`)
      html = await page.text()
    }
    expect(page.status).toBe(200)
    expect(html).toContain('action="/oauth/authorize"')
    return { ...formFields(html), org_id: this.person.orgId }
  }

  async decide(authorizationUrl: URL | string, decision: 'approve' | 'deny'): Promise<URL> {
    const res = await this.post('/oauth/authorize', {
      ...(await this.consentForm(authorizationUrl)),
      decision,
    })
    expect(res.status).toBe(303)
    return new URL(res.headers.get('location') ?? '')
  }
}
