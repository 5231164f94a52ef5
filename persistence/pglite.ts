import { PGlite, types } from '@electric-sql/pglite'
import { TrackedTx } from './pipeline.ts'
import type { Db, DbObserver, Queryable, Row } from './types.ts'

const parsers = { [types.INT8]: (x: string) => Number(x) }

/**
 * PGlite in a data folder, or in memory ('memory://'); `loadDataDir` starts it from what
 * another PGlite's `dumpDataDir` gave (the tests start each database from a migrated one).
 */
export async function openPglite(dataDir: string, loadDataDir?: Blob): Promise<Db> {
  const pg = await PGlite.create(dataDir === 'memory://' ? undefined : dataDir, {
    parsers,
    ...(loadDataDir ? { loadDataDir } : {}),
  })
  return pgliteDb(pg)
}

/** The storage interface over an open PGlite. */
export function pgliteDb(pg: PGlite): Db {
  const observers = new Set<DbObserver>()
  const adapt =
    (q: Pick<PGlite, 'query'>): Queryable['query'] =>
    async <T extends Row>(text: string, params: readonly unknown[] = []) => {
      try {
        return (await q.query<T>(text, params as unknown[])).rows
      } catch (error) {
        for (const o of observers) o.statementFailed(error)
        throw error
      }
    }
  const query = adapt(pg)
  return {
    kind: 'pglite',
    // Embedded: it answers as long as this process runs.
    availability: { available: true, check: async () => true },
    query,
    // One connection: nothing to separate.
    lane: { query },
    // One transaction at a time (PGlite is a single connection); statements issued without
    // awaiting still run in order and are all settled before the commit.
    transaction: (fn) => {
      const asked = performance.now()
      return pg.transaction(async (inner) => {
        for (const o of observers) o.poolWait(performance.now() - asked)
        const tx = new TrackedTx(adapt(inner))
        try {
          const value = await fn(tx)
          await tx.settle()
          return value
        } catch (error) {
          throw (await tx.firstFailure()) ?? error
        }
      })
    },
    observe(observer) {
      observers.add(observer)
      return () => observers.delete(observer)
    },
    async close() {
      await pg.close()
    },
  }
}
