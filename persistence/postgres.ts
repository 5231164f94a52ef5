import { Socket } from 'node:net'
import postgres from 'postgres'
import { Availability, StorageUnavailable } from './availability.ts'
import { TrackedTx } from './pipeline.ts'
import type { Db, DbObserver, PostgresLimits, Queryable, Row, Transaction } from './types.ts'

function adapt(
  sql: postgres.Sql,
  availability: Availability,
  observers: ReadonlySet<DbObserver>,
): Queryable['query'] {
  return async <T extends Row>(text: string, params: readonly unknown[] = []) => {
    if (!availability.available) throw new StorageUnavailable()
    try {
      const rows = await sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], {
        prepare: true,
      })
      return rows as unknown as T[]
    } catch (error) {
      availability.failed(error)
      for (const o of observers) o.statementFailed(error)
      throw error
    }
  }
}

/** Waits for `p` at most `ms`; a late result is handed to `late` (to give a connection back). */
function within<T>(p: Promise<T>, ms: number, late: (value: T) => void): Promise<T> {
  return new Promise((resolve, reject) => {
    let done = false
    const timer = setTimeout(() => {
      done = true
      reject(new StorageUnavailable(new Error(`no connection within ${ms} ms`)))
    }, ms)
    p.then(
      (value) => {
        clearTimeout(timer)
        if (done) late(value)
        else resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        if (!done) reject(error)
      },
    )
  })
}

/**
 * postgres.js's documented `socket` option (missing from its types): a connecting socket
 * to the URL's host (the driver writes its startup message once it connects) that sends
 * what is written to it during one turn of the event loop as one write. postgres.js
 * flushes its own buffer at once when it passes 1 KB and otherwise in a setImmediate, so
 * a transaction's statements (a document update and a webhook payload easily pass 1 KB)
 * and its COMMIT would leave in several system calls, and on a loopback connection each
 * one wakes the database server. The socket stays corked until the check phase after the
 * driver's own flush (an immediate queued from an immediate runs on the next turn).
 */
function coalescingSocket(options: { host: string[]; port: number[]; path?: string | false }) {
  const socket = new Socket()
  if (options.path) socket.connect(options.path)
  else socket.connect(options.port[0] ?? 5432, options.host[0] ?? 'localhost')
  // Installed after connect(), which resets `write` to the prototype's.
  const write = socket.write
  let corked = false
  const uncork = () => {
    corked = false
    socket.uncork()
  }
  socket.write = function (this: Socket, ...args: unknown[]) {
    if (!corked) {
      corked = true
      socket.cork()
      setImmediate(() => setImmediate(uncork))
    }
    return (write as (...a: unknown[]) => boolean).apply(this, args)
  } as Socket['write']
  return socket
}

/** Several hosts (failover) are left to the driver's own sockets. */
const singleHost = (url: string) => !/^[^:]+:\/\/[^/?]*,/.test(url)

/**
 * Connections of the lane (Db.lane). Two: statements sent in the same turn pipeline on
 * one connection, and the second takes over while the first waits on a row lock.
 */
const LANE_CONNECTIONS = 2

export function openPostgres(url: string, max: number, limits: PostgresLimits): Db {
  const availability = new Availability({
    probe: async () => {
      const probe = postgres(url, {
        max: 1,
        connect_timeout: Math.max(1, Math.ceil(limits.connectTimeoutMs / 1000)),
        onnotice: () => {},
      })
      try {
        await probe.unsafe('select 1')
      } finally {
        await probe.end({ timeout: 0 })
      }
    },
    onChange: limits.onAvailability,
  })
  const options = {
    onnotice: () => {},
    // Every wait is bounded: connecting, each statement, each lock, an idle transaction.
    connect_timeout: Math.max(1, Math.ceil(limits.connectTimeoutMs / 1000)),
    // Reconnect quickly once the database is back (the driver's default backs off to 20 s).
    backoff: (attempt: number) => Math.min(0.05 * 2 ** attempt, 1),
    // Postgres int8 (bigserial ids, counts) as JS numbers: none of ours pass 2^53.
    types: {
      bigint: {
        to: 20,
        from: [20],
        serialize: (x: number) => x.toString(),
        parse: (x: string) => Number(x),
      },
    },
    connection: {
      application_name: 'corkboard',
      statement_timeout: limits.statementTimeoutMs,
      lock_timeout: limits.lockTimeoutMs,
      idle_in_transaction_session_timeout: limits.idleInTransactionMs,
    },
    // Not in postgres.js's types, but documented ("Custom socket").
    ...(singleHost(url) ? { socket: coalescingSocket } : {}),
  }
  const sql = postgres(url, { ...options, max })
  // The lane's statements (admitting a request, claiming its Idempotency-Key) commit without
  // waiting for the WAL to reach disk: each is a transaction of its own, and waiting would
  // cost every request a flush that group commit spares its write. A crash of the database
  // loses at most the last instants of them (a rate charge, a key claimed by a request that
  // had not written yet), never a write: a write's own commit flushes the WAL up to itself.
  const lane = postgres(url, {
    ...options,
    max: LANE_CONNECTIONS,
    connection: { ...options.connection, synchronous_commit: 'off' },
  })
  const observers = new Set<DbObserver>()
  return {
    kind: 'postgres',
    availability,
    query: adapt(sql, availability, observers),
    lane: { query: adapt(lane, availability, observers) },
    /**
     * BEGIN is sent with the transaction's first statement and COMMIT pipelined with its
     * last ones (on one reserved connection, postgres.js writes queries without waiting
     * for earlier replies), so a transaction whose statements are all issued at its end,
     * as the live write path does, goes out as one write: one round trip. A transaction
     * that issues nothing sends nothing; one whose only statement is `final` sends it
     * alone, without BEGIN and COMMIT. The connection is reserved at once, so callers
     * that wait on each other inside transactions take connections in the order they
     * started.
     */
    async transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T> {
      if (!availability.available) throw new StorageUnavailable()
      const asked = performance.now()
      const conn = await within(sql.reserve(), limits.connectTimeoutMs, (late) => late.release())
      for (const o of observers) o.poolWait(performance.now() - asked)
      const run = adapt(conn, availability, observers)
      let begun: Promise<unknown> | undefined
      const tx = new TrackedTx((text, params) => {
        if (!begun) {
          begun = run('begin')
          begun.catch(() => {})
        }
        return run(text, params)
      }, run)
      try {
        const value = await fn(tx)
        await tx.settle(begun ? Promise.all([begun, run('commit')]) : undefined)
        return value
      } catch (error) {
        if (begun) await run('rollback').catch(() => {})
        throw (await tx.firstFailure()) ?? error
      } finally {
        conn.release()
      }
    },
    observe(observer) {
      observers.add(observer)
      return () => observers.delete(observer)
    },
    async close() {
      availability.stop()
      await Promise.all([sql.end({ timeout: 5 }), lane.end({ timeout: 5 })])
    },
  }
}
