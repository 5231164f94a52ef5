/**
 * Orders the work on one organisation's live documents.
 *
 * A server write is computed on the live documents themselves and its updates are held
 * back until it commits (hold.ts), so from its computing to its commit the documents hold
 * a change nobody may see yet: they are "dirty". Anything that looks at them must find
 * them clean: a read (get_board, get_task...) and a person's incoming sync message (its
 * reply is computed from the document, and the guard's compensations build on what the
 * document holds). So:
 * - `write()`: one write computes at a time; others may still be committing (dirty).
 * - `read()`: waits until no write computes and none is dirty; readers share.
 * - `urgent()`: waits only until no write computes, ahead of everyone: an eviction after a
 *   failed commit, which is what makes the documents clean again.
 * First come, first served: a reader waits for the writes queued before it and the writes
 * queued after it wait for the reader, so a steady stream of either never starves the other.
 */
export class Gate {
  private computing = false
  private dirty = 0
  private readers = 0
  private readonly queue: { kind: 'write' | 'read'; go: () => void }[] = []
  private readonly urgentQueue: (() => void)[] = []

  /** Resolves when this write may compute; call `computed` when it has. */
  write(): Promise<void> {
    return new Promise((go) => {
      this.queue.push({ kind: 'write', go })
      this.pump()
    })
  }

  /**
   * The write has computed. With `held`, its updates stay in the documents until
   * `settled` is called (they were released or the documents evicted).
   */
  computed(held: boolean): void {
    this.computing = false
    if (held) this.dirty += 1
    this.pump()
  }

  /** A write's held updates are gone from view: released after its commit, or evicted. */
  settled(): void {
    this.dirty -= 1
    if (this.dirty < 0) throw new Error('gate: more writes settled than held')
    this.pump()
  }

  /** Resolves with a release function once the documents are clean. */
  read(): Promise<() => void> {
    return new Promise((resolve) => {
      this.queue.push({
        kind: 'read',
        go: () =>
          resolve(() => {
            this.readers -= 1
            this.pump()
          }),
      })
      this.pump()
    })
  }

  /** Resolves with a release function once no write computes, ahead of everything queued. */
  urgent(): Promise<() => void> {
    return new Promise((resolve) => {
      this.urgentQueue.push(() =>
        resolve(() => {
          this.computing = false
          this.pump()
        }),
      )
      this.pump()
    })
  }

  /** True while nothing computes, nothing is dirty and nobody waits. */
  get idle(): boolean {
    return !this.computing && this.dirty === 0 && this.readers === 0 && this.queue.length === 0
  }

  private pump(): void {
    for (;;) {
      if (this.computing) return
      const urgent = this.urgentQueue.shift()
      if (urgent) {
        this.computing = true
        urgent()
        return
      }
      const next = this.queue[0]
      if (!next) return
      if (next.kind === 'write') {
        if (this.readers > 0) return
        this.queue.shift()
        this.computing = true
        next.go()
        return
      }
      if (this.dirty > 0) return
      this.queue.shift()
      this.readers += 1
      next.go()
    }
  }
}
