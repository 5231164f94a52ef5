import { randomBytes } from 'node:crypto'
import { HocuspocusProvider, HocuspocusProviderWebsocket } from '@hocuspocus/provider'
import * as Y from 'yjs'
import { mapDocMaps } from '../../shared/map-doc.ts'

export interface Reply<T = any> {
  status: number
  body: T
  headers: Headers
}

/** A person's session against the app API: keeps the cookie like a browser would. */
export class Person {
  readonly url: string
  cookie = ''
  user: { id: string; email: string; name: string } | undefined
  orgId = ''

  constructor(url: string) {
    this.url = url
  }

  async request<T = any>(method: string, path: string, body?: unknown): Promise<Reply<T>> {
    const headers: Record<string, string> = {}
    if (this.cookie) headers.cookie = this.cookie
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const setCookie = res.headers.get('set-cookie')
    if (setCookie) this.cookie = setCookie.split(';')[0] ?? ''
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers }
  }

  async signUp(
    fields: Partial<{
      email: string
      password: string
      name: string
      organizationName: string
    }> = {},
  ) {
    const email = fields.email ?? `p-${randomBytes(5).toString('hex')}@example.test`
    const res = await this.request('POST', '/api/app/signup', {
      email,
      password: fields.password ?? 'correct horse battery',
      name: fields.name ?? 'Pat Person',
      organizationName: fields.organizationName ?? 'Acme',
    })
    if (res.status !== 201)
      throw new Error(`signup failed: ${res.status} ${JSON.stringify(res.body)}`)
    this.user = res.body.user
    this.orgId = res.body.organization.id
    return res.body
  }

  async createKey(name = 'agent key', orgId = this.orgId): Promise<string> {
    const res = await this.request('POST', `/api/app/orgs/${orgId}/api-keys`, { name })
    if (res.status !== 201)
      throw new Error(`key creation failed: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body.key
  }

  /** Creates a project as this person (projects are made by people), returning its id. */
  async createProject(name: string, orgId = this.orgId): Promise<string> {
    const res = await this.request('POST', `/api/app/orgs/${orgId}/projects`, { name })
    if (res.status !== 201)
      throw new Error(`project creation failed: ${res.status} ${JSON.stringify(res.body)}`)
    return res.body.project.id
  }

  async syncToken(orgId = this.orgId): Promise<string> {
    const res = await this.request('POST', `/api/app/orgs/${orgId}/sync-token`)
    if (res.status !== 200) throw new Error(`sync token failed: ${res.status}`)
    return res.body.token
  }
}

/** An agent calling POST /api/agent with a key. */
export class Agent {
  readonly url: string
  readonly key: string
  /** Sent with every call (e.g. Answer-Tokens). */
  readonly headers: Record<string, string>

  constructor(url: string, key: string, headers: Record<string, string> = {}) {
    this.url = url
    this.key = key
    this.headers = headers
  }

  async call<T = any>(action: string, params?: unknown): Promise<Reply<T>> {
    const res = await fetch(`${this.url}/api/agent`, {
      method: 'POST',
      headers: {
        ...this.headers,
        authorization: `Bearer ${this.key}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify(params === undefined ? { action } : { action, params }),
    })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers }
  }

  /** Calls and insists on 200, returning the body. */
  async ok<T = any>(action: string, params?: unknown): Promise<T> {
    const res = await this.call<T>(action, params)
    if (res.status !== 200) throw new Error(`${action} → ${res.status} ${JSON.stringify(res.body)}`)
    return res.body
  }
}

/** A signed-up owner with a key: the usual starting point of an agent test. */
export async function ownerWithAgent(url: string) {
  const owner = new Person(url)
  await owner.signUp()
  const agent = new Agent(url, await owner.createKey())
  return { owner, agent, orgId: owner.orgId }
}

export interface LiveClient {
  doc: Y.Doc
  provider: HocuspocusProvider
  socket: HocuspocusProviderWebsocket
  destroy(): void
}

/** A real Hocuspocus provider over a real WebSocket, resolved once synced. */
export async function connectProvider(
  url: string,
  name: string,
  token: string,
): Promise<LiveClient> {
  const doc = new Y.Doc()
  const socket = new HocuspocusProviderWebsocket({ url: `${url.replace(/^http/, 'ws')}/sync` })
  const provider = new HocuspocusProvider({ websocketProvider: socket, name, document: doc, token })
  provider.attach()
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`provider for ${name} did not sync`)), 10_000)
    provider.on('synced', () => {
      clearTimeout(timer)
      resolve()
    })
    provider.on('authenticationFailed', ({ reason }: { reason: string }) => {
      clearTimeout(timer)
      reject(new Error(`authentication failed: ${reason}`))
    })
  })
  return {
    doc,
    provider,
    socket,
    destroy() {
      provider.destroy()
      socket.destroy()
    },
  }
}

/** Polls `check` until it returns a value other than undefined, or fails after `ms`. */
export async function eventually<T>(check: () => T | undefined, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = check()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 5))
  }
}

/** Polls an async `check` until it returns a value other than undefined, or fails after `ms`. */
export async function eventuallyAsync<T>(
  check: () => Promise<T | undefined>,
  ms = 5000,
): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const v = await check()
    if (v !== undefined) return v
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** A node a person draws on a map's canvas, through their live copy (no agent call). */
export function drawNode(doc: Y.Doc, id: string, text: string): void {
  doc.transact(() => {
    const m = new Y.Map<unknown>()
    m.set('text', text)
    m.set('x', 10)
    m.set('y', 20)
    m.set('color', '#123456')
    m.set('imageUrl', null)
    mapDocMaps(doc).nodes.set(id, m)
  })
}
