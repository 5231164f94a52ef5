import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { loadConfig } from '../../server/config.ts'
import { type ClockServer, startClockServer } from '../claims/harness.ts'
import { STORAGES } from '../support/storage.ts'
import { send } from './support.ts'

const LIMIT = 3
const WINDOW_SECONDS = 3600

/** A sign-up as a script sends it, from `address` when a proxy forwards it. */
const signUp = (url: string, address?: string) =>
  send(url, 'POST', '/api/app/signup', {
    headers: {
      'content-type': 'application/json',
      ...(address ? { 'x-forwarded-for': `${address}, 10.0.0.1` } : {}),
    },
    body: JSON.stringify({
      email: `p-${crypto.randomUUID()}@example.test`,
      password: 'correct horse battery',
      name: 'Pat',
      organizationName: 'Acme',
    }),
  })

/** A dynamic client registration (RFC 7591), as an MCP client sends it. */
const registerClient = (url: string, address?: string) =>
  send(url, 'POST', '/oauth/register', {
    headers: {
      'content-type': 'application/json',
      ...(address ? { 'x-forwarded-for': address } : {}),
    },
    body: JSON.stringify({
      client_name: 'A script',
      redirect_uris: ['http://127.0.0.1:33418/callback'],
    }),
  })

describe('the limits are configured like the sign-in throttle', () => {
  test('defaults: 30 sign-ups and 30 client registrations per address per hour; a bad value stops the service, naming it', () => {
    const config = loadConfig({})
    expect(config.signupsPerAddress).toBe(30)
    expect(config.signupWindowSeconds).toBe(3600)
    expect(config.oauthRegistrationsPerAddress).toBe(30)
    expect(config.oauthRegistrationWindowSeconds).toBe(3600)
    expect(() => loadConfig({ SIGNUPS_PER_ADDRESS: '0' })).toThrow(/SIGNUPS_PER_ADDRESS/)
    expect(() => loadConfig({ OAUTH_REGISTRATION_WINDOW_SECONDS: 'soon' })).toThrow(
      /OAUTH_REGISTRATION_WINDOW_SECONDS/,
    )
  })
})

describe.each(STORAGES)(
  'sign-ups and client registrations are limited per address (%s)',
  (kind) => {
    let server: ClockServer

    beforeAll(async () => {
      server = await startClockServer(kind, {
        trustProxy: true,
        signupsPerAddress: LIMIT,
        signupWindowSeconds: WINDOW_SECONDS,
        oauthRegistrationsPerAddress: LIMIT,
        oauthRegistrationWindowSeconds: WINDOW_SECONDS,
      })
    })
    afterAll(() => server.close())

    test('POST /api/app/signup: past the budget one address gets 429 with Retry-After, and creates nothing; another address is not held back; an hour later it may sign up again', async () => {
      for (let i = 0; i < LIMIT; i++)
        expect((await signUp(server.url, '198.18.1.1')).status).toBe(201)
      const [users] = await server.storage.db.query<{ n: number }>(
        'select count(*)::int as n from users',
      )
      const refused = await signUp(server.url, '198.18.1.1')
      expect(refused.status).toBe(429)
      expect(refused.body.error).toMatch(/Too many sign-ups from your address \(3 in 60 minutes\)/)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(WINDOW_SECONDS - 60)
      expect(refused.body.retryAfter).toBe(Number(refused.headers.get('retry-after')))
      const [after] = await server.storage.db.query<{ n: number }>(
        'select count(*)::int as n from users',
      )
      expect(after?.n).toBe(users?.n)
      expect((await signUp(server.url, '198.18.1.2')).status).toBe(201)
      server.clock.advance(WINDOW_SECONDS * 1000)
      expect((await signUp(server.url, '198.18.1.1')).status).toBe(201)
    })

    test('POST /oauth/register: past the budget one address gets 429 too_many_requests with Retry-After, readable by a browser-based client (CORS); another address registers', async () => {
      for (let i = 0; i < LIMIT; i++) {
        expect((await registerClient(server.url, '198.18.2.1')).status).toBe(201)
      }
      const refused = await registerClient(server.url, '198.18.2.1')
      expect(refused.status).toBe(429)
      expect(refused.body.error).toBe('too_many_requests')
      expect(refused.body.error_description).toMatch(
        /Too many client registrations from your address/,
      )
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(refused.headers.get('access-control-allow-origin')).toBe('*')
      expect((await registerClient(server.url, '198.18.2.2')).status).toBe(201)
    })

    test('one IPv6 /64 is one address', async () => {
      for (let i = 0; i < LIMIT; i++) {
        expect((await signUp(server.url, `2001:db8:5:6::${i + 1}`)).status).toBe(201)
      }
      expect((await signUp(server.url, '2001:db8:5:6:ffff::1')).status).toBe(429)
    })
  },
)

describe('the sign-up budget is shared by every server process (postgres)', () => {
  let server: ClockServer
  beforeAll(async () => {
    server = await startClockServer('postgres', { trustProxy: true, signupsPerAddress: LIMIT })
  })
  afterAll(() => server.close())

  test('sign-ups split over two processes add up, and both refuse the next', async () => {
    const peer = await server.peer()
    for (let i = 0; i < LIMIT; i++) {
      const url = i % 2 === 0 ? server.url : peer.url
      expect((await signUp(url, '198.18.3.1')).status).toBe(201)
    }
    expect((await signUp(server.url, '198.18.3.1')).status).toBe(429)
    expect((await signUp(peer.url, '198.18.3.1')).status).toBe(429)
  })
})
