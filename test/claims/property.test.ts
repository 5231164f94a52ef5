import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import type { Agent } from '../support/client.ts'
import { STORAGES } from '../support/storage.ts'
import { boardWithAgents, type ClockServer, startClockServer } from './harness.ts'

const LEASE_MS = 60_000

interface Identity {
  agentName?: string
  house?: string
  generation?: number
}

/** Four agents on two keys: two named agents share key 0; key 1 has a named one and a nameless one. */
const CALLERS: { key: number; identity: Identity }[] = [
  { key: 0, identity: { agentName: 'Ada' } },
  { key: 0, identity: { agentName: 'Bo' } },
  { key: 1, identity: { agentName: 'Cy', house: 'Hex', generation: 2 } },
  { key: 1, identity: {} },
]

interface Model {
  now: () => number
  holder: { key: number; identity: Identity; expiresAt: number } | undefined
  title: string
}

interface Real {
  agents: Agent[]
  taskId: string
  advance: (ms: number) => void
}

function callerAt(i: number): { key: number; identity: Identity } {
  const c = CALLERS[i]
  if (!c) throw new Error(`no caller ${i}`)
  return c
}

const agentOf = (r: Real, key: number) => r.agents[key] as Agent

const live = (m: Model) => (m.holder && m.holder.expiresAt > m.now() ? m.holder : undefined)

/** The specification's rule: same key and, when the caller names itself, the same identity. */
function isHolder(m: Model, caller: number): boolean {
  const h = live(m)
  const c = callerAt(caller)
  if (!h || h.key !== c.key) return false
  if (c.identity.agentName === undefined) return true
  return (
    h.identity.agentName === c.identity.agentName &&
    h.identity.house === c.identity.house &&
    h.identity.generation === c.identity.generation
  )
}

function call(r: Real, caller: number, action: string, params: Record<string, unknown>) {
  const c = callerAt(caller)
  return agentOf(r, c.key).call(action, { taskId: r.taskId, ...params, ...c.identity })
}

function expectHolder(body: { holder?: { agentName: string | null } }, m: Model) {
  expect(body.holder).toBeDefined()
  expect(body.holder?.agentName).toBe(live(m)?.identity.agentName ?? null)
}

class Claim implements fc.AsyncCommand<Model, Real> {
  readonly caller: number
  constructor(caller: number) {
    this.caller = caller
  }
  check = () => true
  async run(m: Model, r: Real) {
    const res = await call(r, this.caller, 'claim_task', {})
    if (live(m) && !isHolder(m, this.caller)) {
      expect(res.status).toBe(409)
      expectHolder(res.body, m)
      return
    }
    expect(res.status).toBe(200)
    const kept = live(m)
    m.holder = {
      ...(kept ?? { key: callerAt(this.caller).key, identity: callerAt(this.caller).identity }),
      expiresAt: m.now() + LEASE_MS,
    }
    expect(Date.parse(res.body.claim.expiresAt)).toBe(m.holder.expiresAt)
  }
  toString = () => `claim(${this.caller})`
}

class Heartbeat implements fc.AsyncCommand<Model, Real> {
  readonly caller: number
  constructor(caller: number) {
    this.caller = caller
  }
  check = () => true
  async run(m: Model, r: Real) {
    const res = await call(r, this.caller, 'heartbeat_task', { note: 'still here' })
    const h = live(m)
    if (!h) {
      expect(res.status).toBe(409)
      expect(res.body.holder).toBeUndefined()
    } else if (!isHolder(m, this.caller)) {
      expect(res.status).toBe(409)
      expectHolder(res.body, m)
    } else {
      expect(res.status).toBe(200)
      h.expiresAt = m.now() + LEASE_MS
    }
  }
  toString = () => `heartbeat(${this.caller})`
}

class Release implements fc.AsyncCommand<Model, Real> {
  readonly caller: number
  constructor(caller: number) {
    this.caller = caller
  }
  check = () => true
  async run(m: Model, r: Real) {
    const res = await call(r, this.caller, 'release_task', {})
    if (!live(m)) {
      expect(res.status).toBe(200)
      expect(res.body.released).toBe(false)
    } else if (!isHolder(m, this.caller)) {
      expect(res.status).toBe(409)
      expectHolder(res.body, m)
    } else {
      expect(res.status).toBe(200)
      expect(res.body.released).toBe(true)
      m.holder = undefined
    }
  }
  toString = () => `release(${this.caller})`
}

let writes = 0

/** A claim-locked write: goes through exactly when nobody else holds a live claim. */
class Write implements fc.AsyncCommand<Model, Real> {
  readonly caller: number
  constructor(caller: number) {
    this.caller = caller
  }
  check = () => true
  async run(m: Model, r: Real) {
    const title = `write ${++writes} by ${this.caller}`
    const res = await call(r, this.caller, 'update_task', { title })
    if (live(m) && !isHolder(m, this.caller)) {
      expect(res.status).toBe(409)
      expectHolder(res.body, m)
    } else {
      expect(res.status).toBe(200)
      m.title = title
    }
    const { task } = await agentOf(r, 0).ok('get_task', { taskId: r.taskId })
    expect(task.title).toBe(m.title)
  }
  toString = () => `write(${this.caller})`
}

class Advance implements fc.AsyncCommand<Model, Real> {
  readonly ms: number
  constructor(ms: number) {
    this.ms = ms
  }
  check = () => true
  async run(_m: Model, r: Real) {
    r.advance(this.ms)
  }
  toString = () => `advance(${this.ms})`
}

describe.each(STORAGES)('claim lock property (%s)', (kind) => {
  let server: ClockServer
  let agents: Agent[]
  let columnId: string

  beforeAll(async () => {
    server = await startClockServer(kind, {
      claimLeaseSeconds: LEASE_MS / 1000,
      rateLimitPerKey: 1_000_000,
    })
    const board = await boardWithAgents(server.url, 2)
    agents = board.agents
    columnId = board.columns[0]?.id as string
  })
  afterAll(() => server.close())

  test("random claim, heartbeat, release and write sequences from several agents never let a non-holder's write through", async () => {
    const caller = fc.integer({ min: 0, max: CALLERS.length - 1 })
    const commands = [
      caller.map((c) => new Claim(c)),
      caller.map((c) => new Heartbeat(c)),
      caller.map((c) => new Release(c)),
      caller.map((c) => new Write(c)),
      caller.map((c) => new Write(c)),
      fc
        .oneof(fc.integer({ min: 0, max: LEASE_MS * 2 }), fc.constantFrom(LEASE_MS - 1, LEASE_MS))
        .map((ms) => new Advance(ms)),
    ]
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 30 }), async (cmds) => {
        const { task } = await (agents[0] as Agent).ok('create_task', { columnId, title: 'start' })
        const clock = server.clock
        const model: Model = { now: () => clock.now(), holder: undefined, title: 'start' }
        const real: Real = { agents, taskId: task.id, advance: (ms) => clock.advance(ms) }
        await fc.asyncModelRun(() => ({ model, real }), cmds)
      }),
      { numRuns: 40 },
    )
  }, 120_000)
})
