/**
 * The MCP tools over stdio, for MCP clients that start a command (Claude Desktop, editors):
 * each tool call is forwarded to a running server's `POST /api/agent` through the typed
 * client, so the server applies its own rate budgets, validation and claim locks.
 *
 *   CORKBOARD_API_KEY=cb_... node server/faces/mcp/stdio.ts --url https://www.example.com
 *
 * The URL may also come from CORKBOARD_URL. The key is read from the environment only, so it
 * never shows in a process list. stdout carries the protocol; diagnostics go to stderr.
 */
import { parseArgs } from 'node:util'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import type { ActionName } from '../../../shared/actions.ts'
import { AgentApiError, type AgentClient, createAgentClient } from '../../../shared/agent-client.ts'
import { createToolServer, type ToolFailure, ToolFailureError } from './tools.ts'

/** The failure a tool shows for an error of the typed client. */
export function failureOfClientError(error: AgentApiError): ToolFailure {
  const body = error.body
  const extra = typeof body === 'object' && body !== null && !Array.isArray(body) ? body : {}
  const failure: ToolFailure = { status: error.status, error: error.message, ...extra }
  if (error.retryAfter !== undefined) failure.retryAfter = error.retryAfter
  return failure
}

/** An MCP server whose tools forward every call to the agent endpoint through `client`. */
export function forwardingToolServer(client: AgentClient): Server {
  const call = client.call as (action: ActionName, params: unknown) => Promise<unknown>
  return createToolServer({
    execute: async (action, args) => {
      try {
        return await call(action, args)
      } catch (error) {
        if (error instanceof AgentApiError) throw new ToolFailureError(failureOfClientError(error))
        throw error
      }
    },
    log: console,
  })
}

const DEFAULT_ANSWER_TOKENS = 20_000

const USAGE = `Usage: CORKBOARD_API_KEY=<API key> node server/faces/mcp/stdio.ts --url <server base URL>
  --url   the Corkboard server, e.g. http://127.0.0.1:8787 (or set CORKBOARD_URL)
The API key is read from the environment variable CORKBOARD_API_KEY; MCP_ANSWER_TOKENS (default
20000) is the longest answer, in tokens of three characters: a longer one is paged.`

/** Reads the configuration, or explains what is missing. */
export function stdioConfig(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): { url: string; apiKey: string; answerTokens: number } | { problem: string; exitCode: number } {
  let values: { url?: string | undefined; help?: boolean | undefined }
  try {
    ;({ values } = parseArgs({
      args: [...argv],
      options: { url: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }))
  } catch (error) {
    return {
      problem: `${error instanceof Error ? error.message : String(error)}\n${USAGE}`,
      exitCode: 2,
    }
  }
  if (values.help) return { problem: USAGE, exitCode: 0 }
  const url = values.url ?? env.CORKBOARD_URL
  const apiKey = env.CORKBOARD_API_KEY?.trim()
  if (!url)
    return { problem: `No server URL: pass --url or set CORKBOARD_URL.\n${USAGE}`, exitCode: 2 }
  try {
    const parsed = new URL(url)
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http')
  } catch {
    return { problem: `--url must be an http(s) URL, got "${url}"`, exitCode: 2 }
  }
  if (!apiKey) return { problem: `No API key: set CORKBOARD_API_KEY.\n${USAGE}`, exitCode: 2 }
  const tokens = env.MCP_ANSWER_TOKENS?.trim() || String(DEFAULT_ANSWER_TOKENS)
  if (!/^\d+$/.test(tokens) || Number(tokens) < 1_000 || Number(tokens) > 1_000_000) {
    return {
      problem: `MCP_ANSWER_TOKENS must be an integer from 1000 to 1000000, got "${tokens}"`,
      exitCode: 2,
    }
  }
  return { url, apiKey, answerTokens: Number(tokens) }
}

async function main(): Promise<void> {
  const config = stdioConfig(process.argv.slice(2), process.env)
  if ('problem' in config) {
    process.stderr.write(`${config.problem}\n`)
    process.exit(config.exitCode)
  }
  // The service cuts each answer to fit, as it does over Streamable HTTP.
  const client = createAgentClient({
    url: config.url,
    apiKey: config.apiKey,
    headers: { 'answer-tokens': String(config.answerTokens) },
  })
  const server = forwardingToolServer(client)
  const transport = new StdioServerTransport()
  const stop = () => {
    void server.close().finally(() => process.exit(0))
  }
  // The client ending our stdin is how a stdio server is told to stop.
  process.stdin.on('end', stop)
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
  await server.connect(transport)
}

if (import.meta.main) {
  main().catch((error: unknown) => {
    process.stderr.write(`corkboard mcp: ${error instanceof Error ? error.stack : String(error)}\n`)
    process.exit(1)
  })
}
