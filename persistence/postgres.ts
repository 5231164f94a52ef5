import postgres from 'postgres'
import type { Db, Queryable, Row } from './db.ts'
import { TrackedTx } from './pipeline.ts'

function adapt(sql: postgres.Sql): Queryable['query'] {
  return async <T extends Row>(text: string, params: readonly unknown[] = []) => {
    const rows = await sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], {
      prepare: true,
    })
    return rows as unknown as T[]
  }
}

export function openPostgres(url: string, max: number): Db {
  const sql = postgres(url, {
    max,
    onnotice: () => {},
    // Postgres int8 (bigserial ids, counts) as JS numbers: none of ours pass 2^53.
    types: {
      bigint: {
        to: 20,
        from: [20],
        serialize: (x: number) => x.toString(),
        parse: (x: string) => Number(x),
      },
    },
    connection: { application_name: 'corkboard' },
  })
  return {
    kind: 'postgres',
    query: adapt(sql),
    /**
     * BEGIN is pipelined with the first statements and COMMIT with the last ones (on one
     * reserved connection, postgres.js writes queries without waiting for earlier
     * replies), so a write's round trips are only those its logic must wait for.
     */
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const conn = await sql.reserve()
      const run = adapt(conn)
      const tx = new TrackedTx(run)
      try {
        // Not awaited: the first statement is queued right behind it on the same connection.
        void tx.query('begin')
        const value = await fn(tx)
        await tx.settle(run('commit'))
        return value
      } catch (error) {
        await run('rollback').catch(() => {})
        throw (await tx.firstFailure()) ?? error
      } finally {
        conn.release()
      }
    },
    async close() {
      await sql.end({ timeout: 5 })
    },
  }
}
