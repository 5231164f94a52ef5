import type { Queryable, Transaction } from '../../persistence/types.ts'
import type { WriteTransactionOrigin } from './origins.ts'
import type { Recorded, WriteRecord } from './write-record.ts'

/** How a batch ended: how many of its records were stored, and why not the next. */
export type Stored = Pick<Recorded, 'stored' | 'refused'>

/**
 * Writes stored together by their first one's transaction (group commit): the writes
 * computed while an earlier one commits join the batch its opener sends, in one statement
 * and one commit (docs/design.md, "One lane per organisation").
 */
export interface Batch {
  records: WriteRecord[]
  /** The writes in the batch, in order: their transaction origin and their own record's index. */
  members: { marker: WriteTransactionOrigin; index: number }[]
  /** The opener's record statement, issued once the earlier writes committed. */
  recorded: Promise<Recorded> | undefined
  /** Once the opener's transaction committed: how many records were stored, why not the next. */
  stored: Promise<Stored>
  settle(stored: Stored): void
  fail(error: unknown): void
}

/** A write's place in a batch, and where the people's records it took start. */
export interface BatchMember {
  batch: Batch
  index: number
  peopleAt: number
  opener: boolean
}

export function newBatch(): Batch {
  let settle!: (stored: Stored) => void
  let fail!: (error: unknown) => void
  const stored = new Promise<Stored>((resolve, reject) => {
    settle = resolve
    fail = reject
  })
  stored.catch(() => {})
  return { records: [], members: [], recorded: undefined, stored, settle, fail }
}

/** A transaction's last statement, as a Queryable (see Transaction.final). */
export const lastStatement = (tx: Transaction): Queryable => ({
  query: (text, params) => tx.final(text, params),
})
