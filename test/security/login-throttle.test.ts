import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { type ClockServer, startClockServer } from '../claims/harness.ts'
import { Person, type Reply } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'
import { cookiePair, send, setCookie } from './support.ts'

const PASSWORD = 'correct horse battery'

/** A browser (or a script) signing in from one address, keeping the cookies it was given. */
class Browser {
  readonly url: string
  readonly address: string
  device = ''

  constructor(url: string, address: string) {
    this.url = url
    this.address = address
  }

  async logIn(email: string, password: string): Promise<Reply> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-forwarded-for': `${this.address}, 10.0.0.1`,
    }
    if (this.device) headers.cookie = this.device
    const res = await send(this.url, 'POST', '/api/app/login', {
      headers,
      body: JSON.stringify({ email, password }),
    })
    const device = setCookie(res.headers, 'cb_device')
    if (device) this.device = cookiePair(device)
    return res
  }
}

/**
 * A client address no other browser in this file uses (in 198.18.0.0/15, kept for tests):
 * two browsers drawn at random could share one and count each other's failures.
 */
let addresses = 0
const address = () => {
  const n = addresses++
  return `198.18.${Math.floor(n / 250)}.${1 + (n % 250)}`
}

async function account(url: string): Promise<string> {
  const email = `owner-${randomBytes(5).toString('hex')}@example.test`
  await new Person(url).signUp({ email, password: PASSWORD })
  return email
}

async function failures(browser: Browser, email: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await browser.logIn(email, `wrong password ${i}`)
    if (res.status !== 401)
      throw new Error(`failure ${i}: ${res.status} ${JSON.stringify(res.body)}`)
  }
}

describe.each(STORAGES)(
  'failed sign-ins are throttled per account and per address (%s)',
  (kind) => {
    let server: ClockServer

    beforeAll(async () => {
      server = await startClockServer(kind, { trustProxy: true })
    })
    afterAll(() => server.close())

    test('the 11th failure on one account within 5 minutes is a 429 with Retry-After saying when, even with the right password; 5 minutes later it signs in', async () => {
      const email = await account(server.url)
      // Spread over addresses: the account's own budget is what is reached.
      for (let i = 0; i < 10; i++) await failures(new Browser(server.url, address()), email, 1)
      const refused = await new Browser(server.url, address()).logIn(email, PASSWORD)
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).toBe('300')
      expect(refused.body.error).toMatch(/this account/)
      expect(refused.body.error).toMatch(/try again in 5 minutes/)
      expect(refused.body.retryAfter).toBe(300)
      expect(refused.headers.get('set-cookie')).toBeNull()

      server.clock.advance(200_000)
      const later = await new Browser(server.url, address()).logIn(email, PASSWORD)
      expect(later.status).toBe(429)
      expect(later.headers.get('retry-after')).toBe('100')
      expect(later.body.error).toMatch(/try again in 2 minutes/)

      server.clock.advance(100_000)
      expect((await new Browser(server.url, address()).logIn(email, PASSWORD)).status).toBe(200)
    })

    test('the owner’s usual browser keeps signing in while someone elsewhere hammers the account (a signed, HttpOnly device cookie)', async () => {
      const email = await account(server.url)
      const usual = new Browser(server.url, address())
      const first = await usual.logIn(email, PASSWORD)
      expect(first.status).toBe(200)
      const device = setCookie(first.headers, 'cb_device') ?? ''
      expect(device).toMatch(/HttpOnly/)
      expect(device).toMatch(/SameSite=Strict/)
      expect(device).toMatch(/Path=\/api\/app\/login/)

      for (let i = 0; i < 25; i++) {
        const res = await new Browser(server.url, address()).logIn(email, `guess ${i}`)
        expect(res.status).toBe(i < 10 ? 401 : 429)
      }
      expect((await new Browser(server.url, address()).logIn(email, PASSWORD)).status).toBe(429)
      expect((await usual.logIn(email, PASSWORD)).status).toBe(200)
      // Its own typing errors are still counted against its address.
      expect((await usual.logIn(email, 'typo')).status).toBe(401)
      expect((await usual.logIn(email, PASSWORD)).status).toBe(200)

      // A forged cookie, or a device cookie for another account, exempts nothing.
      const forger = new Browser(server.url, address())
      forger.device = `${cookiePair(device).slice(0, -4)}AAAA`
      expect((await forger.logIn(email, PASSWORD)).status).toBe(429)
      const other = await account(server.url)
      const elsewhere = new Browser(server.url, address())
      expect((await elsewhere.logIn(other, PASSWORD)).status).toBe(200)
      expect((await elsewhere.logIn(email, PASSWORD)).status).toBe(429)
    })

    test('one address failing against many accounts is throttled after 30 failures in 15 minutes; other addresses are not', async () => {
      const from = new Browser(server.url, address())
      const victims = await Promise.all(Array.from({ length: 4 }, () => account(server.url)))
      for (const [i, email] of victims.entries()) await failures(from, email, i < 3 ? 10 : 0)
      const last = victims[3] as string
      const refused = await from.logIn(last, PASSWORD)
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).toBe('900')
      expect(refused.body.error).toMatch(/your address/)
      expect(refused.body.error).toMatch(/try again in 15 minutes/)
      expect((await new Browser(server.url, address()).logIn(last, PASSWORD)).status).toBe(200)
      server.clock.advance(900_000)
      expect((await from.logIn(last, PASSWORD)).status).toBe(200)
    })

    test('only failures count: many sign-ins in a row are never throttled, and a success clears that address’s failures on that account', async () => {
      const email = await account(server.url)
      const browser = new Browser(server.url, address())
      for (let i = 0; i < 40; i++) expect((await browser.logIn(email, PASSWORD)).status).toBe(200)

      const typist = new Browser(server.url, address())
      await failures(typist, email, 9)
      expect((await typist.logIn(email, PASSWORD)).status).toBe(200)
      // A script keeping no cookies: the account's budget applies to it.
      typist.device = ''
      // Without the clearing this would be the 19th failure on the account.
      await failures(typist, email, 10)
      expect((await typist.logIn(email, PASSWORD)).status).toBe(429)
    })

    test('a success elsewhere clears nothing of another address’s failures', async () => {
      const email = await account(server.url)
      const guesser = new Browser(server.url, address())
      await failures(guesser, email, 9)
      expect((await new Browser(server.url, address()).logIn(email, PASSWORD)).status).toBe(200)
      await failures(guesser, email, 1)
      expect((await guesser.logIn(email, PASSWORD)).status).toBe(429)
    })

    test('signing in to one’s own account does not wipe an address’s failures on someone else’s', async () => {
      const attacker = new Browser(server.url, address())
      const own = await account(server.url)
      const victim = await account(server.url)
      await failures(attacker, victim, 10)
      expect((await attacker.logIn(own, PASSWORD)).status).toBe(200)
      const refused = await attacker.logIn(victim, 'one more guess')
      expect(refused.status).toBe(429)
    })

    test('a mangled device cookie counts as none: the sign-in goes on, and is throttled like any other', async () => {
      const email = await account(server.url)
      const browser = new Browser(server.url, address())
      browser.device = 'cb_device=%E0%A4%A'
      expect((await browser.logIn(email, PASSWORD)).status).toBe(200)
      for (let i = 0; i < 10; i++) {
        const mangled = new Browser(server.url, address())
        mangled.device = 'cb_device=%E0%A4%A'
        expect((await mangled.logIn(email, `guess ${i}`)).status).toBe(401)
      }
      const refused = new Browser(server.url, address())
      refused.device = 'cb_device=%E0%A4%A'
      expect((await refused.logIn(email, PASSWORD)).status).toBe(429)
    })

    test('an unknown e-mail is throttled exactly like a known one (nothing tells them apart)', async () => {
      const nobody = `nobody-${randomBytes(4).toString('hex')}@example.test`
      for (let i = 0; i < 10; i++) {
        expect(
          (await new Browser(server.url, address()).logIn(nobody, 'x'.repeat(12))).status,
        ).toBe(401)
      }
      expect((await new Browser(server.url, address()).logIn(nobody, 'x'.repeat(12))).status).toBe(
        429,
      )
    })
  },
)

describe('without TRUST_PROXY, X-Forwarded-For is not believed', () => {
  let server: ClockServer

  beforeAll(async () => {
    server = await startClockServer('pglite')
  })
  afterAll(() => server.close())

  test('a client naming a new address in X-Forwarded-For on each try is still one address', async () => {
    const victims = await Promise.all(Array.from({ length: 4 }, () => account(server.url)))
    for (const [i, email] of victims.entries()) {
      for (let n = 0; n < (i < 3 ? 10 : 0); n++) {
        expect((await new Browser(server.url, address()).logIn(email, 'wrong')).status).toBe(401)
      }
    }
    const refused = await new Browser(server.url, address()).logIn(victims[3] as string, PASSWORD)
    expect(refused.status).toBe(429)
    expect(refused.body.error).toMatch(/your address/)
  })
})

describe('the sign-in counters hold across server processes (postgres)', () => {
  let server: ClockServer

  beforeAll(async () => {
    server = await startClockServer('postgres', { trustProxy: true })
  })
  afterAll(() => server.close())

  test('failures split over two processes add up, and both refuse the 11th', async () => {
    const email = await account(server.url)
    const peer = await server.peer()
    for (let i = 0; i < 10; i++) {
      const url = i % 2 === 0 ? server.url : peer.url
      expect((await new Browser(url, address()).logIn(email, 'wrong')).status).toBe(401)
    }
    expect((await new Browser(server.url, address()).logIn(email, PASSWORD)).status).toBe(429)
    expect((await new Browser(peer.url, address()).logIn(email, PASSWORD)).status).toBe(429)
  })
})
