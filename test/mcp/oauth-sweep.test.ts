import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest'
import { sha256Hex } from '../../server/auth/crypto.ts'
import {
  createGrant,
  type IssuedTokens,
  listGrants,
  refreshGrant,
  revokeGrant,
} from '../../server/auth/oauth-grants.ts'
import { OAuthSweeper, sweepOAuth } from '../../server/auth/oauth-sweep.ts'
import { Person } from '../support/client.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { freshDb, STORAGES } from '../support/storage.ts'

const REDIRECT = 'http://127.0.0.1:33418/callback'

const postMcp = (url: string, token: string) =>
  fetch(`${url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  })

describe.each(STORAGES)('the OAuth sweep (%s)', (kind) => {
  let server: TestServer
  let person: Person

  beforeAll(async () => {
    server = await startServer(kind)
    person = new Person(server.url)
    await person.signUp({ password: 'correct horse battery' })
  })
  afterAll(() => server?.close())

  const register = async (name: string): Promise<string> => {
    const res = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: name, redirect_uris: [REDIRECT] }),
    })
    expect(res.status).toBe(201)
    return (await res.json()).client_id
  }
  const grant = (clientId: string, clientName: string) =>
    createGrant(server.app.db, {
      orgId: person.orgId,
      clientId,
      clientName,
      userId: person.user?.id ?? '',
      userEmail: person.user?.email ?? '',
      redirectUri: REDIRECT,
      resource: `${server.url}/mcp`,
      publicUrl: undefined,
    })
  const refresh = async (tokens: IssuedTokens, clientId: string) => {
    const outcome = await refreshGrant(server.app.db, tokens.refresh_token, clientId)
    if (outcome.type !== 'issued') throw new Error(`refresh gave ${outcome.type}`)
    return outcome.tokens
  }
  const expire = (table: string, column: string, key: string) =>
    server.app.db.query(
      `update ${table} set expires_at = now() - interval '1 second' where ${column} = $1`,
      [key],
    )
  const age = (clientId: string) =>
    server.app.db.query(
      `update oauth_clients set created_at = now() - interval '31 days' where id = $1`,
      [clientId],
    )
  const code = (clientId: string, hash: string) =>
    server.app.db.query(
      `insert into oauth_codes (code_hash, client_id, org_id, user_id, redirect_uri, code_challenge, resource, expires_at)
       values ($1, $2, $3, $4, $5, $6, $7, now() + interval '5 minutes')`,
      [
        hash,
        clientId,
        person.orgId,
        person.user?.id,
        REDIRECT,
        'x'.repeat(43),
        `${server.url}/mcp`,
      ],
    )
  const column = async (sql: string) =>
    (await server.app.db.query<{ v: string }>(sql)).map((r) => r.v).sort()

  test('expired codes and tokens, revoked grants and long-unused clients go; spent refresh tokens stay until their expiry; the live grant keeps working', async () => {
    const live = await register('Live app')
    const t1 = await grant(live, 'Live app')
    const t2 = await refresh(t1, live)
    const t3 = await refresh(t2, live)
    // t1: access expired, refresh spent and expired: both go.
    await expire('oauth_tokens', 'token_hash', sha256Hex(t1.access_token))
    await expire('oauth_tokens', 'token_hash', sha256Hex(t1.refresh_token))
    // t2: refresh spent, not yet expired: kept, so a replay is still recognised.
    await code(live, 'expired-code')
    await expire('oauth_codes', 'code_hash', 'expired-code')

    const revokedClient = await register('Revoked app')
    await grant(revokedClient, 'Revoked app')
    const [revoked] = (await listGrants(server.app.db, person.orgId)).filter(
      (g) => g.clientName === 'Revoked app',
    )
    const revokedKey = await revokeGrant(server.app.db, person.orgId, revoked?.id ?? '')
    await age(revokedClient)

    const unused = await register('Unused app')
    await age(unused)
    const recent = await register('Recent app')
    const pending = await register('Pending app')
    await age(pending)
    await code(pending, 'pending-code')

    const before = await column('select token_hash as v from oauth_tokens')
    expect(await sweepOAuth(server.app.db)).toEqual({
      codes: 1,
      tokens: 2,
      revokedGrants: 1,
      clients: 2,
    })

    expect(await column('select token_hash as v from oauth_tokens')).toEqual(
      before
        .filter((h) => h !== sha256Hex(t1.access_token) && h !== sha256Hex(t1.refresh_token))
        .sort(),
    )
    expect(await column('select token_hash as v from oauth_tokens')).toEqual(
      [t2.access_token, t2.refresh_token, t3.access_token, t3.refresh_token].map(sha256Hex).sort(),
    )
    expect(await column('select code_hash as v from oauth_codes')).toEqual(['pending-code'])
    expect(await column('select id as v from oauth_clients')).toEqual(
      [live, recent, pending].sort(),
    )
    expect(
      await column(
        'select c.name as v from oauth_grants g join oauth_clients c on c.id = g.client_id',
      ),
    ).toEqual(['Live app'])
    // The revoked grant's key row and robot stay, revoked: its past writes name them.
    const [key] = await server.app.db.query<{ revoked: boolean }>(
      'select revoked_at is not null as revoked from api_keys where id = $1',
      [revokedKey?.keyId],
    )
    expect(key?.revoked).toBe(true)

    // A second sweep finds nothing.
    expect(await sweepOAuth(server.app.db)).toEqual({
      codes: 0,
      tokens: 0,
      revokedGrants: 0,
      clients: 0,
    })

    expect((await postMcp(server.url, t3.access_token)).status).toBe(200)
    const t4 = await refresh(t3, live)
    expect((await postMcp(server.url, t4.access_token)).status).toBe(200)
    // The spent refresh token the sweep kept still gives a replay away.
    expect((await refreshGrant(server.app.db, t2.refresh_token, live)).type).toBe('replayed')
    expect((await postMcp(server.url, t4.access_token)).status).toBe(401)
  })

  test('sweeps on several processes at once delete each row once and agree on the total', async () => {
    const client = await register('Racing app')
    const tokens: IssuedTokens[] = []
    for (let i = 0; i < 5; i++) tokens.push(await grant(client, 'Racing app'))
    for (const t of tokens) {
      await expire('oauth_tokens', 'token_hash', sha256Hex(t.access_token))
      await expire('oauth_tokens', 'token_hash', sha256Hex(t.refresh_token))
    }
    const runs = await Promise.all([1, 2, 3].map(() => sweepOAuth(server.app.db)))
    expect(runs.reduce((n, r) => n + r.tokens, 0)).toBe(10)
    expect(
      await server.app.db.query(
        `select 1 from oauth_tokens t join oauth_grants g on g.id = t.grant_id where g.client_id = $1`,
        [client],
      ),
    ).toEqual([])
  })

  test('a sweep while the database is away is logged, and the sweeper stops cleanly', async () => {
    const gone = await freshDb(kind)
    await gone.drop()
    const errors: unknown[][] = []
    const sweeper = new OAuthSweeper({
      db: gone.db,
      log: { error: (...args: unknown[]) => errors.push(args), warn: () => {}, info: () => {} },
    })
    sweeper.start()
    await vi.waitFor(() => expect(errors).toHaveLength(1), { timeout: 5000 })
    await expect(sweeper.stop()).resolves.toBeUndefined()
    expect(String(errors[0]?.[0])).toMatch(/sweeping spent OAuth rows failed/)
  })
})
