import { createHash } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { CLIENT_DIST, inlineScriptHashes } from '../../server/faces/static.ts'
import { startServer, type TestServer } from '../support/server.ts'

function rawGet(
  url: string,
  headers: Record<string, string>,
  resolve: (r: { encoding: string | undefined; bytes: Buffer }) => void,
  reject: (e: Error) => void,
) {
  // A connection of its own: one kept alive from an earlier request may be closed by the
  // server just as it is used again, on a busy machine.
  request(url, { headers, agent: false }, (res) => {
    const chunks: Buffer[] = []
    res.on('data', (c: Buffer) => chunks.push(c))
    res.on('end', () =>
      resolve({ encoding: res.headers['content-encoding'], bytes: Buffer.concat(chunks) }),
    )
  })
    .on('error', reject)
    .end()
}

/** The built web app served at `/` beside the service's own paths. */
describe('serving the web app', () => {
  let server: TestServer
  let script: string

  beforeAll(async () => {
    server = await startServer('pglite')
    const js = readdirSync(join(CLIENT_DIST, 'assets')).find((f) => f.endsWith('.js'))
    if (!js) throw new Error('client/dist has no scripts: the global setup builds it')
    script = `/assets/${js}`
  })
  afterAll(() => server.close())

  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, { headers })

  test('index.html is served at / and revalidated on every load (no-cache), with a content security policy', async () => {
    const res = await get('/')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('no-cache')
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'")
    expect(await res.text()).toContain('<div id="root">')
  })

  test("the page's first script is written into index.html, and the policy allows exactly it, by the hash of its text", async () => {
    const res = await get('/')
    const html = await res.text()
    const inline = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1] as string)
    expect(inline).toHaveLength(1)
    expect(inline[0]).toContain('corkboardBoot')
    const digest = createHash('sha256')
      .update(inline[0] as string)
      .digest('base64')
    const scriptSrc = (res.headers.get('content-security-policy') ?? '')
      .split(';')
      .map((d) => d.trim())
      .find((d) => d.startsWith('script-src'))
    expect(scriptSrc).toBe(`script-src 'self' 'sha256-${digest}'`)
    // Not `unsafe-inline`: a script injected into the page would not run.
    expect(inlineScriptHashes('<script>alert(1)</script>')).not.toContain(`sha256-${digest}`)
  })

  test('a deep link of the app gets index.html (the app routes it)', async () => {
    for (const path of ['/login', '/o/5f1c6d7e-0000-4000-8000-000000000000/board', '/invite/abc']) {
      const res = await get(path)
      expect(res.status).toBe(200)
      expect(await res.text()).toContain('<div id="root">')
    }
  })

  test('hashed assets are immutable for a year, compressed when asked, and revalidated by ETag', async () => {
    const plain = await get(script)
    expect(plain.status).toBe(200)
    expect(plain.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    const body = Buffer.from(await plain.arrayBuffer())
    const etag = plain.headers.get('etag') as string
    expect(etag).toMatch(/^".+"$/)

    // Raw bytes over node:http: fetch would undo the encoding that is being checked.
    const gz = await new Promise<{ encoding: string | undefined; bytes: Buffer }>(
      (resolve, reject) => {
        rawGet(`${server.url}${script}`, { 'accept-encoding': 'gzip' }, resolve, reject)
      },
    )
    expect(gz.encoding).toBe('gzip')
    expect(gunzipSync(gz.bytes)).toEqual(body)

    const again = await get(script, { 'if-none-match': etag })
    expect(again.status).toBe(304)
  })

  test('the files compressed ahead of the first visitor (npm start warms them) are served as brotli, byte for byte', async () => {
    await server.app.warmSite()
    const scripts = readdirSync(join(CLIENT_DIST, 'assets')).filter((f) => f.endsWith('.js'))
    const raw = (path: string, encodings: string) =>
      new Promise<{ encoding: string | undefined; bytes: Buffer }>((resolve, reject) => {
        rawGet(`${server.url}${path}`, { 'accept-encoding': encodings }, resolve, reject)
      })
    for (const path of ['/', ...scripts.map((f) => `/assets/${f}`)]) {
      const identity = await raw(path, 'identity')
      expect(identity.encoding).toBeUndefined()
      const plain = identity.bytes
      const br = await raw(path, 'br, gzip')
      if (plain.length < 1024) continue
      expect(br.encoding).toBe('br')
      expect(brotliDecompressSync(br.bytes)).toEqual(plain)
    }
  })

  test('the service worker is served from the root and revalidated on every load', async () => {
    const res = await get('/sw.js')
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-cache')
    expect(await res.text()).toContain('corkboard-')
  })

  test('a missing asset is a 404, never index.html', async () => {
    const res = await get('/assets/nothing-here-abc123.js')
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toContain('application/json')
  })

  test('static serving never shadows /api, /sync, /files, /healthz or /mcp', async () => {
    for (const path of ['/api/app/nope', '/api', '/sync', '/files/nope', '/mcp/x', '/healthz/x']) {
      const res = await get(path)
      expect(res.status, path).toBe(404)
      expect((await res.json()).error, path).toMatch(/No route/)
    }
    expect((await get('/healthz')).status).toBe(200)
    const me = await get('/api/app/me')
    expect(me.status).toBe(401)
  })

  test('no way out of the build folder, and only GET and HEAD', async () => {
    for (const path of ['/..%2fpackage.json', '/%2e%2e/server/app.ts', '/.vite/manifest.json']) {
      const res = await get(path)
      expect(res.status, path).toBe(404)
      expect(await res.text(), path).not.toContain('"dependencies"')
    }
    const head = await fetch(`${server.url}/`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(await head.text()).toBe('')
    expect((await fetch(`${server.url}/`, { method: 'POST' })).status).toBe(404)
  })
})
