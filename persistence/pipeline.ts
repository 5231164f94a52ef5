import type { Row, Transaction } from './types.ts'

type Run = (text: string, params: readonly unknown[]) => Promise<Row[]>

/**
 * Wraps a transaction's connection so every statement issued inside it is tracked. At
 * commit, the statements still outstanding are awaited together with the COMMIT, so a
 * write whose last statements are not awaited costs one round trip for all of them.
 * The first failure in issue order is what the caller sees (a statement after it fails
 * only because the transaction was already aborted).
 */
export class TrackedTx implements Transaction {
  private readonly outstanding: Promise<unknown>[] = []
  private readonly run: Run
  private readonly runAlone: Run
  private ended = false

  /** `runAlone` runs a final statement that is the transaction's only one (no BEGIN). */
  constructor(run: Run, runAlone: Run = run) {
    this.run = run
    this.runAlone = runAlone
  }

  query<T extends Row = Row>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.track(this.run, text, params)
  }

  final<T extends Row = Row>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.track(this.outstanding.length === 0 ? this.runAlone : this.run, text, params, true)
  }

  private track<T extends Row>(
    run: Run,
    text: string,
    params: readonly unknown[],
    last = false,
  ): Promise<T[]> {
    if (this.ended) throw new Error('a statement after the final one of a transaction')
    this.ended = last
    const p = run(text, params) as Promise<T[]>
    // Handled at settle(); a caller that awaits it sees the rejection too.
    p.catch(() => {})
    this.outstanding.push(p)
    return p
  }

  /** Settles every statement issued so far, plus `last` (the COMMIT), throwing the first failure. */
  async settle(last?: Promise<unknown>): Promise<void> {
    const all = last ? [...this.outstanding, last] : this.outstanding
    const results = await Promise.allSettled(all)
    const failed = results.find((r) => r.status === 'rejected')
    if (failed) throw (failed as PromiseRejectedResult).reason
  }

  /**
   * After the transaction's work threw: the first statement that failed, in issue order,
   * if any did. It is the cause; later failures ("transaction is aborted") are echoes.
   */
  async firstFailure(): Promise<unknown> {
    const results = await Promise.allSettled(this.outstanding)
    const failed = results.find((r) => r.status === 'rejected')
    return failed ? (failed as PromiseRejectedResult).reason : undefined
  }
}
