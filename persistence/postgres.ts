import postgres from 'postgres'
import type { Db, Queryable, Row } from './db.ts'

function adapt(sql: postgres.Sql | postgres.TransactionSql): Queryable {
  return {
    async query<T extends Row>(text: string, params: readonly unknown[] = []) {
      const rows = await sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], {
        prepare: true,
      })
      return rows as unknown as T[]
    },
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
  const base = adapt(sql)
  return {
    kind: 'postgres',
    query: base.query,
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      return (await sql.begin((tx) => fn(adapt(tx)))) as T
    },
    async close() {
      await sql.end({ timeout: 5 })
    },
  }
}
