import postgres from 'postgres'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Availability } from '../../persistence/availability.ts'
import { TEST_DATABASE_URL } from '../support/storage.ts'

/**
 * Readiness (GET /readyz) asks the database through Availability.check. The endpoint needs
 * no credentials, so whoever polls it must not make the service open a database
 * connection per request: checks at the same moment share one probe, and a yes is reused
 * for a second unless a query has failed since. The probes here are real round trips.
 */
describe('readiness checks do not open a database connection per request', () => {
  let sql: postgres.Sql
  let probes = 0
  let reachable = true
  beforeAll(() => {
    sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} })
  })
  afterAll(() => sql.end())

  const availability = () => {
    probes = 0
    return new Availability({
      probe: async () => {
        probes++
        if (!reachable)
          throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
        await sql`select 1`
      },
    })
  }

  test('fifty checks at once share one probe', async () => {
    const a = availability()
    const answers = await Promise.all(Array.from({ length: 50 }, () => a.check()))
    expect(answers.every(Boolean)).toBe(true)
    expect(probes).toBe(1)
    a.stop()
  })

  test('a yes is reused for the next second, but not once a query has failed for want of the database', async () => {
    const a = availability()
    expect(await a.check()).toBe(true)
    expect(await a.check()).toBe(true)
    expect(probes).toBe(1)
    reachable = false
    a.failed(Object.assign(new Error('terminating connection'), { code: '57P01' }))
    expect(await a.check()).toBe(false)
    expect(probes).toBeGreaterThanOrEqual(2)
    a.stop()
    reachable = true
  })

  test('a no is not reused: the next check asks again', async () => {
    const a = availability()
    reachable = false
    expect(await a.check()).toBe(false)
    a.stop()
    reachable = true
    const before = probes
    expect(await a.check()).toBe(true)
    expect(probes).toBe(before + 1)
  })
})
