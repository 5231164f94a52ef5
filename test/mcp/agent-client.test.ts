import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, expectTypeOf, test } from 'vitest'
import { actionNames } from '../../shared/actions.ts'
import {
  AgentApiError,
  type AgentClient,
  agentError,
  BadRequestError,
  ConflictError,
  createAgentClient,
  ForbiddenError,
  MethodNotAllowedError,
  NetworkError,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
  RedirectError,
  ServerError,
  UnauthorizedError,
} from '../../shared/agent-client.ts'
import type { Task } from '../../shared/records.ts'
import { ownerWithAgent, type Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { PNG_BASE64 } from './harness.ts'

/** The error a call is refused with. */
async function refusal(call: Promise<unknown>): Promise<AgentApiError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  )
  if (!(error instanceof AgentApiError)) throw new Error(`expected an AgentApiError, got ${error}`)
  return error
}

/** A plain HTTP server answering every request with `answer`, on port 0. */
async function standIn(
  answer: (res: import('node:http').ServerResponse, hits: string[]) => void,
): Promise<{ url: string; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = []
  const server: Server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url} ${req.headers.authorization ?? '-'}`)
    answer(res, hits)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

// The client does not depend on storage: one storage is enough here.
describe('the typed agent client', () => {
  let server: TestServer
  let client: AgentClient
  let owner: Person

  beforeAll(async () => {
    server = await startServer('pglite', { rateLimitImagesPerOrg: 2 })
    const made = await ownerWithAgent(server.url)
    owner = made.owner
    client = createAgentClient({ url: `${server.url}/`, apiKey: made.agent.key })
  })
  afterAll(() => server.close())

  test('has one method per action of the table, each calling that action', async () => {
    for (const name of actionNames) expect(typeof client[name]).toBe('function')
    const viaMethod = await client.whoami()
    const viaCall = await client.call('whoami')
    expect(viaMethod).toEqual(viaCall)
    expect(viaMethod.organization.name).toBe('Acme')
    expect(client.endpoint).toBe(`${server.url}/api/agent`)
  })

  test('params and results are typed by the action table', async () => {
    const { column } = await client.create_column({ title: 'Typed' })
    const { task } = await client.call('create_task', { columnId: column.id, title: 'Typed card' })
    expectTypeOf(task).toEqualTypeOf<Task>()
    expectTypeOf(client.release_task).returns.resolves.toEqualTypeOf<{
      taskId: string
      released: boolean
    }>()
    // @ts-expect-error title is required
    await refusal(client.create_task({ columnId: column.id }))
    // @ts-expect-error no such param
    await refusal(client.get_task({ taskId: task.id, verbose: true }))
    // @ts-expect-error priority is one of the four levels
    await refusal(client.update_task({ taskId: task.id, priority: 'asap' }))
    // @ts-expect-error get_task needs its params
    await refusal(client.get_task())
    expect(task.title).toBe('Typed card')
  })

  test('a 400 is a BadRequestError whose message names the parameter', async () => {
    const error = await refusal(client.get_board({ projectId: 'not-a-uuid' }))
    expect(error).toBeInstanceOf(BadRequestError)
    expect(error).toMatchObject({ status: 400, kind: 'bad_request', name: 'BadRequestError' })
    expect(error.message).toMatch(/projectId/)
  })

  test('a 401 is an UnauthorizedError', async () => {
    const stranger = createAgentClient({ url: server.url, apiKey: 'cb_not_a_real_key' })
    const error = await refusal(stranger.whoami())
    expect(error).toBeInstanceOf(UnauthorizedError)
    expect(error).toMatchObject({ status: 401, kind: 'unauthorized' })
  })

  test('a 403 is a ForbiddenError (a comment written by another key)', async () => {
    const { column } = await client.create_column({ title: 'Comments' })
    const { task } = await client.create_task({ columnId: column.id, title: 'Talked about' })
    const { comment } = await client.add_comment({ taskId: task.id, body: 'mine' })
    // A second key of the same organisation: same board, another author.
    const other = createAgentClient({ url: server.url, apiKey: await owner.createKey('second') })
    const error = await refusal(other.update_comment({ commentId: comment.id, body: 'theirs' }))
    expect(error).toBeInstanceOf(ForbiddenError)
    expect(error).toMatchObject({ status: 403, kind: 'forbidden' })
  })

  test('a 404 is a NotFoundError', async () => {
    const error = await refusal(client.get_map({ mapId: '00000000-0000-4000-8000-000000000000' }))
    expect(error).toBeInstanceOf(NotFoundError)
    expect(error).toMatchObject({ status: 404, kind: 'not_found' })
  })

  test('a 405 is a MethodNotAllowedError', async () => {
    const getting = createAgentClient({
      url: server.url,
      apiKey: 'cb_unused',
      fetch: (input, init) => fetch(input, { ...init, method: 'GET', body: null }),
    })
    const error = await refusal(getting.whoami())
    expect(error).toBeInstanceOf(MethodNotAllowedError)
    expect(error).toMatchObject({ status: 405, kind: 'method_not_allowed' })
  })

  test('a 409 is a ConflictError carrying holder and expiresAt, or neither', async () => {
    const { column } = await client.create_column({ title: 'Locks' })
    const { task } = await client.create_task({ columnId: column.id, title: 'Locked' })
    const { claim } = await client.claim_task({ taskId: task.id, agentName: 'Ada' })
    const held = await refusal(client.claim_task({ taskId: task.id, agentName: 'Grace' }))
    expect(held).toBeInstanceOf(ConflictError)
    expect(held).toMatchObject({ status: 409, kind: 'conflict', expiresAt: claim.expiresAt })
    expect(held.holder).toEqual(claim)

    const { task: free } = await client.create_task({ columnId: column.id, title: 'Free' })
    const unclaimed = await refusal(client.heartbeat_task({ taskId: free.id }))
    expect(unclaimed).toBeInstanceOf(ConflictError)
    expect(unclaimed.holder).toBeUndefined()
    expect(unclaimed.expiresAt).toBeUndefined()
  })

  test('a 429 is a RateLimitedError with retryAfter in seconds', async () => {
    const { column } = await client.create_column({ title: 'Budget' })
    const { task } = await client.create_task({ columnId: column.id, title: 'Screens' })
    const shot = { taskId: task.id, imageBase64: PNG_BASE64 }
    await client.attach_screenshot(shot)
    await client.attach_screenshot(shot)
    const error = await refusal(client.attach_screenshot(shot))
    expect(error).toBeInstanceOf(RateLimitedError)
    expect(error).toMatchObject({ status: 429, kind: 'rate_limited' })
    expect(error.retryAfter).toBeGreaterThan(0)
    expect(error.retryAfter).toBeLessThanOrEqual(60)
  })

  test('a 500 is a ServerError, and other statuses keep their own', async () => {
    const failing = await standIn((res) => {
      res.writeHead(500, { 'content-type': 'application/json' })
      res.end('{"error":"Internal server error"}')
    })
    try {
      const api = createAgentClient({ url: failing.url, apiKey: 'cb_x' })
      const error = await refusal(api.whoami())
      expect(error).toBeInstanceOf(ServerError)
      expect(error).toMatchObject({ status: 500, kind: 'server_error' })
      expect(error.message).toBe('Internal server error')
    } finally {
      await failing.close()
    }
    expect(agentError(413, { error: 'Request body over 4300000 bytes' })).toBeInstanceOf(
      PayloadTooLargeError,
    )
    expect(agentError(502, undefined)).toMatchObject({ status: 502, kind: 'server_error' })
    expect(agentError(418, { error: 'teapot' })).toMatchObject({ kind: 'http_error' })
  })

  test('a redirect is a RedirectError and the key never follows it', async () => {
    const target = await standIn((res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end('{}')
    })
    const bare = await standIn((res) => {
      res.writeHead(301, { location: `${target.url}/api/agent` })
      res.end()
    })
    try {
      const api = createAgentClient({ url: bare.url, apiKey: 'cb_secret' })
      const error = await refusal(api.whoami())
      expect(error).toBeInstanceOf(RedirectError)
      expect(error).toMatchObject({ status: 301, kind: 'redirect' })
      expect(error.message).toMatch(/direct host/)
      expect(target.hits).toEqual([])
    } finally {
      await Promise.all([target.close(), bare.close()])
    }
  })

  test('no answer at all is a NetworkError with status 0', async () => {
    const gone = await standIn(() => {})
    await gone.close()
    // Retried like any call without an answer (the retries: test/agent/idempotency.test.ts).
    const quickRetry = { attempts: 2, baseDelayMs: 1 }
    const error = await refusal(
      createAgentClient({ url: gone.url, apiKey: 'cb_x', retry: quickRetry }).whoami(),
    )
    expect(error).toBeInstanceOf(NetworkError)
    expect(error).toMatchObject({ status: 0, kind: 'network' })
  })
})
