import { fileURLToPath } from 'node:url'
import { crc32 } from 'node:zlib'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { type AgentClient, createAgentClient } from '../../shared/agent-client.ts'
import { ownerWithAgent, type Person } from '../support/client.ts'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** The two ways an MCP client reaches the tools. */
export const TRANSPORTS = ['http', 'stdio'] as const
export type TransportKind = (typeof TRANSPORTS)[number]

/** A 1×1 PNG, valid down to its CRCs. */
export const PNG_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='

/**
 * A valid PNG of exactly `size` bytes: the 1×1 image with an ancillary text chunk grown to
 * fill (decoders skip it; the validator checks its CRC like any chunk).
 */
export function pngOfSize(size: number): Buffer {
  const small = Buffer.from(PNG_BASE64, 'base64')
  const iend = small.subarray(small.length - 12)
  const dataLength = size - small.length - 12
  if (dataLength < 1) throw new Error(`a PNG cannot be ${size} bytes`)
  const typeAndData = Buffer.alloc(4 + dataLength, 0x61)
  typeAndData.write('tEXt', 0, 'latin1')
  typeAndData[4 + 'comment'.length] = 0
  typeAndData.write('comment', 4, 'latin1')
  const length = Buffer.alloc(4)
  length.writeUInt32BE(dataLength)
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(typeAndData))
  return Buffer.concat([small.subarray(0, small.length - 12), length, typeAndData, crc, iend])
}

/** The SDK's real client over Streamable HTTP at the server's /mcp, with the Bearer key. */
export async function connectHttp(url: string, key: string): Promise<Client> {
  const client = new Client({ name: 'corkboard-test', version: '1.0.0' })
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  )
  return client
}

/** The SDK's real client spawning the real stdio command against the running server. */
export async function connectStdio(url: string, key: string): Promise<Client> {
  const client = new Client({ name: 'corkboard-test', version: '1.0.0' })
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['server/faces/mcp/stdio.ts', '--url', url],
      cwd: ROOT,
      env: { CORKBOARD_API_KEY: key, PATH: process.env.PATH ?? '' },
      stderr: 'inherit',
    }),
  )
  return client
}

export function connect(kind: TransportKind, url: string, key: string): Promise<Client> {
  switch (kind) {
    case 'http':
      return connectHttp(url, key)
    case 'stdio':
      return connectStdio(url, key)
    default:
      throw new Error(`unknown transport ${kind satisfies never}`)
  }
}

/** The service's default budget of an MCP answer, in tokens (MCP_ANSWER_TOKENS). */
export const MCP_ANSWER_TOKENS = 20_000

/** An organisation with an owner, a key, the typed endpoint client and an MCP client. */
export interface World {
  owner: Person
  orgId: string
  key: string
  /** The typed client of POST /api/agent, answering as the specification says. */
  api: AgentClient
  /**
   * The same client asking for answers within MCP's budget (Answer-Tokens, as the stdio
   * bridge does): the reference every MCP result is compared with.
   */
  budgeted: AgentClient
  mcp: Client
}

export async function world(kind: TransportKind, url: string): Promise<World> {
  const { owner, agent, orgId } = await ownerWithAgent(url)
  const api = createAgentClient({ url, apiKey: agent.key })
  const budgeted = createAgentClient({
    url,
    apiKey: agent.key,
    headers: { 'answer-tokens': String(MCP_ANSWER_TOKENS) },
  })
  return { owner, orgId, key: agent.key, api, budgeted, mcp: await connect(kind, url, agent.key) }
}

/** Calls a tool and returns its result, typed as a tool result (never a task). */
export async function callTool(
  mcp: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<CallToolResult> {
  return (await mcp.callTool({ name, arguments: args })) as CallToolResult
}

/** Calls a tool that must succeed; returns its structured content. */
export async function toolOk(
  mcp: Client,
  name: string,
  args: Record<string, unknown> = {},
): Promise<any> {
  const result = await callTool(mcp, name, args)
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`)
  return result.structuredContent
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$/

/**
 * A result with what legitimately differs between two calls made apart replaced: ids
 * become `<id N>` numbered in order of first appearance (so twin states built the same way
 * compare equal, and a result pointing at the wrong record does not), timestamps become
 * `<time>`, and the query of a signed link (its expiry and signature) becomes `?<signed>`.
 */
export function normalized(value: unknown): unknown {
  const ids = new Map<string, string>()
  const idOf = (id: string) => {
    const k = id.toLowerCase()
    let v = ids.get(k)
    if (v === undefined) {
      v = `<id ${ids.size + 1}>`
      ids.set(k, v)
    }
    return v
  }
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') {
      if (ISO_TIME.test(v)) return '<time>'
      const s = v.replace(UUID, idOf)
      return /^(?:https?:\/\/[^/]+)?\/files\//.test(s) ? s.replace(/\?.*$/, '?<signed>') : s
    }
    if (Array.isArray(v)) return v.map(walk)
    if (typeof v === 'object' && v !== null) {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]))
    }
    return v
  }
  return walk(value)
}
