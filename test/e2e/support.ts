import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import zlib from 'node:zlib'
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll } from 'vitest'
import { Agent, Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import type { StorageKind } from '../support/storage.ts'

/** Debian's Chromium, never a downloaded browser. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
}

/**
 * A server and Chromium for the tests of one describe block, started before them and
 * closed after: read `server` and `browser` inside the tests.
 */
export function serverAndBrowser(
  kind: StorageKind = 'pglite',
  config: Parameters<typeof startServer>[1] = {},
): { server: TestServer; browser: Browser } {
  const held = {} as { server: TestServer; browser: Browser }
  beforeAll(async () => {
    ;[held.server, held.browser] = await Promise.all([startServer(kind, config), launchBrowser()])
  })
  afterAll(async () => {
    await held.browser?.close()
    await held.server?.close()
  })
  return held
}

/** A laptop screen: what the README screenshots show. */
export const VIEWPORT = { width: 1440, height: 900 }

export async function newContext(browser: Browser, url: string): Promise<BrowserContext> {
  return browser.newContext({ baseURL: url, viewport: VIEWPORT })
}

/** Fails the test on any uncaught error in the page: a broken app must not pass quietly. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = []
  page.on('pageerror', (e) => errors.push(e.message))
  return errors
}

const DOCS = join(fileURLToPath(new URL('../..', import.meta.url)), 'docs')

/** Saves a screenshot for the README under docs/. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(DOCS, { recursive: true })
  await page.screenshot({ path: join(DOCS, name), animations: 'disabled' })
}

/** Signs up through the API and hands the session cookie to the browser context. */
export async function signedInContext(
  browser: Browser,
  url: string,
  fields: Parameters<Person['signUp']>[0] = {},
): Promise<{ context: BrowserContext; page: Page; person: Person; agent: Agent; orgId: string }> {
  const person = new Person(url)
  await person.signUp(fields)
  const agent = new Agent(url, await person.createKey('e2e agent'))
  const context = await newContext(browser, url)
  const [name, value] = person.cookie.split('=') as [string, string]
  await context.addCookies([{ name, value, url }])
  const page = await context.newPage()
  return { context, page, person, agent, orgId: person.orgId }
}

/** Opens the board and waits until it is in sync with the server. */
export async function openBoard(page: Page, orgId: string, query = ''): Promise<void> {
  await page.goto(`/o/${orgId}/board${query}`)
  await page.locator('[data-sync-state="synced"]').waitFor()
  await page.locator('[data-testid="board"] [data-column-id]').first().waitFor()
}

export const card = (page: Page, title: string) =>
  page.locator('[data-card-id]', { hasText: title })

export const column = (page: Page, title: string) =>
  page.locator('[data-column-id]', { has: page.locator('.column-title', { hasText: title }) })

/** Drags with real mouse events, in steps, like a person does. */
export async function dragTo(
  page: Page,
  from: { x: number; y: number },
  to: { x: number; y: number },
  steps = 12,
): Promise<void> {
  await page.mouse.move(from.x, from.y)
  await page.mouse.down()
  for (let i = 1; i <= steps; i++) {
    await page.mouse.move(
      from.x + ((to.x - from.x) * i) / steps,
      from.y + ((to.y - from.y) * i) / steps,
    )
  }
  await page.mouse.up()
}

export async function centerOf(selector: ReturnType<Page['locator']>) {
  const box = await selector.boundingBox()
  if (!box) throw new Error('element is not visible')
  return { x: box.x + box.width / 2, y: box.y + box.height / 2 }
}

/** A real PNG (solid colour, w×h) as base64, for screenshots and node images. */
export function pngBase64(w: number, h: number, rgb: [number, number, number]): string {
  const { crc32, deflateSync } = zlib
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4)
    len.writeUInt32BE(data.length)
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data])
    const crc = Buffer.alloc(4)
    crc.writeUInt32BE(crc32(body))
    return Buffer.concat([len, body, crc])
  }
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(w, 0)
  ihdr.writeUInt32BE(h, 4)
  ihdr[8] = 8
  ihdr[9] = 2
  const row = Buffer.concat([Buffer.from([0]), Buffer.alloc(w * 3).fill(Buffer.from(rgb))])
  const raw = Buffer.concat(Array.from({ length: h }, () => row))
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]).toString('base64')
}

/** A browser context signed in as this person (their session cookie). */
export async function contextAs(
  browser: Browser,
  url: string,
  person: Person,
): Promise<BrowserContext> {
  const context = await newContext(browser, url)
  const [name, value] = person.cookie.split('=') as [string, string]
  await context.addCookies([{ name, value, url }])
  return context
}

/** A second person who joined the owner's organisation through an invite (app API). */
export async function joinedMember(url: string, owner: Person, name: string): Promise<Person> {
  const email = `${name.toLowerCase().replace(/\W+/g, '.')}@example.test`
  const invite = await owner.request('POST', `/api/app/orgs/${owner.orgId}/invites`, {
    email,
    role: 'member',
  })
  const member = new Person(url)
  await member.signUp({ email, name, organizationName: `${name}'s own` })
  const accepted = await member.request(
    'POST',
    `/api/app/invites/${invite.body.invite.token}/accept`,
  )
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.status}`)
  member.orgId = owner.orgId
  return member
}

/** Polls an async check until it returns something other than undefined, or fails after `ms`. */
export async function until<T>(check: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await check()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}
