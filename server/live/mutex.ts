/** A FIFO mutex: holders take turns in the order they asked. */
export class Mutex {
  private tail: Promise<unknown> = Promise.resolve()

  /** Resolves, in call order, to a function that lets the next caller in. */
  acquire(): Promise<() => void> {
    let release!: () => void
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    const ready = this.tail.then(() => release)
    this.tail = ready.then(() => held)
    return ready
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire()
    try {
      return await fn()
    } finally {
      release()
    }
  }
}
