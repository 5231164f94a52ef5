import { describe, expect, test } from 'vitest'
import type * as Y from 'yjs'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import { type Agent, connectProvider, eventually, Person } from '../support/client.ts'
import { fleet, scaledOut } from '../support/scaled-out.ts'

/**
 * Scale-out under load: 16 agents on two server processes sharing one Postgres and one Redis
 * write to one organisation's board as fast as the processes answer. Every write changes the
 * board on one process and reaches the other through Redis; the other process must keep up
 * with that traffic while taking writes of its own. (The claims benchmark found both
 * processes stalling for seconds after about a thousand such writes, requests reset.)
 */
describe('two processes sharing Redis under a stream of writes to one board (postgres + redis)', () => {
  const AGENTS = 16
  const CARDS_EACH = 96
  const service = scaledOut()

  test('two processes sharing Redis keep answering through thousands of writes to one board, and their live copies agree', async () => {
    const { a, b } = service()
    const owner = new Person(a.url)
    await owner.signUp()
    // Two agents per key, one on each process, as a fleet spread by a balancer.
    const writers = await fleet(service(), owner, AGENTS, 'writer')
    const first = writers[0]?.agent as Agent
    const { columns } = await first.ok('list_columns')
    const columnId = columns[0].id as string

    // A request that got no answer (reset, or the server's own request timeout) is a failure
    // like a non-200: the point is that both processes answer every request throughout.
    const failures: string[] = []
    const call = async (agent: Agent, action: string, params: unknown) => {
      try {
        const res = await agent.call(action, params)
        if (res.status === 200) return res.body
        failures.push(`${action} → ${res.status} ${JSON.stringify(res.body)}`)
      } catch (error) {
        failures.push(`${action} got no answer: ${String(error)} ${String((error as Error).cause)}`)
      }
      return undefined
    }
    // 16 × 96 cards created, then each claimed by its creator: 3,072 writes to one board.
    const made = await Promise.all(
      writers.map(async ({ agent, name }) => {
        const mine: string[] = []
        for (let i = 0; i < CARDS_EACH; i++) {
          const body = await call(agent, 'create_task', { columnId, title: `${name} ${i}` })
          if (body) mine.push(body.task.id as string)
        }
        for (const taskId of mine) await call(agent, 'claim_task', { taskId, agentName: name })
        return mine.map((taskId) => [taskId, name] as const)
      }),
    )
    expect(failures).toEqual([])

    const expected = made
      .flat()
      .map(([taskId, name]) => `${taskId} ${name}`)
      .sort()
    const claimsOn = (doc: Y.Doc) =>
      [...boardMaps(doc).claims.entries()]
        .map(([taskId, claim]) => `${taskId} ${(claim as { agentName: string }).agentName}`)
        .sort()
    const token = await owner.syncToken()
    const onA = await connectProvider(a.url, boardDocName(owner.orgId), token)
    const onB = await connectProvider(b.url, boardDocName(owner.orgId), token)
    try {
      // Each process's live copy holds every card and every claim, whichever process took it.
      for (const live of [onA, onB]) {
        await eventually(
          () => (claimsOn(live.doc).join() === expected.join() ? true : undefined),
          10_000,
        )
        expect(boardMaps(live.doc).tasks.size).toBe(AGENTS * CARDS_EACH)
      }
      expect(claimsOn(onA.doc)).toEqual(claimsOn(onB.doc))
    } finally {
      onA.destroy()
      onB.destroy()
    }
  }, 120_000)
})
