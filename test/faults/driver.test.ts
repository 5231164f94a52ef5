import { randomBytes } from 'node:crypto'
import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { TEST_DATABASE_URL } from '../support/storage.ts'

/**
 * The Postgres driver's pool when a connection dies under a reservation (a transaction):
 * what patches/postgres+3.4.9.patch fixes. Each case ran into a wait that never ended on
 * the unpatched driver (a pool that stops handing out connections is a service whose
 * writes hang while the database is fine), so each is bounded here and says which wait
 * did not end. On real Postgres: terminating a backend is what a failover or an operator
 * does.
 */
const WAIT_MS = 10_000

function settles<T>(p: Promise<T>, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${what}: still waiting after ${WAIT_MS} ms`)),
      WAIT_MS,
    )
    p.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

/** postgres.js sends a statement when it is first awaited; this sends it now. */
function send<T extends { execute(): unknown; catch(f: () => void): unknown }>(q: T): T {
  q.execute()
  q.catch(() => {})
  return q
}

const failure = (p: Promise<unknown>, what: string) =>
  settles(
    p.then(
      () => undefined,
      (error: unknown) => error as Error,
    ),
    what,
  )

describe('a connection that dies under a reservation', () => {
  let admin: postgres.Sql
  beforeAll(() => {
    admin = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} })
  })
  afterAll(async () => {
    await admin.end()
  })

  /** A pool whose connections this test alone can find (and terminate) by application name. */
  function pool(max: number) {
    const name = `cb_driver_${randomBytes(4).toString('hex')}`
    const sql = postgres(TEST_DATABASE_URL, {
      max,
      onnotice: () => {},
      backoff: () => 0.01,
      connection: { application_name: name },
    })
    const terminate = () =>
      admin`select pg_terminate_backend(pid) from pg_stat_activity where application_name = ${name}`
    return { sql, terminate }
  }

  test('a reservation waiting for the pool gets the reconnected connection', async () => {
    const { sql, terminate } = pool(1)
    try {
      const first = await sql.reserve()
      const waiting = sql.reserve()
      const sleeping = send(first`select pg_sleep(30)`)
      await settles(sleepingStarted(), 'the first statement starting')
      await terminate()
      expect(await failure(sleeping, 'the statement on the terminated connection')).toBeInstanceOf(
        Error,
      )
      first.release()
      const second = await settles(waiting, 'the waiting reservation')
      expect(await settles(second`select 41 + 1 as n`, 'a statement on it')).toEqual([{ n: 42 }])
      second.release()
    } finally {
      await sql.end({ timeout: 1 })
    }

    async function sleepingStarted() {
      for (;;) {
        const [row] =
          await admin`select count(*)::int as n from pg_stat_activity where query = 'select pg_sleep(30)'`
        if (row?.n) return
        await new Promise((r) => setTimeout(r, 20))
      }
    }
  })

  test('statements queued in the reservation fail with the connection instead of waiting forever', async () => {
    const { sql, terminate } = pool(2)
    try {
      const reserved = await sql.reserve()
      // A statement with parameters waits for its description before the next one is sent,
      // so the ones after it queue inside the reservation.
      const running = send(reserved.unsafe('select pg_sleep($1::int)', [30], { prepare: true }))
      const queued = [
        send(reserved.unsafe('select $1::int as n', [1], { prepare: true })),
        send(reserved.unsafe('select $1::text as s', ['two'], { prepare: true })),
      ]
      await new Promise((r) => setTimeout(r, 200))
      await terminate()
      expect(await failure(running, 'the running statement')).toBeInstanceOf(Error)
      for (const [i, q] of queued.entries()) {
        const error = await failure(q, `queued statement ${i + 1}`)
        expect(error?.message).toMatch(/CONNECTION_CLOSED|ECONNRESET|terminat/)
      }
      reserved.release()
      expect(await settles(sql`select 1 as n`, 'the pool afterwards')).toEqual([{ n: 1 }])
    } finally {
      await sql.end({ timeout: 1 })
    }
  })

  test('a reservation whose connection died runs nothing on the connection that replaced it', async () => {
    const { sql, terminate } = pool(1)
    try {
      const first = await sql.reserve()
      await first`select 1`
      const waiting = sql.reserve()
      await terminate()
      // The death is seen by a statement on it (or by the close, whichever comes first).
      await failure(first`select pg_sleep(5)`, 'a statement on the terminated connection')
      const second = await settles(waiting, 'the waiting reservation')
      await second`begin`
      await second`create temporary table mine (n int)`
      // The old reservation's statements must not land in the new holder's transaction.
      const late = await failure(
        first`insert into mine values (1)`,
        'a late statement of the old reservation',
      )
      expect(late?.message).toMatch(/CONNECTION_CLOSED/)
      first.release()
      expect(await settles(second`select count(*)::int as n from mine`, 'the new holder')).toEqual([
        { n: 0 },
      ])
      await second`rollback`
      second.release()
      expect(await settles(sql`select 2 as n`, 'the pool afterwards')).toEqual([{ n: 2 }])
    } finally {
      await sql.end({ timeout: 1 })
    }
  })
})
