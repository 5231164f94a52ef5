import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { send } from './support.ts'

/**
 * The app API is authenticated by a cookie the browser attaches to any request for the
 * service, whichever page sends it. A page elsewhere can send a form or a text/plain body
 * without asking first (no CORS preflight), so the service refuses what only such a page
 * would send: a foreign Origin, Sec-Fetch-Site cross-site, a body that is not JSON.
 */
describe.each(STORAGES)(
  'the app API refuses cross-site requests and bodies that are not JSON (%s)',
  (kind) => {
    let server: TestServer
    let owner: Person
    let keysPath: string

    beforeAll(async () => {
      server = await startServer(kind)
      owner = new Person(server.url)
      await owner.signUp()
      keysPath = `/api/app/orgs/${owner.orgId}/api-keys`
    })
    afterAll(() => server.close())

    const keyNames = async () =>
      ((await owner.request('GET', keysPath)).body.apiKeys as { name: string }[]).map((k) => k.name)

    test('a text/plain body (what a cross-site fetch sends without a preflight) is a 415 and creates no key', async () => {
      const res = await send(server.url, 'POST', keysPath, {
        person: owner,
        headers: { 'content-type': 'text/plain;charset=UTF-8' },
        body: JSON.stringify({ name: 'text plain key' }),
      })
      expect(res.status).toBe(415)
      expect(res.body.error).toMatch(/application\/json/)
      expect(res.body.error).toMatch(/text\/plain/)
      expect(await keyNames()).not.toContain('text plain key')
    })

    test('form bodies (urlencoded and multipart, what an HTML form posts) are 415 and register no webhook', async () => {
      const path = `/api/app/orgs/${owner.orgId}/webhooks`
      const urlencoded = await send(server.url, 'POST', path, {
        person: owner,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'url=https%3A%2F%2Fattacker.example%2Fhook&events=card.created',
      })
      expect(urlencoded.status).toBe(415)
      const form = new FormData()
      form.set('url', 'https://attacker.example/hook')
      const multipart = await fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { cookie: owner.cookie },
        body: form,
      })
      expect(multipart.status).toBe(415)
      expect((await multipart.json()).error).toMatch(/multipart\/form-data/)
      const list = await owner.request('GET', path)
      expect(list.body.webhooks).toEqual([])
    })

    test('a body without a Content-Type is a 415 too', async () => {
      const res = await send(server.url, 'POST', keysPath, {
        person: owner,
        // Bytes, unlike a string, go without a Content-Type.
        body: new TextEncoder().encode(JSON.stringify({ name: 'untyped' })),
      })
      expect(res.status).toBe(415)
      expect(res.body.error).toMatch(/Content-Type/)
    })

    test('a foreign Origin is a 403 naming it, and creates nothing, even with a JSON body', async () => {
      const res = await send(server.url, 'POST', keysPath, {
        person: owner,
        headers: { 'content-type': 'application/json', origin: 'https://attacker.example' },
        body: JSON.stringify({ name: 'foreign origin key' }),
      })
      expect(res.status).toBe(403)
      expect(res.body.error).toMatch(/https:\/\/attacker\.example/)
      expect(await keyNames()).not.toContain('foreign origin key')
    })

    test('Origin: null (a sandboxed frame, a redirect across sites) is a 403', async () => {
      const res = await send(server.url, 'DELETE', `${keysPath}/${crypto.randomUUID()}`, {
        person: owner,
        headers: { origin: 'null' },
      })
      expect(res.status).toBe(403)
    })

    test('Sec-Fetch-Site: cross-site is a 403 even without an Origin', async () => {
      const res = await send(server.url, 'POST', keysPath, {
        person: owner,
        headers: { 'content-type': 'application/json', 'sec-fetch-site': 'cross-site' },
        body: JSON.stringify({ name: 'cross-site key' }),
      })
      expect(res.status).toBe(403)
      expect(res.body.error).toMatch(/cross-site/)
      expect(await keyNames()).not.toContain('cross-site key')
    })

    test('signing in from another site is refused too (no logging a browser into an attacker’s account)', async () => {
      const res = await send(server.url, 'POST', '/api/app/login', {
        headers: { 'content-type': 'application/json', origin: 'https://attacker.example' },
        body: JSON.stringify({ email: owner.user?.email, password: 'correct horse battery' }),
      })
      expect(res.status).toBe(403)
      expect(res.headers.get('set-cookie')).toBeNull()
    })

    test('the page’s own origin, and a script that sends no Origin, keep working', async () => {
      const own = await send(server.url, 'POST', keysPath, {
        person: owner,
        headers: {
          'content-type': 'application/json; charset=utf-8',
          origin: server.url,
          'sec-fetch-site': 'same-origin',
        },
        body: JSON.stringify({ name: 'same origin key' }),
      })
      expect(own.status).toBe(201)
      const script = await send(server.url, 'POST', keysPath, {
        person: owner,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'script key' }),
      })
      expect(script.status).toBe(201)
      // A POST without a body needs no Content-Type.
      const token = await send(server.url, 'POST', `/api/app/orgs/${owner.orgId}/sync-token`, {
        person: owner,
        headers: { origin: server.url },
      })
      expect(token.status).toBe(200)
    })

    test('safe methods are not refused: a GET from another site still answers', async () => {
      const res = await send(server.url, 'GET', '/api/app/me', {
        person: owner,
        headers: { origin: 'https://attacker.example', 'sec-fetch-site': 'cross-site' },
      })
      expect(res.status).toBe(200)
    })

    test('without TRUST_PROXY, X-Forwarded-Proto is not believed: the own origin stays http://<Host>', async () => {
      const host = new URL(server.url).host
      const forged = await send(server.url, 'POST', keysPath, {
        person: owner,
        headers: {
          'content-type': 'application/json',
          origin: `https://${host}`,
          'x-forwarded-proto': 'https',
        },
        body: JSON.stringify({ name: 'forged scheme key' }),
      })
      expect(forged.status).toBe(403)
      const own = await send(server.url, 'POST', keysPath, {
        person: owner,
        headers: {
          'content-type': 'application/json',
          origin: `http://${host}`,
          'x-forwarded-proto': 'https',
        },
        body: JSON.stringify({ name: 'own origin key' }),
      })
      expect(own.status).toBe(201)
    })
  },
)

describe('with PUBLIC_URL set, its origin is the service’s own', () => {
  let server: TestServer
  let owner: Person

  beforeAll(async () => {
    server = await startServer('pglite', { publicUrl: 'https://board.example.test/' })
    owner = new Person(server.url)
    await owner.signUp()
  })
  afterAll(() => server.close())

  test('a request from PUBLIC_URL’s origin is served; one from the address the proxy used is refused', async () => {
    const path = `/api/app/orgs/${owner.orgId}/api-keys`
    const json = (origin: string) => ({
      person: owner,
      headers: { 'content-type': 'application/json', origin },
      body: JSON.stringify({ name: 'k' }),
    })
    expect((await send(server.url, 'POST', path, json('https://board.example.test'))).status).toBe(
      201,
    )
    const refused = await send(server.url, 'POST', path, json(server.url))
    expect(refused.status).toBe(403)
    expect(refused.body.error).toMatch(/https:\/\/board\.example\.test/)
  })
})
