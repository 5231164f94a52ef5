import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { actionNames } from '../../shared/actions.ts'
import { Agent, Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'

/**
 * GET /api/openapi.json describes the agent endpoint from the action table: every action
 * as a request schema discriminated by `action`, its result, and the error bodies. Checked
 * the way an integrator's tooling would: the document compiles as JSON Schema 2020-12 (the
 * dialect OpenAPI 3.1 uses), and real requests and answers of the running service validate
 * against it (bad requests do not).
 */
describe('the agent endpoint described as OpenAPI 3.1', () => {
  let server: TestServer
  let agent: Agent
  let doc: any
  let ajv: Ajv2020

  beforeAll(async () => {
    server = await startServer('pglite')
    const owner = new Person(server.url)
    await owner.signUp()
    agent = new Agent(server.url, await owner.createKey('openapi'))
    const res = await fetch(`${server.url}/api/openapi.json`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/application\/json/)
    doc = await res.json()
    ajv = new Ajv2020({ strict: false, allErrors: true })
    addFormats.default(ajv)
    ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc')
  })
  afterAll(() => server?.close())

  const validator = (name: string) => {
    const v = ajv.getSchema(`doc#/components/schemas/${name}`)
    if (!v) throw new Error(`no schema ${name}`)
    return v
  }

  test('it is OpenAPI 3.1 with bearer security and one request schema per action, discriminated by action', () => {
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' })
    const body = doc.paths['/api/agent'].post.requestBody.content['application/json'].schema
    expect(body.oneOf).toHaveLength(actionNames.length)
    expect(Object.keys(body.discriminator.mapping).sort()).toEqual([...actionNames].sort())
    for (const status of ['200', '400', '401', '404', '409', '429', '503']) {
      expect(doc.paths['/api/agent'].post.responses[status], status).toBeDefined()
    }
  })

  test('real requests and answers validate against it; a bad request does not', async () => {
    const { columns } = await agent.ok('list_columns')
    const request = {
      action: 'create_task',
      params: { columnId: columns[0].id, title: 'Described', priority: 'high' },
    }
    expect(validator('CreateTaskRequest')(request)).toBe(true)
    const created = await agent.ok(request.action, request.params)
    const checkResult = validator('CreateTaskResult')
    expect(checkResult(created), JSON.stringify(checkResult.errors)).toBe(true)
    const board = await agent.ok('get_board')
    expect(validator('GetBoardResult')(board)).toBe(true)
    const whoami = await agent.ok('whoami')
    expect(validator('WhoamiResult')(whoami)).toBe(true)

    expect(
      validator('CreateTaskRequest')({ ...request, params: { ...request.params, labels: [] } }),
    ).toBe(false)
    expect(
      validator('CreateTaskRequest')({ action: 'create_task', params: { title: 'no column' } }),
    ).toBe(false)
    const refused = await fetch(`${server.url}/api/agent`, { method: 'POST', body: '{}' })
    expect(refused.status).toBe(401)
    expect(validator('Error')(await refused.json())).toBe(true)
  })
})
