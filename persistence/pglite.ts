import { PGlite, types } from '@electric-sql/pglite'
import type { Db, Queryable, Row } from './db.ts'

const parsers = { [types.INT8]: (x: string) => Number(x) }

export async function openPglite(dataDir: string): Promise<Db> {
  const pg = await PGlite.create(dataDir === 'memory://' ? undefined : dataDir, { parsers })
  const adapt = (q: Pick<PGlite, 'query'>): Queryable => ({
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const result = await q.query<T>(text, params as unknown[])
      return result.rows
    },
  })
  const base = adapt(pg)
  return {
    kind: 'pglite',
    query: base.query,
    transaction: (fn) => pg.transaction((tx) => fn(adapt(tx))),
    async close() {
      await pg.close()
    },
  }
}
