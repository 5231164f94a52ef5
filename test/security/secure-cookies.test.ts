import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { send, setCookie } from './support.ts'

const signUp = (url: string, headers: Record<string, string> = {}) =>
  send(url, 'POST', '/api/app/signup', {
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({
      email: `p-${crypto.randomUUID()}@example.test`,
      password: 'correct horse battery',
      name: 'Pat',
      organizationName: 'Acme',
    }),
  })

const logIn = (url: string, email: string) =>
  send(url, 'POST', '/api/app/login', {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'correct horse battery' }),
  })

/**
 * A cookie without `Secure` is also sent over plain HTTP, where anyone on the path reads
 * it. Behind a TLS proxy the service itself speaks plain HTTP, so it must learn that the
 * browser uses https from PUBLIC_URL or, behind a proxy the operator declared
 * (TRUST_PROXY=1), from X-Forwarded-Proto.
 */
describe.each(STORAGES)(
  'the session and device cookies are Secure whenever the browser reaches the service over https (%s)',
  (kind) => {
    let https: TestServer
    let plain: TestServer
    let proxied: TestServer

    beforeAll(async () => {
      https = await startServer(kind, { publicUrl: 'https://board.example.test' })
      plain = await startServer(kind)
      proxied = await startServer(kind, { trustProxy: true })
    })
    afterAll(async () => {
      await https.close()
      await plain.close()
      await proxied.close()
    })

    test('with an https PUBLIC_URL, sign-up and sign-in set Secure cookies (no X-Forwarded-Proto needed)', async () => {
      const created = await signUp(https.url)
      expect(created.status).toBe(201)
      expect(setCookie(created.headers, 'cb_session')).toMatch(/; Secure/)
      const res = await logIn(https.url, created.body.user.email)
      expect(res.status).toBe(200)
      expect(setCookie(res.headers, 'cb_session')).toMatch(/; Secure/)
      expect(setCookie(res.headers, 'cb_device')).toMatch(/; Secure/)
    })

    test('signing out over https clears the session cookie with the same Secure flag', async () => {
      const created = await signUp(https.url)
      const session = setCookie(created.headers, 'cb_session')?.split(';')[0] ?? ''
      const out = await send(https.url, 'POST', '/api/app/logout', { headers: { cookie: session } })
      expect(out.status).toBe(204)
      const cleared = setCookie(out.headers, 'cb_session')
      expect(cleared).toMatch(/Max-Age=0/)
      expect(cleared).toMatch(/; Secure/)
    })

    test('behind a declared proxy (TRUST_PROXY=1), X-Forwarded-Proto: https with no PUBLIC_URL makes them Secure too', async () => {
      const created = await signUp(proxied.url, { 'x-forwarded-proto': 'https' })
      expect(setCookie(created.headers, 'cb_session')).toMatch(/; Secure/)
      expect(setCookie(created.headers, 'cb_device')).toMatch(/; Secure/)
      const plainly = await signUp(proxied.url, { 'x-forwarded-proto': 'http' })
      expect(setCookie(plainly.headers, 'cb_session')).not.toMatch(/Secure/)
    })

    test('without TRUST_PROXY, X-Forwarded-Proto is anyone’s header and is ignored: over plain http the cookies are not Secure', async () => {
      const created = await signUp(plain.url, { 'x-forwarded-proto': 'https' })
      expect(setCookie(created.headers, 'cb_session')).not.toMatch(/Secure/)
      expect(setCookie(created.headers, 'cb_device')).not.toMatch(/Secure/)
      const res = await send(plain.url, 'POST', '/api/app/logout', {
        headers: {
          cookie: setCookie(created.headers, 'cb_session')?.split(';')[0] ?? '',
          'x-forwarded-proto': 'https',
        },
      })
      expect(setCookie(res.headers, 'cb_session')).not.toMatch(/Secure/)
    })

    test('over plain http with no PUBLIC_URL (a local install), they are not, or the browser would drop them', async () => {
      const created = await signUp(plain.url)
      expect(setCookie(created.headers, 'cb_session')).not.toMatch(/Secure/)
      const res = await logIn(plain.url, created.body.user.email)
      expect(setCookie(res.headers, 'cb_session')).not.toMatch(/Secure/)
      expect(setCookie(res.headers, 'cb_device')).not.toMatch(/Secure/)
    })

    test('a mangled session cookie is no session: 401, never a 500', async () => {
      const res = await send(plain.url, 'GET', '/api/app/me', {
        headers: { cookie: 'cb_session=%E0' },
      })
      expect(res.status).toBe(401)
      expect(res.body.error).toBe('Not signed in')
    })
  },
)
