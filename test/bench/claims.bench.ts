import type { Config } from '../../server/config.ts'
import { type Agent, ownerWithAgent } from '../support/client.ts'
import { startServer } from '../support/server.ts'
import { STORAGES, type StorageKind } from '../support/storage.ts'
import { line, time } from './stats.ts'

const N = 200
const CHANGES = 500

/** A cursor past everything written so far (the feed trails the present by about a second). */
async function settledCursor(agent: Agent): Promise<string> {
  const t = Date.now()
  for (;;) {
    const { cursor } = await agent.ok('get_changes')
    if (Date.parse(cursor) > t) return cursor
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function storageRun(kind: StorageKind, log: (l: string) => void) {
  // The benchmark measures claims and the feed, not the 240-a-minute budget.
  const overrides: Partial<Config> = { rateLimitPerKey: 1_000_000 }
  const server = await startServer(kind, overrides)
  try {
    log(`\n### ${kind === 'postgres' ? 'real Postgres' : 'PGlite'}`)
    const { agent } = await ownerWithAgent(server.url)
    const { columns } = await agent.ok('list_columns')
    const columnId = columns[0].id as string

    const whoami = await time(N, () => agent.ok('whoami'))
    log(line('baseline: whoami (authenticated, rate-limited round trip)', whoami))

    const { task } = await agent.ok('create_task', { columnId, title: 'claimed over and over' })
    const update = await time(N, (i) =>
      agent.ok('update_task', { taskId: task.id, title: `t${i}` }),
    )
    log(line('baseline: update_task (a claim-locked write)', update, whoami))

    const pair = await time(N, async () => {
      await agent.ok('claim_task', { taskId: task.id, agentName: 'Bench', note: 'timing' })
      await agent.ok('release_task', { taskId: task.id, agentName: 'Bench' })
    })
    log(line('claim_task + release_task round trip', pair, whoami))

    await agent.ok('claim_task', { taskId: task.id, agentName: 'Bench' })
    const heartbeat = await time(N, () =>
      agent.ok('heartbeat_task', { taskId: task.id, agentName: 'Bench' }),
    )
    log(line('heartbeat_task', heartbeat, whoami))
    await agent.ok('release_task', { taskId: task.id, agentName: 'Bench' })

    const since = await settledCursor(agent)
    for (let i = 0; i < CHANGES; i++) {
      await agent.ok('create_task', { columnId, title: `change ${i}` })
    }
    await settledCursor(agent)
    const first = await agent.ok('get_changes', { since, limit: CHANGES })
    if (first.tasks.length !== CHANGES) {
      throw new Error(`expected ${CHANGES} changed cards, got ${first.tasks.length}`)
    }
    const feed = await time(50, () => agent.ok('get_changes', { since, limit: CHANGES }), 5)
    log(line(`get_changes over ${CHANGES} changes (one page)`, feed, whoami))
    const board = await time(50, () => agent.ok('get_board'), 5)
    log(line(`baseline: get_board of the same ${CHANGES}-card board`, board, whoami))
  } finally {
    await server.close()
  }
}

/** `npm run bench claims`: claim round trips and the change feed, on both storages. */
export async function run(log: (line: string) => void): Promise<void> {
  for (const kind of STORAGES) await storageRun(kind, log)
}
