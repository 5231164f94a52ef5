import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'

describe.each(STORAGES)('webhook registration in the app API (%s)', (kind) => {
  let server: TestServer
  let owner: Person
  let admin: Person
  let member: Person
  let outsider: Person
  const hooks = () => `/api/app/orgs/${owner.orgId}/webhooks`

  /** A person invited into the owner's organisation with `role`. */
  async function invited(role: 'admin' | 'member'): Promise<Person> {
    const email = `${role}-${randomBytes(4).toString('hex')}@example.test`
    const invite = await owner.request('POST', `/api/app/orgs/${owner.orgId}/invites`, {
      email,
      role,
    })
    const p = new Person(server.url)
    await p.signUp({ email })
    const accepted = await p.request('POST', `/api/app/invites/${invite.body.invite.token}/accept`)
    expect(accepted.status).toBe(200)
    return p
  }

  beforeAll(async () => {
    // Private addresses are NOT allowed here (the default), as in production.
    server = await startServer(kind)
    owner = new Person(server.url)
    await owner.signUp()
    admin = await invited('admin')
    member = await invited('member')
    outsider = new Person(server.url)
    await outsider.signUp()
  })
  afterAll(() => server.close())

  test('an owner registers an address and events and gets a whsec_ secret of 32 random bytes, shown only once', async () => {
    const res = await owner.request('POST', hooks(), {
      url: 'https://hooks.example.com/corkboard?team=1',
      events: ['card.created', 'comment.added'],
    })
    expect(res.status).toBe(201)
    expect(res.body.webhook).toMatchObject({
      url: 'https://hooks.example.com/corkboard?team=1',
      events: ['card.created', 'comment.added'],
      enabled: true,
    })
    expect(res.body.webhook.id).toMatch(/^[0-9a-f-]{36}$/)
    const secret: string = res.body.secret
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32)

    const list = await owner.request('GET', hooks())
    expect(list.status).toBe(200)
    const listed = list.body.webhooks.find((w: { id: string }) => w.id === res.body.webhook.id)
    expect(listed).toMatchObject({
      url: 'https://hooks.example.com/corkboard?team=1',
      events: ['card.created', 'comment.added'],
      enabled: true,
      disabledReason: null,
      consecutiveFailures: 0,
      recentDeliveries: [],
    })
    expect(JSON.stringify(list.body)).not.toContain(secret.slice(6))
  })

  test('each registration gets its own secret', async () => {
    const a = await owner.request('POST', hooks(), {
      url: 'https://a.example.com/',
      events: ['card.moved'],
    })
    const b = await owner.request('POST', hooks(), {
      url: 'https://a.example.com/',
      events: ['card.moved'],
    })
    expect(a.body.secret).not.toBe(b.body.secret)
    expect(a.body.webhook.id).not.toBe(b.body.webhook.id)
  })

  test('an admin may register and list; a member gets 403; a person outside the organisation 404; nobody signed in 401', async () => {
    const body = { url: 'https://admin.example.com/hook', events: ['card.created'] }
    expect((await admin.request('POST', hooks(), body)).status).toBe(201)
    expect((await admin.request('GET', hooks())).status).toBe(200)

    const asMember = await member.request('POST', hooks(), body)
    expect(asMember.status).toBe(403)
    expect(asMember.body.error).toMatch(/owner or admin/)
    expect((await member.request('GET', hooks())).status).toBe(403)

    expect((await outsider.request('POST', hooks(), body)).status).toBe(404)
    expect((await outsider.request('GET', hooks())).status).toBe(404)

    const anonymous = new Person(server.url)
    expect((await anonymous.request('POST', hooks(), body)).status).toBe(401)
  })

  test.each([
    [undefined, /url is required/],
    [42, /url must be a string/],
    ['not a url', /url must be an absolute http/],
    ['/relative/path', /url must be an absolute http/],
    ['ftp://example.com/hook', /url must use http or https, not ftp/],
    ['javascript:alert(1)', /url must use http or https/],
    ['https://user:pass@example.com/hook', /url must not contain a user name or password/],
    [`https://example.com/${'a'.repeat(2001)}`, /url must be at most 2000 characters/],
  ])('a bad url (%s) is a 400 naming url', async (url, message) => {
    const res = await owner.request('POST', hooks(), { url, events: ['card.created'] })
    expect(res.status).toBe(400)
    expect(res.body.error).toMatch(message)
  })

  test.each([
    [undefined, /events is required/],
    [[], /events must name at least one of card.created, card.moved, comment.added/],
    ['card.created', /events must be an array/],
    [['card.created', 'card.deleted'], /events must be one of card.created, card.moved/],
  ])('bad events (%j) are a 400 naming events', async (events, message) => {
    const res = await owner.request('POST', hooks(), { url: 'https://example.com/', events })
    expect(res.status).toBe(400)
    expect(res.body.error).toMatch(message)
  })

  test('repeated event names are folded, keeping their order', async () => {
    const res = await owner.request('POST', hooks(), {
      url: 'https://fold.example.com/',
      events: ['comment.added', 'card.created', 'comment.added'],
    })
    expect(res.status).toBe(201)
    expect(res.body.webhook.events).toEqual(['comment.added', 'card.created'])
  })

  test('a body parameter the route does not take is a 400 naming it', async () => {
    const res = await owner.request('POST', hooks(), {
      url: 'https://example.com/',
      events: ['card.created'],
      secret: 'mine',
    })
    expect(res.status).toBe(400)
    expect(res.body.error).toMatch(/"secret"/)
  })

  test.each([
    'http://127.0.0.1:8080/hook',
    'http://10.0.0.1/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]:8080/',
    'http://[::ffff:10.0.0.1]/',
    'http://[fd00:ec2::254]/',
    'http://100.64.0.1/',
    'http://localhost:3000/',
    'http://0x7f.1/',
  ])(
    'with private addresses not allowed, registering %s is refused with a 400 naming url',
    async (url) => {
      const res = await owner.request('POST', hooks(), { url, events: ['card.created'] })
      expect(res.status).toBe(400)
      expect(res.body.error).toMatch(/url must point to a public address/)
      expect(res.body.error).toMatch(/WEBHOOK_ALLOW_PRIVATE=1/)
    },
  )

  test('deleting an endpoint answers 204, after which it is gone (404 on a second delete)', async () => {
    const created = await owner.request('POST', hooks(), {
      url: 'https://gone.example.com/',
      events: ['card.created'],
    })
    const path = `${hooks()}/${created.body.webhook.id}`
    expect((await member.request('DELETE', path)).status).toBe(403)
    expect((await owner.request('DELETE', path)).status).toBe(204)
    expect((await owner.request('DELETE', path)).status).toBe(404)
    const list = await owner.request('GET', hooks())
    expect(list.body.webhooks.map((w: { id: string }) => w.id)).not.toContain(
      created.body.webhook.id,
    )
  })

  test('a malformed, unknown or foreign webhook id is a 404', async () => {
    const other = await outsider.request('POST', `/api/app/orgs/${outsider.orgId}/webhooks`, {
      url: 'https://outsider.example.com/',
      events: ['card.created'],
    })
    expect(other.status).toBe(201)
    for (const id of ['nope', '00000000-0000-4000-8000-000000000000', other.body.webhook.id]) {
      expect((await owner.request('DELETE', `${hooks()}/${id}`)).status).toBe(404)
      expect((await owner.request('POST', `${hooks()}/${id}/enable`)).status).toBe(404)
    }
  })

  test('enabling an endpoint that is already on is harmless and returns it', async () => {
    const created = await owner.request('POST', hooks(), {
      url: 'https://on.example.com/',
      events: ['card.created'],
    })
    const res = await admin.request('POST', `${hooks()}/${created.body.webhook.id}/enable`)
    expect(res.status).toBe(200)
    expect(res.body.webhook).toMatchObject({ id: created.body.webhook.id, enabled: true })
    expect(
      (await member.request('POST', `${hooks()}/${created.body.webhook.id}/enable`)).status,
    ).toBe(403)
  })

  test('an organisation can register at most 20 webhooks', async () => {
    const solo = new Person(server.url)
    await solo.signUp()
    const path = `/api/app/orgs/${solo.orgId}/webhooks`
    for (let i = 0; i < 20; i++) {
      const res = await solo.request('POST', path, {
        url: `https://many.example.com/${i}`,
        events: ['card.created'],
      })
      expect(res.status).toBe(201)
    }
    const over = await solo.request('POST', path, {
      url: 'https://many.example.com/21',
      events: ['card.created'],
    })
    expect(over.status).toBe(400)
    expect(over.body.error).toMatch(/at most 20 webhooks/)
  })
})
