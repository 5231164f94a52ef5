import { spawnSync } from 'node:child_process'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { z } from 'zod'
import { actionNames, actions } from '../../shared/actions.ts'
import {
  BadRequestError,
  ConflictError,
  createAgentClient,
  NotFoundError,
  RateLimitedError,
} from '../../shared/agent-client.ts'
import { LIMITS } from '../../shared/constants.ts'
import { ownerWithAgent } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import {
  callTool,
  connect,
  connectHttp,
  PNG_BASE64,
  pngOfSize,
  ROOT,
  TRANSPORTS,
  toolOk,
  type World,
  world,
} from './harness.ts'

const IMAGE_BUDGET = 6

/** The endpoint's error for a call, as the typed client throws it. */
/** A failed tool call's error body: the JSON text of its first content block. */
function failureOf(result: { content: unknown[] }): Record<string, unknown> {
  const [first] = result.content as { type: string; text?: string }[]
  if (first?.type !== 'text' || first.text === undefined) throw new Error('no text content')
  return JSON.parse(first.text)
}

async function endpointError(promise: Promise<unknown>) {
  return promise.then(
    () => {
      throw new Error('expected the endpoint to refuse the call')
    },
    (error: unknown) => error,
  )
}

describe.each(STORAGES)('MCP tools (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(kind, { rateLimitImagesPerOrg: IMAGE_BUDGET })
  })
  afterAll(() => server.close())

  describe.each(TRANSPORTS)('over %s', (transport) => {
    let w: World

    beforeAll(async () => {
      w = await world(transport, server.url)
    })
    afterAll(() => w?.mcp.close())

    test('tools/list has exactly one tool per action, named as the action', async () => {
      const { tools } = await w.mcp.listTools()
      expect(tools.map((t) => t.name).sort()).toEqual([...actionNames].sort())
      expect(tools).toHaveLength(actionNames.length)
    })

    test("each tool's input schema is the action's zod schema as JSON Schema", async () => {
      const { tools } = await w.mcp.listTools()
      const ajv = new Ajv2020({ strict: false })
      addFormats.default(ajv)
      for (const tool of tools) {
        const input = actions[tool.name as keyof typeof actions].input
        // As zod writes it, less what says nothing to a client (server/mcp/tools.ts).
        const written = JSON.stringify(z.toJSONSchema(input, { io: 'input' }))
        for (const [name, property] of Object.entries(tool.inputSchema.properties ?? {})) {
          expect(written, `${tool.name}.${name}`).toContain(`"${name}":`)
          expect(JSON.stringify(property)).not.toContain('$schema')
        }
        // And it says the same things the endpoint enforces: the same params, the same
        // required ones, nothing else accepted.
        if (!(input instanceof z.ZodObject))
          throw new Error(`${tool.name} params are not an object`)
        const shape = input.shape as Record<string, z.ZodType>
        // Every param but the identity ones where they change nothing (server/mcp/tools.ts).
        const spec = actions[tool.name as keyof typeof actions]
        const identityCounts =
          spec.claimLocked || tool.name === 'claim_next' || tool.name === 'add_comment'
        const listed = Object.keys(shape).filter(
          (k) => identityCounts || !['agentName', 'house', 'generation', 'isSubChild'].includes(k),
        )
        expect(Object.keys(tool.inputSchema.properties ?? {}).sort()).toEqual(listed.sort())
        const required = Object.keys(shape).filter((k) => !shape[k]?.safeParse(undefined).success)
        expect([...(tool.inputSchema.required ?? [])].sort()).toEqual(required.sort())
        // A JSON Schema validator (the one the SDK uses) reads both schemas.
        expect(() => ajv.compile(tool.inputSchema), tool.name).not.toThrow()
        expect(() => ajv.compile(tool.outputSchema ?? {}), tool.name).not.toThrow()
      }
    })

    test('each description is the action’s own, plus whether the claim lock applies; what applies to all is written once, in the instructions', async () => {
      const { tools } = await w.mcp.listTools()
      for (const tool of tools) {
        const spec = actions[tool.name as keyof typeof actions]
        expect(tool.description).toContain(spec.description)
        expect(tool.description).not.toMatch(/Recommended loop/)
        expect(tool.description).not.toMatch(/Failures are tool errors/)
        expect(tool.annotations?.readOnlyHint).toBe(!spec.write)
        expect(tool.description?.includes('Claim locked')).toBe(spec.claimLocked)
      }
      const instructions = w.mcp.getInstructions() ?? ''
      expect(instructions).toMatch(/Recommended loop: get_board \(summary:true\) → get_task/)
      expect(instructions).toMatch(/Unknown parameters are refused with a 400 naming them/)
      expect(instructions).toMatch(/release_task \(also when failing\)/)
      expect(instructions).toMatch(/Failures are tool errors/)
      expect(instructions).toMatch(/A 409 with holder: someone else holds the card/)
      expect(instructions).toMatch(/the same identity on every later write/)
      expect(instructions).toMatch(/leave position out on create_task, move_task, create_column/)
    })

    test('the instructions teach the claim_next loop and blockers, and say once what the schemas leave to them (identity bounds, fields always there)', async () => {
      const instructions = w.mcp.getInstructions() ?? ''
      expect(instructions).toMatch(
        /claim_next .*→ do the work → heartbeat_task before expiresAt → move_task to the done column → release_task/,
      )
      expect(instructions).toMatch(/set_task_dependencies.*blocked while one of them is open/)
      expect(instructions).toMatch(/claim_next never hands out a blocked card/)
      expect(instructions).toMatch(/card\.unblocked/)
      expect(instructions).toMatch(
        /agentName \(1–80 characters; and house, 1–40, with generation, 1–10,000/,
      )
      expect(instructions).toMatch(/the fields an output schema requires are always there/)
    })

    test('every parameter is described, once, in its schema', async () => {
      const { tools } = await w.mcp.listTools()
      const undescribed: string[] = []
      const walk = (path: string, schema: Record<string, unknown>) => {
        const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>
        for (const [name, property] of Object.entries(properties)) {
          if (typeof property.description !== 'string' || property.description.length < 5) {
            undescribed.push(`${path}.${name}`)
          }
          walk(`${path}.${name}`, property)
          if (property.items) walk(`${path}.${name}[]`, property.items as Record<string, unknown>)
        }
      }
      for (const tool of tools) walk(tool.name, tool.inputSchema)
      expect(undescribed).toEqual([])
      // The same parameter reads the same in every tool that takes it.
      const meanings = new Map<string, Set<string>>()
      for (const tool of tools) {
        for (const [name, p] of Object.entries(tool.inputSchema.properties ?? {})) {
          const set = meanings.get(name) ?? new Set()
          set.add((p as { description: string }).description)
          meanings.set(name, set)
        }
      }
      for (const name of ['taskId', 'mapId', 'agentName', 'house', 'generation', 'isSubChild']) {
        expect([...(meanings.get(name) ?? [])], name).toHaveLength(1)
      }
    })

    test('every tool has a title and all four annotations, set truthfully', async () => {
      const { tools } = await w.mcp.listTools()
      for (const tool of tools) {
        const a = tool.annotations ?? {}
        expect(tool.title, tool.name).toBeTruthy()
        for (const hint of ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint']) {
          expect(typeof (a as Record<string, unknown>)[hint], `${tool.name} ${hint}`).toBe(
            'boolean',
          )
        }
        const facts = { name: tool.name, ...a }
        if (a.readOnlyHint) {
          expect(facts).toMatchObject({ destructiveHint: false, idempotentHint: true })
        }
        if (/^(delete_|archive_)/.test(tool.name)) {
          expect(facts).toMatchObject({ readOnlyHint: false, destructiveHint: true })
        }
        if (/^(create_|add_|attach_)/.test(tool.name)) {
          expect(facts).toMatchObject({ destructiveHint: false, idempotentHint: false })
        }
        expect(a.openWorldHint).toBe(false)
      }
      const byName = new Map(tools.map((t) => [t.name, t.annotations]))
      expect(byName.get('get_board')).toMatchObject({ readOnlyHint: true })
      expect(byName.get('create_task')).toMatchObject({
        readOnlyHint: false,
        destructiveHint: false,
      })
      expect(byName.get('update_task')).toMatchObject({
        destructiveHint: true,
        idempotentHint: true,
      })
      expect(byName.get('heartbeat_task')).toMatchObject({ idempotentHint: false })
    })

    test('every tool the guidance names is a tool of the list', async () => {
      const { tools } = await w.mcp.listTools()
      const text = [w.mcp.getInstructions(), ...tools.map((t) => t.description)].join('\n')
      const named = new Set(text.match(/\b[a-z]+(?:_[a-z]+)+\b/g))
      const params = new Set(tools.flatMap((t) => Object.keys(t.inputSchema.properties ?? {})))
      const unknown = [...named].filter(
        (n) => !(actionNames as string[]).includes(n) && !params.has(n),
      )
      expect(unknown).toEqual([])
    })

    test('a 400 comes back as a tool error with the endpoint’s status and message', async () => {
      const { column } = await w.api.create_column({ title: 'Errors' })
      const params = { columnId: column.id, title: 'x', colour: 'red' }
      const result = await callTool(w.mcp, 'create_task', params)
      expect(result.isError).toBe(true)
      const refused = await endpointError(w.api.call('create_task', params as never))
      expect(refused).toBeInstanceOf(BadRequestError)
      // The endpoint's error body, as JSON text; no structured content (it would be checked
      // against the output schema, the success shape).
      expect(result.structuredContent).toBeUndefined()
      expect(failureOf(result)).toEqual({
        status: 400,
        error: (refused as BadRequestError).message,
      })
      expect((refused as BadRequestError).message).toMatch(/"colour"/)
      expect(result.content[1]).toMatchObject({ type: 'text', text: expect.stringMatching(/fix/) })
    })

    test('a 409 with holder comes back as a tool error carrying holder and expiresAt', async () => {
      const { column } = await w.api.create_column({ title: 'Claims' })
      const { task } = await w.api.create_task({ columnId: column.id, title: 'Held' })
      const { claim } = await w.api.claim_task({ taskId: task.id, agentName: 'Ada' })
      const result = await callTool(w.mcp, 'claim_task', { taskId: task.id, agentName: 'Grace' })
      expect(result.isError).toBe(true)
      const refused = await endpointError(w.api.claim_task({ taskId: task.id, agentName: 'Grace' }))
      expect(refused).toBeInstanceOf(ConflictError)
      const conflict = refused as ConflictError
      expect(failureOf(result)).toEqual({
        status: 409,
        error: conflict.message,
        holder: conflict.holder,
        expiresAt: claim.expiresAt,
      })
      expect(conflict.holder?.holder).toBe('Ada')
      expect(result.content[1]).toMatchObject({ text: expect.stringMatching(/another card/) })

      // The same lock holds for the card's other writes, exactly as on the endpoint.
      const update = await callTool(w.mcp, 'update_task', {
        taskId: task.id,
        title: 'Taken over',
        agentName: 'Grace',
      })
      expect(update.isError).toBe(true)
      expect(failureOf(update)).toMatchObject({ status: 409, holder: { holder: 'Ada' } })
      expect((await w.api.get_task({ taskId: task.id })).task.title).toBe('Held')
    })

    test('a 409 without holder (no live claim to heartbeat) says to claim again', async () => {
      const { column } = await w.api.create_column({ title: 'Unclaimed' })
      const { task } = await w.api.create_task({ columnId: column.id, title: 'Free' })
      const result = await callTool(w.mcp, 'heartbeat_task', { taskId: task.id })
      expect(result.isError).toBe(true)
      expect(failureOf(result)).toEqual({
        status: 409,
        error: expect.stringMatching(/claim_task again/),
      })
      expect(result.content[1]).toMatchObject({ text: expect.stringMatching(/claim_task again/) })
    })

    test('a 404 comes back as a tool error, as the endpoint’s', async () => {
      const params = { taskId: '00000000-0000-4000-8000-000000000000' }
      const result = await callTool(w.mcp, 'get_task', params)
      const refused = await endpointError(w.api.get_task(params))
      expect(refused).toBeInstanceOf(NotFoundError)
      expect(result.isError).toBe(true)
      expect(failureOf(result)).toEqual({ status: 404, error: (refused as NotFoundError).message })
    })

    test("export_map's PNG comes as image content too; an SVG stays text", async () => {
      const { map } = await w.api.create_map({ title: 'Picture' })
      await w.api.create_nodes({ mapId: map.id, nodes: [{ text: 'One' }, { text: 'Two' }] })
      const result = await callTool(w.mcp, 'export_map', { mapId: map.id, format: 'png' })
      expect(result.isError).toBeFalsy()
      const structured = result.structuredContent as { content: string; mimeType: string }
      expect(structured.mimeType).toBe('image/png')
      expect(result.content.filter((c) => c.type === 'image')).toEqual([
        { type: 'image', data: structured.content, mimeType: 'image/png' },
      ])
      const text = result.content[0]
      expect(text?.type === 'text' && text.text.includes(structured.content)).toBe(false)
      const svg = await callTool(w.mcp, 'export_map', { mapId: map.id, format: 'svg' })
      expect(svg.content.filter((c) => c.type === 'image')).toEqual([])
      expect((svg.structuredContent as { content: string }).content).toMatch(/^<svg /)
    })

    test("get_task returns the card's screenshots as image content", async () => {
      const { column } = await w.api.create_column({ title: 'Screens' })
      const { task } = await w.api.create_task({ columnId: column.id, title: 'With a screenshot' })
      const { attachment } = await toolOk(w.mcp, 'attach_screenshot', {
        taskId: task.id,
        imageBase64: PNG_BASE64,
        filename: 'screen',
      })
      const result = await callTool(w.mcp, 'get_task', { taskId: task.id })
      expect(result.isError).toBeFalsy()
      expect(result.content.filter((c) => c.type === 'image')).toEqual([
        { type: 'image', data: PNG_BASE64, mimeType: 'image/png' },
      ])
      expect(result.structuredContent).toMatchObject({
        images: [{ attachmentId: attachment.id, mimeType: 'image/png', dataBase64: PNG_BASE64 }],
      })
      // The text keeps the model's context free of the bytes it gets as an image.
      const text = result.content[0]
      expect(text?.type === 'text' && text.text.includes(PNG_BASE64)).toBe(false)
    })

    test('a screenshot at the 3 MB limit fits through the tool, as through the endpoint', async () => {
      const { column } = await w.api.create_column({ title: 'Big screens' })
      const { task } = await w.api.create_task({ columnId: column.id, title: 'Large' })
      const image = pngOfSize(LIMITS.imageBytes)
      const { attachment } = await toolOk(w.mcp, 'attach_screenshot', {
        taskId: task.id,
        imageBase64: image.toString('base64'),
      })
      expect(attachment).toMatchObject({ mimeType: 'image/png', size: LIMITS.imageBytes })
    })

    test('an unknown tool is a protocol error, not a tool result, naming the nearest tools', async () => {
      await expect(w.mcp.callTool({ name: 'force_release_task', arguments: {} })).rejects.toThrow(
        /Unknown tool "force_release_task"/,
      )
      await expect(w.mcp.callTool({ name: 'create_card', arguments: {} })).rejects.toThrow(
        /Unknown tool "create_card" \(did you mean [^)]*create_task/,
      )
    })

    test('no tool advertises a url parameter: images travel as imageBase64 only', async () => {
      const { tools } = await w.mcp.listTools()
      const withUrl = tools.filter((t) => 'url' in (t.inputSchema.properties ?? {}))
      expect(withUrl.map((t) => t.name)).toEqual([])
      const imageTools = tools.filter((t) => 'imageBase64' in (t.inputSchema.properties ?? {}))
      expect(imageTools.map((t) => t.name).sort()).toEqual(['attach_screenshot', 'set_node_image'])
    })

    test('tools share the endpoint’s rate budgets: calls through either count against one', async () => {
      // A fresh organisation, so its screenshot budget is untouched.
      const { agent } = await ownerWithAgent(server.url)
      const api = createAgentClient({ url: server.url, apiKey: agent.key })
      const mcp = await connect(transport, server.url, agent.key)
      try {
        const { column } = await api.create_column({ title: 'Budget' })
        const { task } = await api.create_task({ columnId: column.id, title: 'Screens' })
        const shot = { taskId: task.id, imageBase64: PNG_BASE64 }
        for (let i = 0; i < IMAGE_BUDGET; i++) {
          if (i % 2 === 0) await api.attach_screenshot(shot)
          else await toolOk(mcp, 'attach_screenshot', shot)
        }
        const result = await callTool(mcp, 'attach_screenshot', shot)
        expect(result.isError).toBe(true)
        expect(failureOf(result)).toMatchObject({
          status: 429,
          error: expect.stringMatching(/attach_screenshot budget/),
          retryAfter: expect.any(Number),
        })
        expect((failureOf(result) as { retryAfter: number }).retryAfter).toBeGreaterThan(0)
        const refused = await endpointError(api.attach_screenshot(shot))
        expect(refused).toBeInstanceOf(RateLimitedError)
        expect((await api.get_task({ taskId: task.id })).task.imageCount).toBe(IMAGE_BUDGET)
      } finally {
        await mcp.close()
      }
    })
  })

  describe('Streamable HTTP at /mcp', () => {
    /** One JSON-RPC request to /mcp as a client sends it, with `key` as the bearer token. */
    const rpc = (key: string, method: string, params: unknown = {}) =>
      fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      })

    test('a request without a key is a 401 with the endpoint’s message, saying an organisation API key is expected', async () => {
      const res = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      })
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
      const { error } = await res.json()
      expect(error).toMatch(/Missing Authorization header/)
      expect(error).toMatch(/expects an organisation API key as the bearer token/)
      const endpoint = await fetch(`${server.url}/api/agent`, { method: 'POST' })
      expect(endpoint.status).toBe(401)
      expect(error.startsWith((await endpoint.json()).error)).toBe(true)
    })

    test('a revoked key stops working at once, also for a connected client', async () => {
      const { owner, agent, orgId } = await ownerWithAgent(server.url)
      const mcp = await connectHttp(server.url, agent.key)
      try {
        const { key } = await toolOk(mcp, 'whoami')
        const revoked = await owner.request('DELETE', `/api/app/orgs/${orgId}/api-keys/${key.id}`)
        expect(revoked.status).toBe(204)
        await expect(mcp.callTool({ name: 'whoami', arguments: {} })).rejects.toMatchObject({
          code: 401,
          message: expect.stringMatching(/Invalid or revoked API key/),
        })
      } finally {
        await mcp.close()
      }
    })

    test.each(['GET', 'DELETE', 'PUT'])(
      '%s is a 405: the endpoint is stateless',
      async (method) => {
        const { agent } = await ownerWithAgent(server.url)
        const res = await fetch(`${server.url}/mcp`, {
          method,
          headers: { authorization: `Bearer ${agent.key}` },
        })
        expect(res.status).toBe(405)
        expect(res.headers.get('allow')).toBe('POST')
        expect(res.headers.get('ratelimit-policy')).toMatch(/"per-key";q=\d+;w=60/)
      },
    )

    test('a tool call answers with the rate-limit headers of the endpoint', async () => {
      const { agent } = await ownerWithAgent(server.url)
      const res = await rpc(agent.key, 'tools/call', { name: 'whoami', arguments: {} })
      expect(res.status).toBe(200)
      expect(res.headers.get('ratelimit-policy')).toMatch(/"per-key";q=\d+;w=60/)
      expect(res.headers.get('ratelimit')).toMatch(/"per-key";r=\d+;t=\d+/)
      const body = await res.json()
      expect(body.result.structuredContent.organization.name).toBe('Acme')
    })

    test('tools/list, output schemas included, is at most 40,000 characters as sent', async () => {
      const { agent } = await ownerWithAgent(server.url)
      const res = await rpc(agent.key, 'tools/list')
      expect(res.status).toBe(200)
      const sent = await res.text()
      expect(sent).toContain('"outputSchema"')
      expect(sent.length).toBeLessThanOrEqual(40_000)
    })

    test('each output schema requires the fields its answer always carries: a validator refuses {} and takes a real answer', async () => {
      const { agent } = await ownerWithAgent(server.url)
      const res = await rpc(agent.key, 'tools/list')
      const { tools } = (await res.json()).result as {
        tools: { name: string; outputSchema: object }[]
      }
      const ajv = new Ajv2020({ strict: false })
      for (const tool of tools) {
        const valid = ajv.compile(tool.outputSchema)
        expect(valid({}), tool.name).toBe(false)
      }
      const board = tools.find((t) => t.name === 'get_board') as { outputSchema: object }
      const validBoard = ajv.compile(board.outputSchema)
      const answer = await agent.ok('get_board')
      expect(validBoard(answer), JSON.stringify(validBoard.errors)).toBe(true)
      const { tasks: _tasks, ...noTasks } = answer
      expect(validBoard(noTasks)).toBe(false)
      const { columns } = answer
      const created = await agent.ok('create_task', { columnId: columns[0].id, title: 'Checked' })
      const { title: _title, ...withoutTitle } = created.task
      const validCreate = ajv.compile(
        (tools.find((t) => t.name === 'create_task') as { outputSchema: object }).outputSchema,
      )
      expect(validCreate(created)).toBe(true)
      expect(validCreate({ task: withoutTitle })).toBe(false)
    })

    test('answers that charge no budget (tools/list, a bad key) still say the policy', async () => {
      const { agent } = await ownerWithAgent(server.url)
      const list = await rpc(agent.key, 'tools/list')
      expect(list.status).toBe(200)
      expect(list.headers.get('ratelimit-policy')).toMatch(/"per-key";q=\d+;w=60/)
      expect(list.headers.get('ratelimit')).toBeNull()
      const refused = await rpc('cb_not_a_key', 'tools/list')
      expect(refused.status).toBe(401)
      expect(refused.headers.get('ratelimit-policy')).toMatch(/"per-key";q=\d+;w=60/)
    })
  })
})

describe('the stdio command', () => {
  test('refuses to start without a key or URL, and says what is missing', () => {
    const run = (args: string[], env: Record<string, string>) =>
      spawnSync(process.execPath, ['server/faces/mcp/stdio.ts', ...args], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', ...env },
        encoding: 'utf8',
      })
    const noKey = run(['--url', 'http://127.0.0.1:1'], {})
    expect(noKey.status).toBe(2)
    expect(noKey.stderr).toMatch(/CORKBOARD_API_KEY/)
    expect(noKey.stdout).toBe('')
    const noUrl = run([], { CORKBOARD_API_KEY: 'cb_x' })
    expect(noUrl.status).toBe(2)
    expect(noUrl.stderr).toMatch(/--url or set CORKBOARD_URL/)
  })
})
