import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { staticSite } from '../../server/faces/static.ts'
import { ownerWithAgent, Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'

const framingRefused = (headers: Headers) => {
  expect(headers.get('x-frame-options')).toBe('DENY')
  expect(headers.get('content-security-policy')).toMatch(/frame-ancestors 'none'/)
}

describe('JSON answers are never sniffed as something else; the app page is never framed', () => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer('pglite')
  })
  afterAll(() => server.close())

  test('every JSON answer carries X-Content-Type-Options: nosniff, errors included', async () => {
    const person = new Person(server.url)
    const answers = [
      await person.request('POST', '/api/app/signup', {
        email: `p-${crypto.randomUUID()}@example.test`,
        password: 'correct horse battery',
        name: 'Pat',
        organizationName: 'Acme',
      }),
      await person.request('GET', '/api/app/me'),
      await new Person(server.url).request('GET', '/api/app/me'),
      await person.request('GET', '/api/app/no-such-route'),
      await person.request('POST', '/api/agent', { action: 'whoami' }),
    ]
    expect(answers.map((a) => a.status)).toEqual([201, 200, 401, 404, 401])
    for (const a of answers) {
      expect(a.headers.get('content-type')).toMatch(/^application\/json/)
      expect(a.headers.get('x-content-type-options')).toBe('nosniff')
    }
    const health = await fetch(`${server.url}/healthz`)
    expect(health.headers.get('x-content-type-options')).toBe('nosniff')
  })

  test('answers the JSON helper does not write (the MCP transport’s, an empty 204) carry nosniff too', async () => {
    const { owner, agent, orgId } = await ownerWithAgent(server.url)
    const mcp = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${agent.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-06-18',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'whoami', arguments: {} },
      }),
    })
    expect(mcp.status).toBe(200)
    expect(mcp.headers.get('x-content-type-options')).toBe('nosniff')
    const keys = await owner.request('GET', `/api/app/orgs/${orgId}/api-keys`)
    const keyId = (keys.body.apiKeys as { id: string }[])[0]?.id
    const revoked = await owner.request('DELETE', `/api/app/orgs/${orgId}/api-keys/${keyId}`)
    expect(revoked.status).toBe(204)
    expect(revoked.headers.get('x-content-type-options')).toBe('nosniff')
  })

  test('the page the service answers at / and at a deep link (built or not) refuses to be framed', async () => {
    for (const path of ['/', '/login', '/o/5f1c6d7e-0000-4000-8000-000000000000/board']) {
      const res = await fetch(`${server.url}${path}`)
      expect([200, 503]).toContain(res.status)
      framingRefused(res.headers)
    }
  })
})

describe('the built app page as the browser gets it: first load, revalidation, HEAD', () => {
  let root: string
  let http: Server
  let url: string

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'corkboard-site-'))
    writeFileSync(join(root, 'index.html'), '<!doctype html><div id="root"></div>')
    const site = staticSite(root)
    http = createServer((req, res) => {
      void site.serve(req, res, new URL(req.url ?? '/', 'http://x').pathname).then((served) => {
        if (!served) res.writeHead(404).end()
      })
    })
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`
  })
  afterAll(() => {
    http.close()
    rmSync(root, { recursive: true, force: true })
  })

  test('X-Frame-Options: DENY and frame-ancestors none on 200, 304 and HEAD answers for the page', async () => {
    const first = await fetch(`${url}/`)
    expect(first.status).toBe(200)
    framingRefused(first.headers)
    const again = await fetch(`${url}/board`, {
      headers: { 'if-none-match': first.headers.get('etag') ?? '' },
    })
    expect(again.status).toBe(304)
    framingRefused(again.headers)
    const head = await fetch(`${url}/`, { method: 'HEAD' })
    framingRefused(head.headers)
  })
})
