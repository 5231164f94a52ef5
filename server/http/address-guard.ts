import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns'
import { BlockList, isIP, isIPv4, type LookupFunction } from 'node:net'

/**
 * Where webhooks may not go: loopback, private, shared (CGNAT), link-local (where cloud
 * metadata services live), documentation, multicast and reserved ranges, in both families.
 * Checked on the address a connection is about to use, so a name that resolves to one of
 * these (at registration or only later, DNS rebinding) is refused before any packet leaves.
 */
const V4_RANGES: readonly [string, number, string][] = [
  ['0.0.0.0', 8, 'a "this network" address'],
  ['10.0.0.0', 8, 'a private address'],
  ['100.64.0.0', 10, 'a shared (CGNAT) address'],
  ['127.0.0.0', 8, 'a loopback address'],
  ['169.254.0.0', 16, 'a link-local address (cloud metadata lives here)'],
  ['172.16.0.0', 12, 'a private address'],
  ['192.0.0.0', 24, 'an IETF protocol address'],
  ['192.0.2.0', 24, 'a documentation address'],
  ['192.88.99.0', 24, 'a 6to4 relay address'],
  ['192.168.0.0', 16, 'a private address'],
  ['198.18.0.0', 15, 'a benchmarking address'],
  ['198.51.100.0', 24, 'a documentation address'],
  ['203.0.113.0', 24, 'a documentation address'],
  ['224.0.0.0', 4, 'a multicast address'],
  ['240.0.0.0', 4, 'a reserved address'],
  // Azure's platform endpoint is a public address reachable only from inside Azure.
  ['168.63.129.16', 32, 'a cloud metadata address'],
]

const V6_RANGES: readonly [string, number, string][] = [
  // Covers :: (unspecified), ::1 (loopback) and the deprecated IPv4-compatible ::a.b.c.d.
  ['::', 96, 'a loopback or unspecified address'],
  ['64:ff9b:1::', 48, 'a local NAT64 address'],
  ['100::', 64, 'a discard address'],
  ['2001::', 23, 'an IETF protocol address'],
  ['2001:db8::', 32, 'a documentation address'],
  ['3fff::', 20, 'a documentation address'],
  ['5f00::', 16, 'a segment-routing address'],
  ['fc00::', 7, 'a unique-local (private) address'],
  ['fe80::', 10, 'a link-local address'],
  ['fec0::', 10, 'a site-local address'],
  ['ff00::', 8, 'a multicast address'],
]

const v4Rules = V4_RANGES.map(([net, prefix, why]) => {
  const list = new BlockList()
  list.addSubnet(net, prefix, 'ipv4')
  return { list, why }
})
const v6Rules = V6_RANGES.map(([net, prefix, why]) => {
  const list = new BlockList()
  list.addSubnet(net, prefix, 'ipv6')
  return { list, why }
})

/** The 16 bytes of an IPv6 address (zone id ignored), or undefined if it is not one. */
function ipv6Bytes(address: string): Uint8Array | undefined {
  const text = address.split('%')[0] ?? ''
  if (isIP(text) !== 6) return undefined
  const bytes = new Uint8Array(16)
  let head = text
  let tail = ''
  const gap = text.indexOf('::')
  if (gap >= 0) {
    head = text.slice(0, gap)
    tail = text.slice(gap + 2)
  }
  const groups = (part: string): number[] => {
    if (part === '') return []
    const out: number[] = []
    for (const g of part.split(':')) {
      if (isIPv4(g)) {
        const [a, b, c, d] = g.split('.').map(Number) as [number, number, number, number]
        out.push((a << 8) | b, (c << 8) | d)
      } else out.push(Number.parseInt(g, 16))
    }
    return out
  }
  const h = groups(head)
  const t = groups(tail)
  const all = gap >= 0 ? [...h, ...new Array<number>(8 - h.length - t.length).fill(0), ...t] : h
  all.forEach((g, i) => {
    bytes[i * 2] = g >> 8
    bytes[i * 2 + 1] = g & 0xff
  })
  return bytes
}

const v4Of = (b: Uint8Array, at: number) => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`
const zeros = (b: Uint8Array, from: number, to: number) => b.slice(from, to).every((x) => x === 0)

/**
 * IPv4 addresses carried inside an IPv6 one (IPv4-mapped ::ffff:a.b.c.d, NAT64
 * 64:ff9b::/96, 6to4 2002::/16): they reach the IPv4 host, so they are judged as it.
 */
function embeddedV4(b: Uint8Array): string | undefined {
  if (zeros(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return v4Of(b, 12)
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(b, 4, 12)) {
    return v4Of(b, 12)
  }
  if (b[0] === 0x20 && b[1] === 0x02) return v4Of(b, 2)
  return undefined
}

/**
 * Why an IP address may not receive webhooks, or undefined when it is a public address.
 * Anything that is not a valid IP address is refused too.
 */
export function blockedReason(address: string): string | undefined {
  const family = isIP(address.split('%')[0] ?? '')
  if (family === 4) return v4Rules.find((r) => r.list.check(address, 'ipv4'))?.why
  if (family === 6) {
    const bytes = ipv6Bytes(address)
    if (!bytes) return 'not an IP address'
    const inner = embeddedV4(bytes)
    if (inner !== undefined) {
      const why = blockedReason(inner)
      return why ? `${why} (${inner} inside an IPv6 address)` : undefined
    }
    const plain = address.split('%')[0] ?? address
    return v6Rules.find((r) => r.list.check(plain, 'ipv6'))?.why
  }
  return 'not an IP address'
}

/** A connection refused by the address guard; it never reached the network. */
export class AddressRefusedError extends Error {
  readonly code = 'EADDRREFUSED'
  readonly host: string
  readonly address: string
  readonly why: string

  constructor(host: string, address: string, why: string) {
    super(
      `refused to connect to ${host === address ? address : `${host} (${address})`}: ${why}; webhooks only reach public addresses unless WEBHOOK_ALLOW_PRIVATE=1`,
    )
    this.host = host
    this.address = address
    this.why = why
  }
}

/** `host` without the brackets a URL puts around an IPv6 literal. */
export const bareHost = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1')

/**
 * The check for a host the URL names as an IP literal. Node connects to IP literals
 * without any lookup, so this runs right before such a connection; names go through
 * {@link guardedLookup} when the socket resolves them.
 */
export function refusedLiteral(hostname: string): AddressRefusedError | undefined {
  const host = bareHost(hostname)
  if (!isIP(host)) return undefined
  const why = blockedReason(host)
  return why ? new AddressRefusedError(host, host, why) : undefined
}

/**
 * What registration can tell without resolving anything: an IP literal in a blocked
 * range, or `localhost` (every resolver maps it to loopback). Names are checked again,
 * resolved, at every connection.
 */
export function refusedAtRegistration(hostname: string): AddressRefusedError | undefined {
  const literal = refusedLiteral(hostname)
  if (literal) return literal
  const name = bareHost(hostname).toLowerCase().replace(/\.$/, '')
  if (name === 'localhost' || name.endsWith('.localhost')) {
    return new AddressRefusedError(name, name, 'a loopback name')
  }
  return undefined
}

type Resolve = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void

const systemResolve: Resolve = (hostname, options, callback) =>
  dnsLookup(hostname, options, callback)

/**
 * A `lookup` for sockets (the http/https Agent's connect step): resolves every address of
 * the name and refuses the connection when any of them is blocked, so a name with one
 * public and one private address cannot be steered to the private one. With
 * `allowPrivate` it resolves as usual. `resolve` is the system resolver except in tests.
 */
export function guardedLookup(allowPrivate: boolean, resolve: Resolve = systemResolve) {
  const lookup = (
    hostname: string,
    options: LookupOptions,
    callback: (
      error: NodeJS.ErrnoException | null,
      address: string | LookupAddress[],
      family?: number,
    ) => void,
  ): void => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0)
      if (!allowPrivate) {
        for (const a of addresses) {
          const why = blockedReason(a.address)
          if (why) return callback(new AddressRefusedError(hostname, a.address, why), '', 0)
        }
      }
      const first = addresses[0]
      if (!first) {
        const none: NodeJS.ErrnoException = new Error(`${hostname} has no address`)
        none.code = 'ENOTFOUND'
        return callback(none, '', 0)
      }
      if (options.all) callback(null, addresses)
      else callback(null, first.address, first.family)
    })
  }
  return lookup as LookupFunction
}
