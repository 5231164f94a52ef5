import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

describe.each(STORAGES)('people, organisations and sessions (%s)', (kind) => {
  let server: TestServer

  beforeAll(async () => {
    server = await startServer(kind)
  })
  afterAll(() => server.close())

  test('sign-up returns 201 with the person and the organisation they own, and sets an HttpOnly session cookie', async () => {
    const p = new Person(server.url)
    const res = await p.request('POST', '/api/app/signup', {
      email: 'Owner@Example.test',
      password: 'long enough secret',
      name: 'Olga Owner',
      organizationName: 'Olga & Co',
    })
    expect(res.status).toBe(201)
    expect(res.body.user).toMatchObject({ email: 'owner@example.test', name: 'Olga Owner' })
    expect(res.body.organization).toMatchObject({ name: 'Olga & Co', role: 'owner' })
    const cookie = res.headers.get('set-cookie') ?? ''
    expect(cookie).toMatch(/HttpOnly/)
    expect(cookie).toMatch(/SameSite=Lax/)
    const me = await p.request('GET', '/api/app/me')
    expect(me.body.organizations).toEqual([
      { id: res.body.organization.id, name: 'Olga & Co', role: 'owner' },
    ])
  })

  test('passwords are stored only as scrypt hashes', async () => {
    const p = new Person(server.url)
    await p.signUp({ password: 'plain text never stored' })
    const [row] = await server.storage.db.query<{ password_hash: string }>(
      'select password_hash from users where id = $1',
      [p.user?.id],
    )
    expect(row?.password_hash).toMatch(/^scrypt\$\d+\$8\$1\$/)
    expect(row?.password_hash).not.toContain('plain text')
  })

  test('signing up twice with one e-mail is a 409', async () => {
    const email = `dup-${crypto.randomUUID()}@example.test`
    await new Person(server.url).signUp({ email })
    const res = await new Person(server.url).request('POST', '/api/app/signup', {
      email: email.toUpperCase(),
      password: 'another secret',
      name: 'Dup',
      organizationName: 'Dup',
    })
    expect(res.status).toBe(409)
  })

  test('sign-up with a bad e-mail, a short password or an unknown field is a 400 naming it', async () => {
    const p = new Person(server.url)
    const base = {
      email: 'ok@example.test',
      password: 'long enough',
      name: 'N',
      organizationName: 'O',
    }
    expect(
      (await p.request('POST', '/api/app/signup', { ...base, email: 'nope' })).body.error,
    ).toMatch(/email/)
    expect(
      (await p.request('POST', '/api/app/signup', { ...base, password: 'short' })).body.error,
    ).toMatch(/password/)
    const extra = await p.request('POST', '/api/app/signup', { ...base, admin: true })
    expect(extra.status).toBe(400)
    expect(extra.body.error).toContain('"admin"')
  })

  test('log-in with the right password opens a session; a wrong one is a 401 that does not say which part was wrong', async () => {
    const first = new Person(server.url)
    const { user } = await first.signUp({ password: 'right password' })
    const p = new Person(server.url)
    const bad = await p.request('POST', '/api/app/login', {
      email: user.email,
      password: 'wrong password',
    })
    expect(bad.status).toBe(401)
    const unknown = await p.request('POST', '/api/app/login', {
      email: 'nobody@example.test',
      password: 'x',
    })
    expect(unknown.body.error).toBe(bad.body.error)
    const ok = await p.request('POST', '/api/app/login', {
      email: user.email,
      password: 'right password',
    })
    expect(ok.status).toBe(200)
    expect(ok.body.organizations).toHaveLength(1)
    expect((await p.request('GET', '/api/app/me')).status).toBe(200)
  })

  test('log-out ends the session', async () => {
    const p = new Person(server.url)
    await p.signUp()
    const cookie = p.cookie
    expect((await p.request('POST', '/api/app/logout')).status).toBe(204)
    p.cookie = cookie
    expect((await p.request('GET', '/api/app/me')).status).toBe(401)
  })

  test('without a session the app API is a 401', async () => {
    expect((await new Person(server.url).request('GET', '/api/app/me')).status).toBe(401)
  })

  test('a person outside an organisation gets 404 for its routes; a member without the role gets 403', async () => {
    const owner = new Person(server.url)
    await owner.signUp()
    const stranger = new Person(server.url)
    await stranger.signUp()
    expect((await stranger.request('GET', `/api/app/orgs/${owner.orgId}/api-keys`)).status).toBe(
      404,
    )
    expect((await stranger.request('POST', `/api/app/orgs/${owner.orgId}/sync-token`)).status).toBe(
      404,
    )

    const member = new Person(server.url)
    await member.signUp()
    const invite = await owner.request('POST', `/api/app/orgs/${owner.orgId}/invites`, {
      email: member.user?.email,
      role: 'member',
    })
    expect(invite.status).toBe(201)
    expect(
      (await member.request('POST', `/api/app/invites/${invite.body.invite.token}/accept`)).status,
    ).toBe(200)
    const refused = await member.request('POST', `/api/app/orgs/${owner.orgId}/api-keys`, {
      name: 'nope',
    })
    expect(refused.status).toBe(403)
    expect(
      (
        await member.request('POST', `/api/app/orgs/${owner.orgId}/invites`, {
          email: 'x@y.test',
          role: 'member',
        })
      ).status,
    ).toBe(403)
    expect((await member.request('POST', `/api/app/orgs/${owner.orgId}/sync-token`)).status).toBe(
      200,
    )
  })

  test('an accepted invite makes the person a member with the invited role, in a second organisation', async () => {
    const owner = new Person(server.url)
    await owner.signUp({ organizationName: 'Host org' })
    const guest = new Person(server.url)
    await guest.signUp({ organizationName: 'Guest home' })
    const { body } = await owner.request('POST', `/api/app/orgs/${owner.orgId}/invites`, {
      email: guest.user?.email,
      role: 'admin',
    })
    expect(body.invite).toMatchObject({ email: guest.user?.email, role: 'admin' })
    const accepted = await guest.request('POST', `/api/app/invites/${body.invite.token}/accept`)
    expect(accepted.body).toEqual({
      organization: { id: owner.orgId, name: 'Host org' },
      role: 'admin',
    })
    const me = await guest.request('GET', '/api/app/me')
    expect(
      me.body.organizations.map((o: { name: string; role: string }) => `${o.name}:${o.role}`),
    ).toEqual(['Guest home:owner', 'Host org:admin'])
    const members = await owner.request('GET', `/api/app/orgs/${owner.orgId}/members`)
    expect(members.body.members.map((m: { email: string }) => m.email)).toContain(guest.user?.email)
  })

  test('an invite is for the address it was sent to, and is used once', async () => {
    const owner = new Person(server.url)
    await owner.signUp()
    const invited = new Person(server.url)
    await invited.signUp()
    const other = new Person(server.url)
    await other.signUp()
    const { body } = await owner.request('POST', `/api/app/orgs/${owner.orgId}/invites`, {
      email: invited.user?.email,
      role: 'member',
    })
    expect(
      (await other.request('POST', `/api/app/invites/${body.invite.token}/accept`)).status,
    ).toBe(403)
    expect(
      (await invited.request('POST', `/api/app/invites/${body.invite.token}/accept`)).status,
    ).toBe(200)
    expect(
      (await invited.request('POST', `/api/app/invites/${body.invite.token}/accept`)).status,
    ).toBe(409)
    expect((await invited.request('POST', '/api/app/invites/not-a-token/accept')).status).toBe(404)
  })

  test('an invite role other than admin or member is a 400', async () => {
    const owner = new Person(server.url)
    await owner.signUp()
    const res = await owner.request('POST', `/api/app/orgs/${owner.orgId}/invites`, {
      email: 'a@b.test',
      role: 'owner',
    })
    expect(res.status).toBe(400)
    expect(res.body.error).toMatch(/role/)
  })

  test('projects are made by people; list_projects shows them to agents', async () => {
    const owner = new Person(server.url)
    await owner.signUp()
    const made = await owner.request('POST', `/api/app/orgs/${owner.orgId}/projects`, {
      name: 'Apollo',
      color: '#ff8800',
    })
    expect(made.status).toBe(201)
    expect(made.body.project).toMatchObject({ name: 'Apollo', color: '#ff8800' })
    const defaulted = await owner.request('POST', `/api/app/orgs/${owner.orgId}/projects`, {
      name: 'Gemini',
    })
    expect(defaulted.body.project.color).toMatch(/^#[0-9a-f]{6}$/)
    const bad = await owner.request('POST', `/api/app/orgs/${owner.orgId}/projects`, {
      name: 'X',
      color: 'red',
    })
    expect(bad.status).toBe(400)
    expect(bad.body.error).toMatch(/color/)
    const key = await owner.createKey()
    const res = await fetch(`${server.url}/api/agent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ action: 'list_projects' }),
    })
    const { projects } = await res.json()
    expect(projects.map((p: { name: string }) => p.name)).toEqual(['Apollo', 'Gemini'])
    expect(projects[0]).toEqual({
      id: made.body.project.id,
      name: 'Apollo',
      color: '#ff8800',
      createdAt: expect.any(String),
    })
  })

  test('a new organisation starts with the Backlog, Ready, In progress and Done columns', async () => {
    const owner = new Person(server.url)
    await owner.signUp()
    const key = await owner.createKey()
    const res = await fetch(`${server.url}/api/agent`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: JSON.stringify({ action: 'list_columns' }),
    })
    const { columns } = await res.json()
    expect(columns.map((c: { title: string; role: string }) => `${c.title}/${c.role}`)).toEqual([
      'Backlog/backlog',
      'Ready/ready',
      'In progress/in_progress',
      'Done/done',
    ])
  })
})
