import { afterAll, beforeAll, describe, expect, onTestFinished, test } from 'vitest'
import { openDb } from '../../persistence/db.ts'
import { claimLock } from '../../server/actions/claim-gate.ts'
import type { App } from '../../server/app.ts'
import type { Actor } from '../../server/claims/locks.ts'
import { acquireClaim, releaseClaim } from '../../server/claims/store.ts'
import { ApiError } from '../../server/errors.ts'
import { Agent, type Person } from '../support/client.ts'
import { boardWithAgents, type ClockServer, startClockServer } from './harness.ts'

/**
 * Concurrency is only proven on real Postgres: PGlite runs one transaction at a time.
 * 25 keys with two names each make 50 agents, so agents differ by key and, on one key,
 * by name.
 */
const KEYS = 25
const NAMES = ['Ada', 'Bo'] as const
const LEASE_MS = 900_000

function deferred() {
  let resolve!: () => void
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

describe('claim races on real Postgres', () => {
  let server: ClockServer
  let owner: Person
  let agents: Agent[]
  let columnId: string
  let keyIds: string[]

  beforeAll(async () => {
    server = await startClockServer('postgres')
    const board = await boardWithAgents(server.url, KEYS)
    owner = board.owner
    agents = board.agents
    columnId = board.columns[0]?.id as string
    const listed = await owner.request('GET', `/api/app/orgs/${owner.orgId}/api-keys`)
    const byName = new Map<string, string>(
      listed.body.apiKeys.map((k: { id: string; name: string }) => [k.name, k.id]),
    )
    keyIds = agents.map((_, i) => byName.get(`agent ${i}`) as string)
  })
  afterAll(() => server.close())

  test('50 agents on separate connections, released together, 200 rounds: exactly one winner each round, never two live holders', async () => {
    // Fifty connections of its own, closed at the end: the shared server needs few.
    const db = await openDb({ databaseUrl: server.storage.url, maxConnections: 50 })
    onTestFinished(() => db.close())
    const { task } = await (agents[0] as Agent).ok('create_task', { columnId, title: 'contested' })
    const actors: { actor: Actor; name: string }[] = keyIds.flatMap((keyId) =>
      NAMES.map((name) => ({ actor: { keyId, identity: { agentName: name } }, name })),
    )
    expect(actors).toHaveLength(50)
    for (let round = 0; round < 200; round++) {
      const gate = deferred()
      const everyoneIn = deferred()
      let arrived = 0
      const attempts = actors.map(({ actor }) =>
        db.transaction(async (tx) => {
          // Each attempt holds its own connection and open transaction before the gate opens.
          await tx.query('select 1')
          arrived += 1
          if (arrived === actors.length) everyoneIn.resolve()
          await gate.promise
          // What claim_task does: the claim gate, then the claim.
          const now = Date.now()
          await claimLock(tx, owner.orgId, actor, { taskIds: [task.id] }, now)
          return acquireClaim(tx, {
            orgId: owner.orgId,
            taskId: task.id,
            actor,
            now,
            leaseMs: LEASE_MS,
          })
        }),
      )
      await everyoneIn.promise
      gate.resolve()
      const results = await Promise.allSettled(attempts)
      const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []))
      expect(won, `round ${round}`).toHaveLength(1)
      const winner = actors[won[0] as number] as (typeof actors)[number]
      for (const r of results) {
        if (r.status === 'fulfilled') continue
        expect(r.reason).toBeInstanceOf(ApiError)
        const error = r.reason as ApiError
        expect(error.status).toBe(409)
        const holder = error.extra?.holder as { agentName: string }
        expect(holder.agentName).toBe(winner.name)
      }
      const live = await db.query<{ key_id: string; agent_name: string }>(
        'select key_id, agent_name from claims where task_id = $1 and released_at is null and expires_at > now()',
        [task.id],
      )
      expect(live).toEqual([{ key_id: winner.actor.keyId, agent_name: winner.name }])
      const released = await db.transaction((tx) =>
        releaseClaim(tx, {
          orgId: owner.orgId,
          taskId: task.id,
          actor: winner.actor,
          now: Date.now(),
        }),
      )
      expect(released?.released_at).toBeInstanceOf(Date)
    }
  }, 240_000)

  test('claim_task through the endpoint of five server processes: exactly one winner per round', async () => {
    const peers: App[] = []
    for (let i = 0; i < 4; i++) peers.push(await server.peer())
    const urls = [server.url, ...peers.map((p) => p.url)]
    const { task } = await (agents[0] as Agent).ok('create_task', {
      columnId,
      title: 'contested over HTTP',
    })
    const racers = agents.flatMap((agent, i) =>
      NAMES.map((name, j) => ({
        agent: new Agent(urls[(i * NAMES.length + j) % urls.length] as string, agent.key),
        name,
      })),
    )
    for (let round = 0; round < 20; round++) {
      const replies = await Promise.all(
        racers.map((r) => r.agent.call('claim_task', { taskId: task.id, agentName: r.name })),
      )
      const won = replies.flatMap((r, i) => (r.status === 200 ? [i] : []))
      expect(won, `round ${round}`).toHaveLength(1)
      const winner = racers[won[0] as number] as (typeof racers)[number]
      const winning = replies[won[0] as number]?.body.claim
      for (const reply of replies) {
        if (reply.status === 200) continue
        expect(reply.status).toBe(409)
        expect(reply.body.holder).toEqual(winning)
      }
      expect(
        await winner.agent.ok('release_task', { taskId: task.id, agentName: winner.name }),
      ).toEqual({ taskId: task.id, released: true })
    }
  }, 120_000)
})
