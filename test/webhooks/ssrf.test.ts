import type { LookupAddress } from 'node:dns'
import { Socket } from 'node:net'
import { afterAll, afterEach, beforeAll, describe, expect, test, vi } from 'vitest'
import { blockedReason, guardedLookup } from '../../server/http/address-guard.ts'
import { Sender } from '../../server/webhooks/sender.ts'
import { ownerWithAgent } from '../support/client.ts'
import { startServer } from '../support/server.ts'
import { STORAGES } from '../support/storage.ts'
import { deliveryRows, eventually, firstColumn, Receiver, register } from './support.ts'

describe('the address guard', () => {
  test.each([
    ['127.0.0.1', /loopback/],
    ['127.255.255.254', /loopback/],
    ['10.0.0.1', /private/],
    ['172.16.5.4', /private/],
    ['192.168.1.1', /private/],
    ['100.64.0.1', /CGNAT/],
    ['100.100.100.200', /CGNAT/],
    ['169.254.169.254', /link-local.*metadata/],
    ['168.63.129.16', /metadata/],
    ['0.0.0.0', /this network/],
    ['224.0.0.1', /multicast/],
    ['255.255.255.255', /reserved/],
    ['::1', /loopback/],
    ['::', /unspecified/],
    ['::ffff:10.0.0.1', /private.*inside an IPv6 address/],
    ['::ffff:127.0.0.1', /loopback/],
    ['::ffff:a9fe:a9fe', /link-local/],
    ['64:ff9b::a00:1', /private/],
    ['2002:a00:1::', /private/],
    ['fd00:ec2::254', /unique-local/],
    ['fc00::1', /unique-local/],
    ['fe80::1%eth0', /link-local/],
    ['ff02::1', /multicast/],
    ['2001:db8::1', /documentation/],
    ['not-an-ip', /not an IP address/],
  ])('%s is refused (%s)', (address, why) => {
    expect(blockedReason(address)).toMatch(why)
  })

  test.each([
    '8.8.8.8',
    '1.1.1.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
  ])('%s, a public address, is allowed', (address) => {
    expect(blockedReason(address)).toBeUndefined()
  })

  const resolver =
    (addresses: LookupAddress[]) =>
    (_host: string, _options: unknown, callback: (e: null, a: LookupAddress[]) => void) =>
      callback(null, addresses)

  test('a name is refused when any address it resolves to is private (a public one beside it does not help)', async () => {
    const lookup = guardedLookup(
      false,
      resolver([
        { address: '93.184.215.14', family: 4 },
        { address: '10.0.0.1', family: 4 },
      ]),
    )
    const error = await new Promise<Error | null>((resolve) =>
      lookup('rebound.example', { all: true }, (e) => resolve(e)),
    )
    expect(error?.message).toMatch(/refused to connect to rebound.example \(10.0.0.1\)/)
  })

  test('a name resolving to public addresses only is passed through to the socket', async () => {
    const lookup = guardedLookup(false, resolver([{ address: '93.184.215.14', family: 4 }]))
    const single = await new Promise<[Error | null, unknown, unknown]>((resolve) =>
      lookup('public.example', {}, (e, a, f) => resolve([e, a, f])),
    )
    expect(single).toEqual([null, '93.184.215.14', 4])
    const all = await new Promise<[Error | null, unknown]>((resolve) =>
      lookup('public.example', { all: true }, (e, a) => resolve([e, a])),
    )
    expect(all).toEqual([null, [{ address: '93.184.215.14', family: 4 }]])
  })
})

describe('the sender refuses private destinations at connect time', () => {
  let receiver: Receiver
  const strict = new Sender({ allowPrivate: false, timeoutMs: 2000 })
  const lenient = new Sender({ allowPrivate: true, timeoutMs: 2000 })
  const connect = vi.spyOn(Socket.prototype, 'connect')

  beforeAll(async () => {
    receiver = await Receiver.start((r) => (r.path === '/redirect' ? 302 : 200))
  })
  afterEach(() => connect.mockClear())
  afterAll(async () => {
    connect.mockRestore()
    strict.close()
    lenient.close()
    await receiver.close()
  })

  // Only loopback destinations are ever really connected to; the others must be refused
  // before any socket connects (asserted through Socket.prototype.connect).
  test.each([
    ['127.0.0.1', () => `http://127.0.0.1:${receiver.port}/`, /127.0.0.1: a loopback address/],
    ['[::1]', () => `http://[::1]:${receiver.port}/`, /::1: a loopback/],
    ['10.0.0.1', () => 'http://10.0.0.1/hook', /10.0.0.1: a private address/],
    [
      '169.254.169.254',
      () => 'http://169.254.169.254/latest/meta-data/',
      /169.254.169.254: a link-local address \(cloud metadata/,
    ],
    ['::ffff:10.0.0.1', () => 'http://[::ffff:10.0.0.1]/', /a private address \(10.0.0.1 inside/],
    ['https to 10.0.0.1', () => 'https://10.0.0.1/hook', /10.0.0.1: a private address/],
  ])('%s is refused before connecting', async (_name, url, why) => {
    const result = await strict.send(url(), '{}', {})
    expect(result).toMatchObject({ ok: false, statusCode: null })
    expect(result.error).toMatch(why)
    expect(result.error).toMatch(/WEBHOOK_ALLOW_PRIVATE=1/)
    expect(connect).not.toHaveBeenCalled()
    expect(receiver.received).toHaveLength(0)
  })

  test('a name is checked on the address it resolves to: localhost is refused when the socket looks it up', async () => {
    const result = await strict.send(`http://localhost:${receiver.port}/`, '{}', {})
    expect(result.ok).toBe(false)
    expect(result.error).toMatch(/refused to connect to localhost \((127.0.0.1|::1)\)/)
    expect(receiver.received).toHaveLength(0)
  })

  test('with WEBHOOK_ALLOW_PRIVATE=1 the same loopback receiver is reached', async () => {
    const result = await lenient.send(`http://localhost:${receiver.port}/ok`, '{"a":1}', {
      'x-test': 'yes',
    })
    expect(result).toMatchObject({ ok: true, statusCode: 200, error: null })
    // The spy the refusals are checked with does see real connections.
    expect(connect).toHaveBeenCalled()
    expect(receiver.received.at(-1)).toMatchObject({ path: '/ok', body: '{"a":1}' })
    expect(receiver.received.at(-1)?.headers['x-test']).toBe('yes')
    receiver.received.length = 0
  })

  test('a redirect is refused: a 3xx fails the attempt and its Location is never requested', async () => {
    const result = await lenient.send(`${receiver.url}/redirect`, '{}', {})
    expect(result).toMatchObject({ ok: false, statusCode: 302 })
    expect(result.error).toMatch(/redirect to .*\/redirected not followed/)
    expect(receiver.received.map((r) => r.path)).toEqual(['/redirect'])
    receiver.received.length = 0
  })
})

describe.each(STORAGES)('the address is checked again at delivery time (%s)', (kind) => {
  let server: Awaited<ReturnType<typeof startServer>>
  let receiver: Receiver
  beforeAll(async () => {
    // Private addresses not allowed (the default).
    server = await startServer(kind)
    receiver = await Receiver.start()
  })
  afterAll(async () => {
    await server.close()
    await receiver.close()
  })

  test('an endpoint registered as public whose address later points to loopback is refused, not reached', async () => {
    const { owner, agent } = await ownerWithAgent(server.url)
    const hook = await register(owner, 'https://hooks.example.com/corkboard', ['card.created'])
    // As if the name had been re-pointed after registration.
    await server.storage.db.query('update webhooks set url = $1 where id = $2', [
      `${receiver.url}/hook`,
      hook.id,
    ])
    await agent.ok('create_task', { columnId: await firstColumn(agent), title: 'Rebound' })
    const [row] = await eventually(async () => {
      const rows = await deliveryRows(server, hook.id)
      return rows[0]?.last_error ? rows : undefined
    })
    expect(row?.last_error).toMatch(/refused to connect to 127.0.0.1: a loopback address/)
    expect(row?.status).toBe('pending')
    expect(receiver.received).toHaveLength(0)
  })
})
