/**
 * Orders the work on one organisation's live documents: one write computes at a time, and
 * a read or a person's sync message waits until no uncommitted update is held in them;
 * first come, first served (docs/design.md, "One copy of each document, and no dirty reads").
 */
export class LaneGate {
  private computing = false
  private dirty = 0
  private readers = 0
  private readonly queue: { kind: 'write' | 'read' | 'alone'; go: () => void }[] = []
  private readonly urgentQueue: (() => void)[] = []

  /** Work waiting to pass the gate: writes, reads, people's sync messages (metrics). */
  get waiting(): number {
    return this.queue.length + this.urgentQueue.length
  }

  /** Writes whose updates are held in the documents until their commit (metrics). */
  get holding(): number {
    return this.dirty
  }

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

  /**
   * Resolves with a release function once nothing computes, no uncommitted update is held
   * and no sync message is being applied, in its turn: until released, nothing else passes
   * (a re-base: the document must not change while it is swapped).
   */
  alone(): Promise<() => void> {
    return new Promise((resolve) => {
      this.queue.push({
        kind: 'alone',
        go: () =>
          resolve(() => {
            this.computing = false
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
      if (next.kind === 'alone') {
        if (this.readers > 0 || this.dirty > 0) return
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
