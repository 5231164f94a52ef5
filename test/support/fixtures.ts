import { expect } from 'vitest'
import { type Agent, ownerWithAgent } from './client.ts'

/** A timestamp as the service writes them: ISO 8601, UTC. */
export const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/

export const ids = (list: readonly { id: string }[]) => list.map((x) => x.id)

/**
 * A fresh organisation: its owner, an agent on a key of its own, and the ids of the four
 * organisation-level columns every organisation starts with.
 */
export async function seededOrg(url: string) {
  const { owner, agent, orgId } = await ownerWithAgent(url)
  const { columns } = await agent.ok('list_columns')
  const [backlog, ready, doing, done] = ids(columns) as [string, string, string, string]
  return { owner, agent, orgId, backlog, ready, doing, done }
}

/** A refused call: its status, and a message naming what was wrong (returned). */
export async function expectRefused(
  agent: Agent,
  action: string,
  params: unknown,
  status: number,
  re: RegExp,
): Promise<string> {
  const res = await agent.call(action, params)
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.body.error).toMatch(re)
  return res.body.error as string
}
