import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { loadConfig } from '../../server/config.ts'
import { Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { send } from './support.ts'

/** A budget small enough to reach quickly; the account's own is out of the way. */
const PER_ADDRESS = 3

/** A wrong-password sign-in as a proxy forwards it: `forwardedFor` is the X-Forwarded-For value. */
const failWith = (url: string, email: string, forwardedFor?: string) =>
  send(url, 'POST', '/api/app/login', {
    headers: {
      'content-type': 'application/json',
      ...(forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }),
    },
    body: JSON.stringify({ email, password: 'not the password' }),
  })

describe('TRUST_PROXY', () => {
  test('is off unless set to 1; a value that is neither 1 nor 0 is refused, naming it', () => {
    expect(loadConfig({}).trustProxy).toBe(false)
    expect(loadConfig({ TRUST_PROXY: '0' }).trustProxy).toBe(false)
    expect(loadConfig({ TRUST_PROXY: '1' }).trustProxy).toBe(true)
    expect(() => loadConfig({ TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY must be 1 or 0/)
  })
})

describe.each(STORAGES)(
  'with TRUST_PROXY=1 the client’s address is the first X-Forwarded-For entry (%s)',
  (kind) => {
    let server: TestServer
    let email: string

    beforeAll(async () => {
      server = await startServer(kind, {
        trustProxy: true,
        loginFailuresPerAddress: PER_ADDRESS,
        loginFailuresPerAccount: 1_000,
      })
      email = (await new Person(server.url).signUp()).user.email
    })
    afterAll(() => server.close())

    test('failures count against the first entry, whichever proxies come after it', async () => {
      const statuses = []
      for (const hops of ['203.0.113.7', '203.0.113.7, 10.0.0.1', '203.0.113.7, 10.0.0.2'])
        statuses.push((await failWith(server.url, email, hops)).status)
      expect(statuses).toEqual([401, 401, 401])
      const refused = await failWith(server.url, email, '203.0.113.7, 10.0.0.3')
      expect(refused.status).toBe(429)
      expect(refused.body.error).toMatch(/your address/)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    })

    test('another client behind the same proxy (same last entry) has its own budget, and so does the socket’s own address', async () => {
      for (let i = 0; i < PER_ADDRESS; i++) {
        expect((await failWith(server.url, email, '203.0.113.8, 10.0.0.1')).status).toBe(401)
      }
      expect((await failWith(server.url, email, '203.0.113.8, 10.0.0.1')).status).toBe(429)
      expect((await failWith(server.url, email, '203.0.113.9, 10.0.0.1')).status).toBe(401)
      // No header: the request came straight to the socket, whose address is 127.0.0.1.
      expect((await failWith(server.url, email)).status).toBe(401)
    })

    test('one IPv6 /64 is one client (a machine is given a whole /64), as is an IPv4 address with a port', async () => {
      for (const hops of ['2001:db8:1:2::1', '[2001:db8:1:2::ffff]:4431', '2001:db8:1:2:aa::9']) {
        expect((await failWith(server.url, email, hops)).status).toBe(401)
      }
      expect((await failWith(server.url, email, '2001:db8:1:2::77')).status).toBe(429)
      expect((await failWith(server.url, email, '2001:db8:1:3::1')).status).toBe(401)

      for (let i = 0; i < PER_ADDRESS; i++) {
        expect((await failWith(server.url, email, `192.0.2.10:${5000 + i}`)).status).toBe(401)
      }
      expect((await failWith(server.url, email, '192.0.2.10')).status).toBe(429)
    })
  },
)

/** The app's own origin as the cross-site check sees it: an Origin it accepts for a write. */
async function acceptedOrigin(server: TestServer, person: Person, origin: string) {
  const res = await send(server.url, 'POST', `/api/app/orgs/${person.orgId}/api-keys`, {
    person,
    headers: { 'content-type': 'application/json', origin, 'x-forwarded-proto': 'https' },
    body: JSON.stringify({ name: `key for ${origin}` }),
  })
  return res.status === 201
}

describe.each(STORAGES)(
  'X-Forwarded-Proto is believed only behind a declared proxy (TRUST_PROXY=1) (%s)',
  (kind) => {
    let trusting: TestServer
    let direct: TestServer

    beforeAll(async () => {
      trusting = await startServer(kind, { trustProxy: true })
      direct = await startServer(kind)
    })
    afterAll(async () => {
      await trusting.close()
      await direct.close()
    })

    test('the app’s own origin: https://<Host> behind the proxy, http://<Host> without TRUST_PROXY whatever the header says', async () => {
      const behind = new Person(trusting.url)
      await behind.signUp()
      const host = new URL(trusting.url).host
      expect(await acceptedOrigin(trusting, behind, `https://${host}`)).toBe(true)
      expect(await acceptedOrigin(trusting, behind, `http://${host}`)).toBe(false)

      const alone = new Person(direct.url)
      await alone.signUp()
      const directHost = new URL(direct.url).host
      expect(await acceptedOrigin(direct, alone, `https://${directHost}`)).toBe(false)
      expect(await acceptedOrigin(direct, alone, `http://${directHost}`)).toBe(true)
    })

    test('the OAuth issuer and the /mcp challenge follow the same rule', async () => {
      const metadata = async (server: TestServer) =>
        (
          await send(server.url, 'GET', '/.well-known/oauth-authorization-server', {
            headers: { 'x-forwarded-proto': 'https' },
          })
        ).body
      expect((await metadata(trusting)).issuer).toBe(`https://${new URL(trusting.url).host}`)
      expect((await metadata(direct)).issuer).toBe(`http://${new URL(direct.url).host}`)
      const challenge = await send(direct.url, 'POST', '/mcp', {
        headers: { 'x-forwarded-proto': 'https' },
      })
      expect(challenge.headers.get('www-authenticate')).toContain(
        `resource_metadata="http://${new URL(direct.url).host}/`,
      )
    })

    test('the cookies of an OAuth sign-in are Secure behind the proxy only', async () => {
      const signIn = async (server: TestServer, scheme: string) => {
        const person = new Person(server.url)
        const { user } = await person.signUp()
        return fetch(`${server.url}/oauth/sign-in`, {
          method: 'POST',
          redirect: 'manual',
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            origin: `${scheme}://${new URL(server.url).host}`,
            'x-forwarded-proto': 'https',
          },
          body: new URLSearchParams({
            email: user.email,
            password: 'correct horse battery',
            return: '/oauth/authorize?client_id=x',
          }).toString(),
        })
      }
      const behind = await signIn(trusting, 'https')
      const alone = await signIn(direct, 'http')
      expect([behind.status, alone.status]).toEqual([303, 303])
      expect(behind.headers.getSetCookie().join('\n')).toMatch(/cb_session=[^;]+;.*Secure/)
      expect(alone.headers.getSetCookie().join('\n')).not.toMatch(/Secure/)
    })
  },
)
