import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { createAgentClient } from '../../shared/agent-client.ts'
import { callTool, connectHttp, connectStdio, PNG_BASE64 } from '../mcp/harness.ts'
import { ownerWithAgent } from '../support/client.ts'
import { startServer } from '../support/server.ts'
import { STORAGES, type StorageKind } from '../support/storage.ts'
import { line, time } from './stats.ts'

const N = 200

/** A tool call that must succeed. */
async function tool(mcp: Client, name: string, args: Record<string, unknown> = {}) {
  const result = await callTool(mcp, name, args)
  if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`)
  return result
}

/**
 * What the Model Context Protocol costs on top of the agent endpoint: the same actions
 * through POST /api/agent (the baseline), through Streamable HTTP at /mcp (a fresh
 * stateless server per request) and through the stdio command (which forwards to the
 * endpoint, so it adds a process hop to the endpoint's time).
 */
async function storageRun(kind: StorageKind, log: (l: string) => void) {
  const server = await startServer(kind, {
    rateLimitPerKey: 1_000_000,
    rateLimitImagesPerOrg: 1_000_000,
  })
  const { agent } = await ownerWithAgent(server.url)
  const api = createAgentClient({ url: server.url, apiKey: agent.key })
  const http = await connectHttp(server.url, agent.key)
  const stdio = await connectStdio(server.url, agent.key)
  try {
    log(`\n### ${kind === 'postgres' ? 'real Postgres' : 'PGlite'}`)
    const whoami = await time(N, () => api.whoami())
    log(line('baseline: whoami via POST /api/agent', whoami))
    log(line('whoami via MCP Streamable HTTP', await time(N, () => tool(http, 'whoami')), whoami))
    log(
      line(
        'whoami via MCP stdio (forwards to the endpoint)',
        await time(N, () => tool(stdio, 'whoami')),
        whoami,
      ),
    )
    log(
      line(
        'tools/list via MCP Streamable HTTP (35 tools)',
        await time(N, () => http.listTools()),
        whoami,
      ),
    )

    const { column } = await api.create_column({ title: 'Bench' })
    const create = await time(N, (i) => api.create_task({ columnId: column.id, title: `e${i}` }))
    log(line('baseline: create_task via POST /api/agent', create))
    const createMcp = await time(N, (i) =>
      tool(http, 'create_task', { columnId: column.id, title: `m${i}` }),
    )
    log(line('create_task via MCP Streamable HTTP', createMcp, create))

    const { task } = await api.create_task({ columnId: column.id, title: 'With screenshots' })
    for (let i = 0; i < 3; i++)
      await api.attach_screenshot({ taskId: task.id, imageBase64: PNG_BASE64 })
    const read = await time(N, () => api.get_task({ taskId: task.id }))
    log(line('baseline: get_task (3 screenshots) via POST /api/agent', read))
    const readMcp = await time(N, () => tool(http, 'get_task', { taskId: task.id }))
    log(line('get_task (3 screenshots, as image content) via MCP HTTP', readMcp, read))
  } finally {
    await Promise.all([http.close(), stdio.close()])
    await server.close()
  }
}

export async function run(log: (line: string) => void): Promise<void> {
  for (const kind of STORAGES) await storageRun(kind, log)
}
