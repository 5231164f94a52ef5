import { randomUUID } from 'node:crypto'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { actionNames } from '../../shared/actions.ts'
import { Agent, Person, type Reply } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'

/**
 * GET /api/openapi.json describes the agent endpoint from the action table: every action
 * as a request schema discriminated by `action`, its result, and the error bodies; and the
 * app API and the file routes from the routes' own registrations. Checked the way an
 * integrator's tooling would: the document compiles as JSON Schema 2020-12 (the dialect
 * OpenAPI 3.1 uses), and real requests and answers of the running service validate against
 * it (bad requests do not).
 */
describe('the HTTP API described as OpenAPI 3.1', () => {
  let server: TestServer
  let owner: Person
  let agent: Agent
  let doc: any
  let ajv: Ajv2020

  beforeAll(async () => {
    server = await startServer('pglite')
    owner = new Person(server.url)
    await owner.signUp()
    agent = new Agent(server.url, await owner.createKey('openapi'))
    const res = await fetch(`${server.url}/api/openapi.json`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/application\/json/)
    doc = await res.json()
    ajv = new Ajv2020({ strict: false, allErrors: true })
    addFormats.default(ajv)
    ajv.addSchema({ $id: 'doc', components: doc.components, paths: doc.paths }, 'doc')
  })
  afterAll(() => server?.close())

  const validator = (name: string) => {
    const v = ajv.getSchema(`doc#/components/schemas/${name}`)
    if (!v) throw new Error(`no schema ${name}`)
    return v
  }

  /** A schema inside `paths` by its JSON pointer, compiled against the whole document. */
  const atPointer = (...parts: string[]) => {
    const pointer = parts
      .map((p) => encodeURIComponent(p.replaceAll('~', '~0').replaceAll('/', '~1')))
      .join('/')
    const v = ajv.getSchema(`doc#/paths/${pointer}`)
    if (!v) throw new Error(`no schema at ${parts.join(' ')}`)
    return v
  }
  const requestSchema = (method: string, path: string) =>
    atPointer(path, method, 'requestBody', 'content', 'application/json', 'schema')
  const answerSchema = (method: string, path: string, status: number) =>
    atPointer(path, method, 'responses', String(status), 'content', 'application/json', 'schema')
  /** Checks a real answer: its status is documented, and its body validates. */
  const documented = (method: string, path: string, reply: Reply) => {
    const check = answerSchema(method, path, reply.status)
    expect(
      check(reply.body),
      `${method} ${path} ${reply.status}: ${JSON.stringify(check.errors)}`,
    ).toBe(true)
  }

  /** The app and file operations of the document, as `{ method, path, op }`. */
  const appOperations = () =>
    Object.entries(doc.paths)
      .filter(([path]) => path !== '/api/agent')
      .flatMap(([path, item]: [string, any]) =>
        Object.entries(item).map(([method, op]: [string, any]) => ({ method, path, op })),
      )
  /** An operation's path with `{orgId}` as the organisation and any other parameter a fresh UUID. */
  const concrete = (path: string, orgId: string) =>
    path.replace(/\{(\w+)\}/g, (_, name) => (name === 'orgId' ? orgId : randomUUID()))

  test('it is OpenAPI 3.1 with bearer security and one request schema per action, discriminated by action', () => {
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'http', scheme: 'bearer' })
    const body = doc.paths['/api/agent'].post.requestBody.content['application/json'].schema
    expect(body.oneOf).toHaveLength(actionNames.length)
    expect(Object.keys(body.discriminator.mapping).sort()).toEqual([...actionNames].sort())
    for (const status of ['200', '400', '401', '404', '409', '422', '429', '503']) {
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

  test('the Idempotency-Key header is described with its answers (Idempotent-Replayed, the 409 while running, the 422), and real ones validate', async () => {
    const post = doc.paths['/api/agent'].post
    expect(post.parameters).toEqual([
      expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false }),
      expect.objectContaining({ name: 'Answer-Tokens', in: 'header', required: false }),
    ])
    expect(post.responses['200'].headers['Idempotent-Replayed']).toBeDefined()
    expect(post.responses['409'].headers['Retry-After']).toBeDefined()
    expect(post.responses['409'].description).toMatch(/Idempotency-Key/)
    expect(post.responses['422'].description).toMatch(/Idempotency-Key/)

    const { columns } = await agent.ok('list_columns')
    const keyed = async (title: string): Promise<Reply> => {
      const res = await fetch(`${server.url}/api/agent`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${agent.key}`,
          'content-type': 'application/json',
          'idempotency-key': 'openapi-described',
        },
        body: JSON.stringify({ action: 'create_task', params: { columnId: columns[0].id, title } }),
      })
      return { status: res.status, body: await res.json(), headers: res.headers }
    }
    await keyed('Keyed')
    const replayed = await keyed('Keyed')
    expect(replayed.headers.get('idempotent-replayed')).toBe('true')
    expect(validator('CreateTaskResult')(replayed.body)).toBe(true)
    const reused = await keyed('Another body')
    expect(reused.status).toBe(422)
    documented('post', '/api/agent', reused)
  })

  test('every app and file route the router registers is in the document under its method and OpenAPI path, and the document holds no other', () => {
    const served = server.app
      .routes()
      .filter((r) => r.path.startsWith('/api/app/') || r.path.startsWith('/files/'))
    expect(served.length).toBeGreaterThanOrEqual(40)
    const registered = served.map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, '{$1}')}`).sort()
    const described = appOperations()
      .map(({ method, path }) => `${method.toUpperCase()} ${path}`)
      .sort()
    expect(described).toEqual(registered)
    expect(doc.paths['/api/agent'].post.tags).toEqual(['agent'])
    for (const { path, op } of appOperations()) {
      expect(op.tags).toEqual([path.startsWith('/files/') ? 'files' : 'app'])
    }
  })

  test('each app operation names its path parameters, its security and its error bodies', () => {
    expect(doc.components.securitySchemes.session).toMatchObject({
      type: 'apiKey',
      in: 'cookie',
      name: 'cb_session',
    })
    expect(doc.components.securitySchemes.session.description).toMatch(/Origin/)
    const ids = new Set<string>()
    for (const { method, path, op } of appOperations()) {
      const where = `${method} ${path}`
      expect(ids.has(op.operationId), where).toBe(false)
      ids.add(op.operationId)
      expect(op.summary, where).toBeTruthy()
      const inPath = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])
      const declared = (op.parameters ?? []).filter((p: any) => p.in === 'path')
      expect(
        declared.map((p: any) => p.name),
        where,
      ).toEqual(inPath)
      const needsSession = ['session', 'member', 'owner-admin'].includes(op['x-access'])
      expect(op.security, where).toEqual(needsSession ? [{ session: [] }] : [])
      if (needsSession) expect(op.responses['401'], where).toBeDefined()
      for (const [status, answer] of Object.entries(op.responses) as [string, any][]) {
        if (Number(status) < 400) continue
        const schema = answer.content['application/json'].schema.$ref
        expect(schema, `${where} ${status}`).toBe(
          status === '409' && op['x-claim-locked']
            ? '#/components/schemas/Conflict'
            : '#/components/schemas/Error',
        )
      }
      if (op.requestBody) requestSchema(method, path)
      for (const [status, answer] of Object.entries(op.responses) as [string, any][]) {
        if (answer.content?.['application/json']) answerSchema(method, path, Number(status))
      }
    }
    const deleteColumn = doc.paths['/api/app/orgs/{orgId}/columns/{columnId}'].delete
    expect(deleteColumn['x-claim-locked']).toBe(true)
    expect(deleteColumn.parameters.map((p: any) => `${p.in} ${p.name}`)).toContain(
      'query destinationColumnId',
    )
  })

  test('who may call each app operation is as documented: 401 without a session, 403 for a plain member where owner or admin is needed, 404 outside the organisation', async () => {
    const member = new Person(server.url)
    await member.signUp({ organizationName: 'Member elsewhere' })
    const invite = await owner.request('POST', `/api/app/orgs/${owner.orgId}/invites`, {
      email: member.user?.email,
      role: 'member',
    })
    documented('post', '/api/app/orgs/{orgId}/invites', invite)
    const accepted = await member.request(
      'POST',
      `/api/app/invites/${invite.body.invite.token}/accept`,
    )
    expect(accepted.status).toBe(200)
    const anonymous = new Person(server.url)

    let checked = 0
    for (const { method, path, op } of appOperations()) {
      const access = op['x-access']
      if (access === 'public' || access === 'signed-link') continue
      const where = `${method} ${path}`
      const alone = await anonymous.request(method.toUpperCase(), concrete(path, owner.orgId))
      expect(alone.status, where).toBe(401)
      documented(method, path, alone)
      if (access === 'session') continue
      const elsewhere = await member.request(method.toUpperCase(), concrete(path, randomUUID()))
      expect(elsewhere.status, where).toBe(404)
      documented(method, path, elsewhere)
      if (access !== 'owner-admin') continue
      const plain = await member.request(method.toUpperCase(), concrete(path, owner.orgId))
      expect(plain.status, where).toBe(403)
      documented(method, path, plain)
      checked++
    }
    expect(checked).toBeGreaterThanOrEqual(10)
  })

  test('real app requests validate against the documented request schemas; bad bodies do not', async () => {
    const signupBody = {
      email: `described-${randomUUID()}@example.test`,
      password: 'correct horse battery',
      name: 'Dee Scribed',
      organizationName: 'Described',
    }
    const signup = requestSchema('post', '/api/app/signup')
    expect(signup(signupBody), JSON.stringify(signup.errors)).toBe(true)
    expect(signup({ ...signupBody, password: 'short' })).toBe(false)
    expect(signup({ ...signupBody, organisation: 'x' })).toBe(false)
    const person = new Person(server.url)
    const signedUp = await person.request('POST', '/api/app/signup', signupBody)
    expect(signedUp.status).toBe(201)

    const login = requestSchema('post', '/api/app/login')
    const loginBody = { email: signupBody.email, password: signupBody.password }
    expect(login(loginBody)).toBe(true)
    expect(login({ email: signupBody.email })).toBe(false)
    expect((await person.request('POST', '/api/app/login', loginBody)).status).toBe(200)
    const wrong = await person.request('POST', '/api/app/login', { ...loginBody, password: 'nope' })
    expect(wrong.status).toBe(401)
    documented('post', '/api/app/login', wrong)

    const hooks = '/api/app/orgs/{orgId}/webhooks'
    const webhook = requestSchema('post', hooks)
    const webhookBody = { url: 'https://example.com/hook', events: ['card.created', 'card.moved'] }
    expect(webhook(webhookBody), JSON.stringify(webhook.errors)).toBe(true)
    expect(webhook({ ...webhookBody, events: [] })).toBe(false)
    expect(webhook({ ...webhookBody, events: ['card.deleted'] })).toBe(false)
    const created = await owner.request(
      'POST',
      `/api/app/orgs/${owner.orgId}/webhooks`,
      webhookBody,
    )
    expect(created.status).toBe(201)
    documented('post', hooks, created)

    const columnPath = '/api/app/orgs/{orgId}/columns/{columnId}'
    const patchColumn = requestSchema('patch', columnPath)
    expect(patchColumn({ onFire: true })).toBe(true)
    expect(patchColumn({ role: 'in_progress', onFire: false })).toBe(true)
    expect(patchColumn({ role: 'nonsense' })).toBe(false)
    expect(patchColumn({ onFire: 'yes' })).toBe(false)
    const { columns } = await agent.ok('list_columns')
    const patched = await owner.request(
      'PATCH',
      `/api/app/orgs/${owner.orgId}/columns/${columns[0].id}`,
      { onFire: true },
    )
    expect(patched.status).toBe(200)
    documented('patch', columnPath, patched)
    const refused = await owner.request(
      'PATCH',
      `/api/app/orgs/${owner.orgId}/columns/${columns[0].id}`,
      { onFire: 'yes' },
    )
    expect(refused.status).toBe(400)
    documented('patch', columnPath, refused)
  })

  test('real app answers validate against the documented answer schemas, a claim-locked refusal against Conflict', async () => {
    const org = owner.orgId
    const at = (path: string) => path.replace('{orgId}', org)
    const call = async (method: string, path: string, concretePath: string, body?: unknown) => {
      const reply = await owner.request(method.toUpperCase(), concretePath, body)
      documented(method, path, reply)
      return reply
    }

    const projects = '/api/app/orgs/{orgId}/projects'
    const project = await call('post', projects, at(projects), { name: 'Described' })
    expect(project.status).toBe(201)
    expect((await call('get', projects, at(projects))).status).toBe(200)
    const syncToken = '/api/app/orgs/{orgId}/sync-token'
    expect((await call('post', syncToken, at(syncToken))).status).toBe(200)

    const maps = '/api/app/orgs/{orgId}/maps'
    const map = await call('post', maps, at(maps), { title: 'Described map' })
    expect(map.status).toBe(201)
    const mapPath = `${maps}/{mapId}`
    const renamed = await call('patch', mapPath, `${at(maps)}/${map.body.map.id}`, {
      title: 'Renamed',
    })
    expect(renamed.status).toBe(200)
    expect((await call('get', maps, at(maps))).status).toBe(200)

    const { columns } = await agent.ok('list_columns')
    const { task } = await agent.ok('create_task', {
      columnId: columns[0].id,
      title: 'In a project',
      projectId: project.body.project.id,
    })
    await agent.ok('claim_task', { taskId: task.id, agentName: 'Holder' })
    const projectOf = '/api/app/orgs/{orgId}/tasks/{taskId}/project'
    const locked = await call('delete', projectOf, at(projectOf).replace('{taskId}', task.id))
    expect(locked.status).toBe(409)
    expect(locked.body.holder).toBeDefined()
    const forceRelease = '/api/app/orgs/{orgId}/tasks/{taskId}/force-release'
    const released = await call('post', forceRelease, at(forceRelease).replace('{taskId}', task.id))
    expect(released.body).toEqual({ released: true })
    const unset = await call('delete', projectOf, at(projectOf).replace('{taskId}', task.id))
    expect(unset.status).toBe(200)

    await agent.ok('archive_task', { taskId: task.id })
    const archived = '/api/app/orgs/{orgId}/archived-tasks'
    const page = await call('get', archived, `${at(archived)}?limit=10`)
    expect(page.body.tasks.map((t: { id: string }) => t.id)).toContain(task.id)
    const restore = '/api/app/orgs/{orgId}/tasks/{taskId}/restore'
    const restored = await call('post', restore, at(restore).replace('{taskId}', task.id))
    expect(restored.status).toBe(200)

    const { column } = await agent.ok('create_column', { title: 'Short-lived' })
    await agent.ok('move_task', { taskId: task.id, columnId: column.id })
    const columnPath = '/api/app/orgs/{orgId}/columns/{columnId}'
    const deleted = await call(
      'delete',
      columnPath,
      `${at(columnPath).replace('{columnId}', column.id)}?destinationColumnId=${columns[0].id}`,
    )
    expect(deleted.body).toMatchObject({ deleted: true, movedCount: 1 })
  })
})
