import { randomUUID } from 'node:crypto'
import { Redis as IORedis } from 'ioredis'
import { within } from '../clock.ts'
import type { Logger } from '../http/json.ts'
import { watchRedis } from './redis.ts'

/**
 * Which process serves each organisation's agent calls, when several share the service
 * through Redis (docs/design.md, "One process serves an organisation's agents").
 *
 * An organisation's agent calls are computed by one process, its server: the first to be
 * asked takes a lease in Redis (`<prefix>:serves:<orgId>`, 10 s, renewed while calls come),
 * and the others pass their calls to it. Its lane then gathers every agent write of the
 * organisation into its batches and decides claims from its board document, as a single
 * process does; the other processes hold no copy of the board to keep up to date.
 *
 * The lease is for speed, never for correctness: every claim decision is still checked in
 * Postgres under the card's claim lock by the batch that stores it (claims/batch.ts), so
 * two processes that both believe they serve an organisation (a lease lost with Redis, a
 * process paused past its lease) stay correct, and only refuse and recompute more.
 */

/** How long a lease lasts without renewal (ms). */
export const LEASE_MS = 10_000
/** A lease is renewed by the first call after this much of it has passed (ms). */
const RENEW_AFTER_MS = 3_000
/** How long another process's lease is believed without asking Redis again (ms). */
const KNOWN_MS = 1_000
/** A call waits at most this long for Redis to say who serves; then it is served here. */
const ASK_TIMEOUT_MS = 250

/** Returns who holds the lease and its remaining ms, taking or renewing it for ARGV[1]. */
const TAKE = `
local v = redis.call('get', KEYS[1])
if v == false then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
  return {ARGV[1], tonumber(ARGV[2])}
end
if v == ARGV[1] then redis.call('pexpire', KEYS[1], ARGV[2]) end
return {v, redis.call('pttl', KEYS[1])}`

/** Deletes the lease if ARGV[1] still holds it. */
const DROP = `
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0`

/** Where an organisation's agent calls are computed. */
export type Serving = { here: true } | { here: false; url: string; holder: string }

const HERE: Serving = { here: true }

export class OrgOwners {
  private readonly redis: IORedis
  private readonly prefix: string
  private readonly log: Logger
  /** This process in the leases: a unique id, then the address other processes reach it at. */
  private me: string | undefined
  /** The organisations this process serves, to when their lease lapses (Date.now()). */
  private readonly leases = new Map<string, number>()
  /** Other processes' leases, believed until `until`. */
  private readonly others = new Map<string, { holder: string; url: string; until: number }>()
  /** Questions to Redis under way, one per organisation. */
  private readonly asking = new Map<string, Promise<Serving>>()
  private closed = false
  private warned = 0

  /** Called when this process starts serving an organisation, before it serves a call. */
  private readonly taken: (orgId: string) => Promise<void>
  /** Whether this process still holds the organisation's documents: its lease is kept. */
  private readonly keep: (orgId: string) => boolean
  private readonly renewal: NodeJS.Timeout

  constructor(options: {
    url: string
    prefix: string
    log: Logger
    taken: (orgId: string) => Promise<void>
    keep: (orgId: string) => boolean
  }) {
    this.prefix = options.prefix
    this.log = options.log
    this.taken = options.taken
    this.keep = options.keep
    // Leases of organisations whose documents are still here are kept between calls: a
    // quiet minute must not move an organisation whose board people have open here.
    this.renewal = setInterval(() => this.renewKept(), RENEW_AFTER_MS)
    this.renewal.unref()
    // Commands fail at once while Redis is away (no offline queue, no retry after a
    // reconnection): calls are served here.
    this.redis = watchRedis(
      new IORedis(options.url, { enableOfflineQueue: false, maxRetriesPerRequest: 0 }),
      'serving processes',
      options.log,
    )
  }

  /** Called once listening: the address other processes send this one's calls to. */
  listening(url: string): void {
    this.me = `${randomUUID()} ${url}`
  }

  /** Whether this process holds the organisation's lease now (claims are decided in memory). */
  serves(orgId: string): boolean {
    return (this.leases.get(orgId) ?? 0) > Date.now()
  }

  /** Who computes the organisation's agent calls; this process when it cannot tell. */
  serving(orgId: string): Promise<Serving> | Serving {
    const now = Date.now()
    const lease = this.leases.get(orgId)
    if (lease !== undefined && lease - now > LEASE_MS - RENEW_AFTER_MS) return HERE
    const other = this.others.get(orgId)
    if (other && other.until > now) return { here: false, url: other.url, holder: other.holder }
    const asking = this.asking.get(orgId)
    if (asking) return lease !== undefined && lease > now ? HERE : asking
    if (this.me === undefined || this.closed || this.redis.status !== 'ready') return HERE
    const asked = this.ask(orgId, this.me).finally(() => this.asking.delete(orgId))
    this.asking.set(orgId, asked)
    // A lease of its own still running is renewed in the background.
    return lease !== undefined && lease > now ? HERE : asked
  }

  private async ask(orgId: string, me: string): Promise<Serving> {
    const sent = Date.now()
    try {
      const [holder, ttl] = (await this.script(TAKE, orgId, me, String(LEASE_MS))) as [
        string,
        number,
      ]
      if (holder === me) {
        if (!((this.leases.get(orgId) ?? 0) > sent)) {
          // Newly taken (or taken again after its lease lapsed here, when another process
          // may have served it): what it holds of it catches up with storage first.
          await this.taken(orgId).catch((error: unknown) => {
            this.log.error(`catching up ${orgId} with storage failed`, error)
          })
        }
        this.leases.set(orgId, sent + LEASE_MS)
        this.others.delete(orgId)
        return HERE
      }
      this.leases.delete(orgId)
      const url = holder.slice(holder.indexOf(' ') + 1)
      this.others.set(orgId, { holder, url, until: sent + Math.min(KNOWN_MS, ttl) })
      return { here: false, url, holder }
    } catch (error) {
      // Redis away is logged by its watcher; a slow answer once a minute at most.
      if (this.redis.status === 'ready' && sent - this.warned > 60_000) {
        this.warned = sent
        this.log.warn(`who serves ${orgId}: Redis did not say; calls are served here`, error)
      }
      return HERE
    }
  }

  /**
   * Runs a script on the organisation's lease, failing after ASK_TIMEOUT_MS: a Redis that
   * went away mid-command must not hold a call, a renewal or a shutdown.
   */
  private script(lua: string, orgId: string, ...args: string[]): Promise<unknown> {
    return within(this.redis.eval(lua, 1, this.key(orgId), ...args), ASK_TIMEOUT_MS, () => {
      throw new Error('Redis did not answer in time')
    })
  }

  private renewKept(): void {
    const me = this.me
    if (me === undefined || this.closed) return
    const now = Date.now()
    // What was believed of other processes' leases is forgotten once stale: one entry per
    // organisation ever passed on would otherwise stay for good.
    for (const [orgId, other] of this.others) if (other.until <= now) this.others.delete(orgId)
    for (const [orgId, lease] of this.leases) {
      if (lease <= now) {
        this.leases.delete(orgId)
        continue
      }
      if (this.redis.status !== 'ready') continue
      if (this.asking.has(orgId)) continue
      if (!this.keep(orgId)) {
        // Nothing of it here any more: the next call anywhere takes it.
        this.leases.delete(orgId)
        void this.script(DROP, orgId, me).catch(() => {})
        continue
      }
      const asked = this.ask(orgId, me).finally(() => this.asking.delete(orgId))
      this.asking.set(orgId, asked)
    }
  }

  /** Forgets who serves the organisation: the next call asks Redis. */
  forget(orgId: string): void {
    this.others.delete(orgId)
  }

  /**
   * The process holding the lease refused the connection (it is gone): its lease is dropped
   * so the next call takes it, and this call is served here.
   */
  async unreachable(orgId: string, holder: string): Promise<void> {
    this.others.delete(orgId)
    if (this.redis.status !== 'ready') return
    await this.script(DROP, orgId, holder).catch(() => {})
  }

  /** Hands back every lease this process holds (graceful shutdown) and leaves Redis. */
  async close(): Promise<void> {
    this.closed = true
    clearInterval(this.renewal)
    const me = this.me
    if (me !== undefined && this.redis.status === 'ready') {
      await Promise.all(
        [...this.leases.keys()].map((orgId) => this.script(DROP, orgId, me).catch(() => {})),
      )
    }
    this.leases.clear()
    this.redis.disconnect()
  }

  private key(orgId: string): string {
    return `${this.prefix}:serves:${orgId}`
  }
}
