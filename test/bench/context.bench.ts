import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { createAgentClient } from '../../shared/agent-client.ts'
import { callTool, connectHttp } from '../mcp/harness.ts'
import { ownerWithAgent } from '../support/client.ts'
import { seedComments } from '../support/seed.ts'
import { startServer, type TestServer } from '../support/server.ts'
import { STORAGES, type StorageKind } from '../support/storage.ts'
import { seedOrg, settle } from './history-seed.ts'
import { line, time } from './stats.ts'

/**
 * What an agent reads, through the MCP SDK's client over Streamable HTTP, on boards of 300
 * and 2,000 cards whose descriptions are ~600 characters (what agents write), a fifth of
 * them commented: the characters and estimated tokens of each answer (the text a model
 * reads; tokens as characters / 3.2, the issue's estimate, and / 3, the budget's), beside
 * what the endpoint answers without a budget (the answer MCP gave before budgets); pages to
 * walk the board; and search_tasks' latency, against get_task's in the same run, over the
 * board and over a long history (50,000 archived cards, 150,000 comments).
 */

const DESCRIPTION = `${'Read the logs, find the cause, fix it and add a test that fails without the fix. '.repeat(7)}`

async function board(server: TestServer, cards: number) {
  const { agent, owner } = await ownerWithAgent(server.url)
  const api = createAgentClient({ url: server.url, apiKey: agent.key })
  const { columns } = await api.list_columns()
  const ids: string[] = []
  for (let i = 0; i < cards; i++) {
    const { task } = await api.create_task({
      columnId: (columns[i % columns.length] as { id: string }).id,
      title: `Card ${i}: ${i === 137 ? 'the flaky login test' : 'keep the build green'}`,
      description: `Plan ${i}. ${DESCRIPTION}`,
    })
    ids.push(task.id)
    if (i % 5 === 0) await api.add_comment({ taskId: task.id, body: `Looked at card ${i}: fine.` })
  }
  const { map } = await api.create_map({ title: 'Ideas' })
  for (let batch = 0; batch < (cards >= 2_000 ? 20 : 10); batch++) {
    await api.create_nodes({
      mapId: map.id,
      nodes: Array.from({ length: 100 }, (_, i) => ({
        text: `Thought ${batch * 100 + i}: an idea worth writing down`,
        x: i * 220,
        y: batch * 90,
      })),
    })
  }
  const thread = ids[1] as string
  await seedComments(
    server.app.live,
    owner.orgId,
    thread,
    31,
    '2026-01-01T00:00:00Z',
    'A review comment of a paragraph, as teammates write them: '.repeat(4),
  )
  return { api, key: agent.key, ids, mapId: map.id, thread }
}

/** The text a model reads of a tool's answer. */
async function mcpText(mcp: Client, name: string, args: Record<string, unknown>) {
  const result = await callTool(mcp, name, args)
  if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`)
  return result.content
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('')
}

const tokens = (chars: number) =>
  `${chars.toLocaleString('en')} chars ≈ ${Math.round(chars / 3.2).toLocaleString('en')} tokens (${Math.round(chars / 3).toLocaleString('en')} by chars/3)`

async function sizes(log: (l: string) => void, server: TestServer, cards: number) {
  const b = await board(server, cards)
  const mcp = await connectHttp(server.url, b.key)
  try {
    log(`\n#### ${cards} cards (descriptions ~${DESCRIPTION.length + 10} characters)`)
    const since = '2000-01-01T00:00:00Z'
    const cases: [string, string, Record<string, unknown>][] = [
      ['get_board', 'get_board', {}],
      ['get_board summary:true', 'get_board', { summary: true }],
      ['get_changes, limit 500', 'get_changes', { since, limit: 500 }],
      [`get_map (${cards >= 2_000 ? '2,000' : '1,000'} thoughts)`, 'get_map', { mapId: b.mapId }],
      ['get_task of a card with 31 comments', 'get_task', { taskId: b.thread }],
    ]
    for (const [label, name, args] of cases) {
      const before = JSON.stringify(await b.api.call(name as 'get_board', args as never)).length
      const after = (await mcpText(mcp, name, args)).length
      log(`${label}: endpoint without budget ${tokens(before)}; MCP now ${tokens(after)}`)
    }
    const list = JSON.stringify((await mcp.listTools()).tools).length
    log(`tools/list: ${tokens(list)}`)
    for (const summary of [false, true]) {
      let pages = 0
      let cursor: string | undefined
      do {
        const result = await callTool(mcp, 'get_board', { summary, ...(cursor ? { cursor } : {}) })
        cursor =
          (result.structuredContent as { nextCursor?: string | null }).nextCursor ?? undefined
        pages += 1
      } while (cursor)
      log(`pages to walk the board over MCP (${summary ? 'summary' : 'full form'}): ${pages}`)
    }
    const baseline = await time(200, () => b.api.get_task({ taskId: b.ids[7] as string }))
    log(line(`baseline: get_task (${cards} cards)`, baseline))
    const queries = ['flaky login', 'build green', 'logs fix', 'card 42', 'tes']
    log(
      line(
        `search_tasks over ${cards} cards`,
        await time(200, (i) =>
          b.api.search_tasks({ query: queries[i % queries.length] as string }),
        ),
        baseline,
      ),
    )
  } finally {
    await mcp.close()
  }
}

async function history(log: (l: string) => void, kind: StorageKind) {
  const server = await startServer(kind, { rateLimitPerKey: 10_000_000 })
  try {
    const t0 = performance.now()
    const org = await seedOrg(server.app, server.url, {
      onBoard: 2_000,
      commentsOnBoard: 0,
      archived: 50_000,
      commentsPerArchived: 3,
      claimedArchived: 1_000,
    })
    await settle(server.app)
    log(
      `\n#### long history: 2,000 on the board, 50,000 archived, 150,000 comments (seeded in ${((performance.now() - t0) / 1000).toFixed(0)} s)`,
    )
    const api = createAgentClient({ url: server.url, apiKey: org.key })
    const baseline = await time(200, (i) =>
      api.get_task({ taskId: org.onBoard[i % 100] as string }),
    )
    log(line('baseline: get_task', baseline))
    const queries = ['flaky login', 'retry note', 'agent found', 'clear', 'log']
    log(
      line(
        'search_tasks (cards on the board)',
        await time(200, (i) => api.search_tasks({ query: queries[i % queries.length] as string })),
        baseline,
      ),
    )
    log(
      line(
        'search_tasks includeArchived',
        await time(200, (i) =>
          api.search_tasks({ query: queries[i % queries.length] as string, includeArchived: true }),
        ),
        baseline,
      ),
    )
  } finally {
    await server.close()
  }
}

export async function run(log: (l: string) => void): Promise<void> {
  const storages = (process.env.BENCH_STORAGES?.split(',') ?? STORAGES) as StorageKind[]
  for (const kind of storages) {
    log(`\n### ${kind === 'postgres' ? 'real Postgres' : 'PGlite'}`)
    for (const cards of [300, 2_000]) {
      const server = await startServer(kind, { rateLimitPerKey: 10_000_000 })
      try {
        await sizes(log, server, cards)
      } finally {
        await server.close()
      }
    }
    if (process.env.BENCH_HISTORY !== '0') await history(log, kind)
  }
}
