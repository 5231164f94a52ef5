import { randomUUID } from 'node:crypto'
import { Redis } from 'ioredis'
import { within } from '../clock.ts'
import type { Logger } from '../http/json.ts'
import { watchRedis } from './redis.ts'

/** Which live connections to close, wherever they are connected. */
export type CloseTarget =
  /** Every connection opened with a key just revoked. */
  | { keyId: string }
  /** A person's connections to an organisation they left. */
  | { orgId: string; userId: string }
  /** Every connection to a document that no longer exists (a deleted map). */
  | { documentName: string }
  /** A document re-based: every process drops its copy and closes its connections. */
  | { rebased: string }

function isCloseTarget(v: unknown): v is CloseTarget {
  if (typeof v !== 'object' || v === null) return false
  const t = v as Record<string, unknown>
  const text = (k: string) => typeof t[k] === 'string'
  return (
    text('keyId') || (text('orgId') && text('userId')) || text('documentName') || text('rebased')
  )
}

/** A stateless message for every connection to one document. */
export interface Notice {
  documentName: string
  payload: string
}

function isNotice(v: unknown): v is Notice {
  if (typeof v !== 'object' || v === null) return false
  const n = v as Record<string, unknown>
  return typeof n.documentName === 'string' && typeof n.payload === 'string'
}

/**
 * Closes live connections, and sends notices to them, on every server process. A key
 * revoked or a member removed through one process must lose its open documents on all of
 * them at once, not at its next reconnect; a notice (the map list changed) must reach
 * people connected anywhere. With Redis, each close or notice is published on a channel
 * every process listens to, and each acts on its own matching connections. Without Redis
 * there is only this process.
 */
export class ConnectionControl {
  private readonly closeHere: (target: CloseTarget) => void
  private readonly noticeHere: (notice: Notice) => void
  private readonly channel: string
  private readonly id = randomUUID()
  private readonly publisher: Redis | undefined
  private readonly subscriber: Redis | undefined
  private readonly log: Logger

  constructor(options: {
    closeHere: (target: CloseTarget) => void
    noticeHere: (notice: Notice) => void
    redis?: { url: string; prefix: string } | undefined
    log: Logger
  }) {
    this.closeHere = options.closeHere
    this.noticeHere = options.noticeHere
    this.log = options.log
    this.channel = `${options.redis?.prefix ?? ''}:close-connections`
    if (!options.redis) return
    const log = options.log
    this.publisher = watchRedis(new Redis(options.redis.url), 'connection control', log)
    this.subscriber = watchRedis(new Redis(options.redis.url), 'connection control', log)
    this.subscriber.subscribe(this.channel).catch((error: unknown) => {
      log.error('connection control: cannot subscribe', error)
    })
    this.subscriber.on('message', (channel: string, message: string) => {
      if (channel !== this.channel) return
      let parsed: { from?: unknown; target?: unknown; notice?: unknown }
      try {
        parsed = JSON.parse(message)
      } catch {
        return
      }
      if (parsed.from === this.id) return
      if (isCloseTarget(parsed.target)) this.closeHere(parsed.target)
      else if (isNotice(parsed.notice)) this.noticeHere(parsed.notice)
    })
  }

  /** Closes the matching connections here and on every other process. */
  close(target: CloseTarget): void {
    this.closeHere(target)
    this.publish({ target })
  }

  /** Sends a notice to the document's connections here and on every other process. */
  notify(notice: Notice): void {
    this.noticeHere(notice)
    this.publish({ notice })
  }

  private publish(message: { target: CloseTarget } | { notice: Notice }): void {
    this.publisher
      ?.publish(this.channel, JSON.stringify({ from: this.id, ...message }))
      .catch((error: unknown) => this.log.error('connection control: cannot publish', error))
  }

  /** Whether Redis answers a PING within `timeoutMs`; undefined without Redis. */
  async ping(timeoutMs = 1_000): Promise<boolean | undefined> {
    const client = this.publisher
    if (!client) return undefined
    try {
      return await within(
        client.ping().then((r) => r === 'PONG'),
        timeoutMs,
        () => false,
      )
    } catch {
      return false
    }
  }

  async stop(): Promise<void> {
    await Promise.all(
      [this.publisher, this.subscriber].map(async (client) => {
        // QUIT waits for an answer; while Redis is away that is ioredis's retries (~40 s).
        if (client?.status === 'ready') await client.quit().catch(() => {})
        else client?.disconnect(false)
      }),
    )
  }
}
