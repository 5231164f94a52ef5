import type { Queryable, Row } from './db.ts'

/**
 * Wraps a transaction's connection so every statement issued inside it is tracked. At
 * commit, the statements still outstanding are awaited together with the COMMIT, so a
 * write whose last statements are not awaited costs one round trip for all of them.
 * The first failure in issue order is what the caller sees (a statement after it fails
 * only because the transaction was already aborted).
 */
export class TrackedTx implements Queryable {
  private readonly outstanding: Promise<unknown>[] = []
  private readonly run: (text: string, params: readonly unknown[]) => Promise<Row[]>

  constructor(run: (text: string, params: readonly unknown[]) => Promise<Row[]>) {
    this.run = run
  }

  query<T extends Row = Row>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    const p = this.run(text, params) as Promise<T[]>
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
