import { Redis } from '@hocuspocus/extension-redis'
import type { Redis as IORedis } from 'ioredis'
import * as decoding from 'lib0/decoding'

/** Hocuspocus message types (types.ts in @hocuspocus/server) that carry document content. */
const SYNC = 0
const SYNC_REPLY = 4

type Gate = (documentName: string) => Promise<() => void>

/**
 * The Redis extension, with its incoming messages gated like people's: another process's
 * SyncStep1 is answered with what this document holds, so it must be answered only while
 * the document is clean (no uncommitted write held in it, see gate.ts), and messages of
 * one document keep their order.
 */
export class GatedRedis extends Redis {
  constructor(configuration: ConstructorParameters<typeof Redis>[0], gate: Gate) {
    super(configuration)
    const [handle] = this.sub.listeners('messageBuffer') as ((
      channel: Buffer,
      data: Buffer,
    ) => Promise<void>)[]
    if (!handle) throw new Error('@hocuspocus/extension-redis changed: no message handler')
    this.sub.removeAllListeners('messageBuffer')
    const chains = new Map<string, Promise<void>>()
    this.sub.on('messageBuffer', (channel: Buffer, data: Buffer) => {
      const message = peek(data)
      if (!message) {
        void handle(channel, data)
        return
      }
      const previous = chains.get(message.documentName) ?? Promise.resolve()
      const next = previous
        .then(async () => {
          if (!message.content) return handle(channel, data)
          const done = await gate(message.documentName)
          try {
            await handle(channel, data)
          } finally {
            done()
          }
        })
        .catch(() => {})
        .finally(() => {
          if (chains.get(message.documentName) === next) chains.delete(message.documentName)
        })
      chains.set(message.documentName, next)
    })
  }

  /**
   * Shutting down while Redis is away: the extension's QUIT would wait for Redis through
   * ioredis's retries (about 40 s); there is nothing left to tell an unreachable Redis.
   */
  override async onDestroy(): Promise<void> {
    this.letGo()
    await super.onDestroy().catch(() => {})
  }

  /**
   * Drops the connections to Redis, first thing on shutdown: every change was published
   * when it was made, so nothing is left to tell the other processes, and every command
   * to a Redis that went away (or hangs) would wait on ioredis's retries (about 40 s).
   */
  letGo(): void {
    this.pub.disconnect(false)
    this.sub.disconnect(false)
  }
}

/** The document a published message is for, and whether it carries document content. */
function peek(data: Buffer): { documentName: string; content: boolean } | undefined {
  try {
    const idLength = data[0] ?? 0
    const decoder = decoding.createDecoder(data.subarray(1 + idLength))
    const documentName = decoding.readVarString(decoder)
    const type = decoding.readVarUint(decoder)
    return { documentName, content: type === SYNC || type === SYNC_REPLY }
  } catch {
    return undefined
  }
}

/**
 * Says once that a Redis connection is lost, and once that it is back: ioredis retries
 * every few hundred milliseconds and reports each failed try, and a client without an
 * 'error' listener prints each one. While it is away, live documents stay live on each
 * process, and the processes catch up when it returns (test/faults/redis.test.ts).
 */
export function watchRedis<C extends IORedis>(
  client: C,
  what: string,
  log: { error(...args: unknown[]): void; info(...args: unknown[]): void },
): C {
  let down = false
  client.on('error', (error: unknown) => {
    if (down) return
    down = true
    log.error(`${what}: Redis unreachable, retrying`, error)
  })
  client.on('ready', () => {
    if (!down) return
    down = false
    log.info(`${what}: Redis is back`)
  })
  return client
}
