/**
 * The two ends of a transfer's bytes as they cross between threads (threads.ts): the
 * sender keeps at most CHUNKS_AHEAD chunks that the other side has not yet given back,
 * and the receiver says "read" for each: an import's thread as it takes one, the request's
 * thread as an export's chunk has gone to the connection (its ring slot is free again).
 */

/** How many chunks may wait on the other side, not yet taken. */
export const CHUNKS_AHEAD = 8

/**
 * An export's chunks cross in a ring of CHUNKS_AHEAD slots of this size, shared by the two
 * threads (threads.ts): the thread copies each chunk into the next slot, the request's
 * thread writes it to the connection and gives the slot back once written.
 */
export const RING_SLOT_BYTES = 64 * 1024

/** The sending end: room for one more chunk, given back as the other side reads. */
export class ChunkCredit {
  private credit = CHUNKS_AHEAD
  private closed = false
  private wake: (() => void) | undefined

  /** The other side took a chunk. */
  read(): void {
    this.credit += 1
    this.wake?.()
  }

  /** The transfer ended: nothing more is sent, and a sender waiting stops waiting. */
  close(): void {
    this.closed = true
    this.wake?.()
  }

  /** Waits for room for one chunk and takes it; false once closed. */
  async take(): Promise<boolean> {
    while (this.credit === 0 && !this.closed) {
      await new Promise<void>((r) => {
        this.wake = r
      })
      this.wake = undefined
    }
    if (this.closed) return false
    this.credit -= 1
    return true
  }
}

/** The receiving end: the chunks in order, then their end (or what stopped them). */
export class ChunkQueue {
  private readonly queue: Uint8Array[] = []
  private end: { error?: Error } | undefined
  private wake: (() => void) | undefined

  push(data: Uint8Array): void {
    this.queue.push(data)
    this.wake?.()
  }

  /** No more chunks: the reader ends after those queued, with `error` if one is given. */
  finish(error?: Error): void {
    this.end ??= error ? { error } : {}
    this.wake?.()
  }

  /** The chunks as they arrive; `taken` runs as each is taken (to say "read"). */
  async *chunks(taken: () => void): AsyncGenerator<Buffer> {
    for (;;) {
      const chunk = this.queue.shift()
      if (chunk) {
        taken()
        yield Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
        continue
      }
      if (this.end) {
        if (this.end.error) throw this.end.error
        return
      }
      await new Promise<void>((r) => {
        this.wake = r
      })
      this.wake = undefined
    }
  }
}
