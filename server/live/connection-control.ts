import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import type { Logger } from '../http/json.ts'

/** Which live connections to close, wherever they are connected. */
export type CloseTarget =
  /** Every connection opened with a key just revoked. */
  | { keyId: string }
  /** A person's connections to an organisation they left. */
  | { orgId: string; userId: string }
  /** Every connection to a document that no longer exists (a deleted map). */
  | { documentName: string }

function isCloseTarget(v: unknown): v is CloseTarget {
  if (typeof v !== 'object' || v === null) return false
  const t = v as Record<string, unknown>
  const text = (k: string) => typeof t[k] === 'string'
  return text('keyId') || (text('orgId') && text('userId')) || text('documentName')
}

/**
 * Closes live connections on every server process. A key revoked or a member removed
 * through one process must lose its open documents on all of them at once, not at its
 * next reconnect: with Redis, each close is published on a channel every process listens
 * to, and each closes its own matching connections. Without Redis there is only this
 * process.
 */
export class ConnectionControl {
  private readonly closeHere: (target: CloseTarget) => void
  private readonly channel: string
  private readonly id = randomUUID()
  private readonly publisher: Redis | undefined
  private readonly subscriber: Redis | undefined
  private readonly log: Logger

  constructor(options: {
    closeHere: (target: CloseTarget) => void
    redis?: { url: string; prefix: string } | undefined
    log: Logger
  }) {
    this.closeHere = options.closeHere
    this.log = options.log
    this.channel = `${options.redis?.prefix ?? ''}:close-connections`
    if (!options.redis) return
    const log = options.log
    this.publisher = new Redis(options.redis.url)
    this.subscriber = new Redis(options.redis.url)
    for (const client of [this.publisher, this.subscriber]) {
      client.on('error', (error: unknown) => log.error('connection control: redis error', error))
    }
    this.subscriber.subscribe(this.channel).catch((error: unknown) => {
      log.error('connection control: cannot subscribe', error)
    })
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel !== this.channel) return
      let parsed: { from?: unknown; target?: unknown }
      try {
        parsed = JSON.parse(message)
      } catch {
        return
      }
      if (parsed.from === this.id || !isCloseTarget(parsed.target)) return
      this.closeHere(parsed.target)
    })
  }

  /** Closes the matching connections here and on every other process. */
  close(target: CloseTarget): void {
    this.closeHere(target)
    this.publisher
      ?.publish(this.channel, JSON.stringify({ from: this.id, target }))
      .catch((error: unknown) => this.log.error('connection control: cannot publish', error))
  }

  /** Whether Redis answers a PING within `timeoutMs`; undefined without Redis. */
  async ping(timeoutMs = 1_000): Promise<boolean | undefined> {
    const client = this.publisher
    if (!client) return undefined
    let timer: NodeJS.Timeout | undefined
    try {
      return await Promise.race([
        client.ping().then((r) => r === 'PONG'),
        new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(false), timeoutMs)
        }),
      ])
    } catch {
      return false
    } finally {
      clearTimeout(timer)
    }
  }

  async stop(): Promise<void> {
    await Promise.all(
      [this.publisher, this.subscriber].map((client) => client?.quit().catch(() => {})),
    )
  }
}
