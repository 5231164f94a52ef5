import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import { z } from 'zod'
import { type ActionName, actionNames, actions, isActionName } from '../../../shared/actions.ts'
import { identity } from '../../../shared/schemas/common.ts'
import { claimRecord } from '../../../shared/schemas/outputs.ts'
import { answerText, isRecord } from '../../actions/answer-text.ts'
import { didYouMean } from '../../actions/suggest.ts'
import { serverInstructions, toolDescription, toolTitle } from './guidance.ts'

/**
 * The MCP tools, one per row of the action table, same name. Built on the SDK's low-level
 * `Server` rather than `McpServer.registerTool`, because registerTool validates arguments
 * with the zod schema itself and answers a failure with its own message: here the raw
 * arguments go to the same path as `POST /api/agent` (rate budgets → the action's zod
 * schema → handler), so a 400 names the parameter in exactly the endpoint's words and an
 * invalid call spends the same budget. The JSON Schema each tool publishes is converted
 * from that same zod schema (the input side: what a caller sends).
 */

export const SERVER_NAME = 'corkboard'
export const SERVER_VERSION = '0.1.0'

type Json = Record<string, unknown>

/** Keys whose value is one schema, a list of schemas, or a map of named schemas. */
const ONE = new Set(['items', 'additionalProperties', 'not', 'contains', 'propertyNames'])
const LIST = new Set(['anyOf', 'oneOf', 'allOf', 'prefixItems'])
const MAP = new Set(['properties', '$defs', 'patternProperties'])

const isJson = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * A JSON schema as sent in tools/list, without what says nothing to a client: the `$schema`
 * dialect (MCP's is 2020-12), the regular expressions zod writes beside a `format` (uuid,
 * date-time: the format says the same in a word, and the SDK's validator knows it), the
 * safe-integer bounds zod puts on every integer, the `type` beside an `enum` or a `const`
 * (the values say it), a description repeated inside the branches of a described union, and
 * for answers (`open`) the closed objects (answers may gain fields, as contracts change by
 * adding), the formats and patterns (the names say an id, a time, `…At`, or a URL), the
 * zero floor of counts and, below the top, `type: object` beside `properties` (the
 * properties say it; a nullable object keeps its type, which says the null) and the
 * `required` lists (every field listed is always there but the few the instructions name).
 */
function compact(schema: Json, open: boolean, top = true): Json {
  const node = orNull(schema)
  const out: Json = {}
  for (const [k, v] of Object.entries(node)) {
    if (k === '$schema') continue
    if (k === 'pattern' && typeof node.format === 'string') continue
    // A parameter's meaning says it is an id; the service names a malformed one in its 400.
    if (!open && k === 'format' && v === 'uuid') continue
    // Unknown parameters are a 400 naming them (the instructions say so): not repeated per tool.
    if (!open && top && k === 'additionalProperties' && v === false) continue
    if (k === 'minimum' && v === Number.MIN_SAFE_INTEGER) continue
    if (k === 'maximum' && v === Number.MAX_SAFE_INTEGER) continue
    if (k === 'type' && (Array.isArray(node.enum) || Object.hasOwn(node, 'const'))) continue
    if (open && k === 'additionalProperties' && v === false) continue
    if (open && (k === 'format' || k === 'pattern' || (k === 'minimum' && v === 0))) continue
    // A record inside an answer says which fields it always carries, not each one's type:
    // a validator still refuses a record without them, in a fraction of the text.
    if (open && !top && k === 'properties') continue
    // A budget's note is said once, in the instructions (ANSWERS_NOTE).
    if (open && top && k === 'properties' && isJson(v) && isJson(v.note)) {
      const { note: _note, ...rest } = v
      out[k] = Object.fromEntries(
        Object.entries(rest).map(([name, s]) => [name, compact(s as Json, open, false)]),
      )
      continue
    }
    if (ONE.has(k) && isJson(v)) out[k] = compact(v, open, false)
    else if (LIST.has(k) && Array.isArray(v)) {
      const described = typeof node.description === 'string'
      out[k] = v.map((s: Json) => {
        const { description: _inner, ...branch } = s
        return compact(described ? branch : s, open, false)
      })
    } else if (MAP.has(k) && isJson(v)) {
      out[k] = Object.fromEntries(
        Object.entries(v).map(([name, s]) => [name, compact(s as Json, open, false)]),
      )
    } else out[k] = v
  }
  return out
}

/**
 * `anyOf: [X, { type: 'null' }]`, as zod writes a nullable value, as X with `null` added
 * to its type (and to its enum): the same values, in a third of the text.
 */
function orNull(node: Json): Json {
  const options = node.anyOf
  // `{ const: '' }` beside an enum (a value that clears a field) is one more value of it.
  if (Array.isArray(options) && options.length === 2) {
    const [a, b] = options as Json[]
    if (isJson(a) && isJson(b) && Object.hasOwn(a, 'const') && Array.isArray(b.enum)) {
      const { anyOf: _options, ...rest } = node
      return { ...rest, enum: [a.const, ...b.enum] }
    }
  }
  if (!Array.isArray(options) || options.length !== 2 || Object.keys(node).length !== 1) {
    return node
  }
  const isNull = (o: unknown) =>
    isJson(o) && Object.keys(o).length === 1 && (o as { type?: unknown }).type === 'null'
  const other = options.find((o) => !isNull(o)) as Json | undefined
  if (!other || !options.some(isNull) || typeof other.type !== 'string') return node
  const merged: Json = { ...other, type: [other.type, 'null'] }
  if (Array.isArray(other.enum)) merged.enum = [...other.enum, null]
  return merged
}

/**
 * Records an answer holds more than once (a task's claim beside the claims list) are
 * written once, under `$defs`; one used once is written in place.
 */
const records = z.registry<{ id: string }>()
records.add(claimRecord, { id: 'Claim' })

function inlineSingleUse(schema: Json): Json {
  const defs = isJson(schema.$defs) ? schema.$defs : undefined
  if (!defs) return schema
  const text = JSON.stringify(schema)
  const once = new Set(
    Object.keys(defs).filter((n) => text.split(`"#/$defs/${n}"`).length - 1 === 1),
  )
  if (once.size === 0) return schema
  const inline = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(inline)
    if (!isJson(v)) return v
    const target = typeof v.$ref === 'string' ? v.$ref.replace('#/$defs/', '') : undefined
    if (target && once.has(target)) return inline(defs[target])
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, inline(x)]))
  }
  const { $defs: _all, ...rest } = schema
  const kept = Object.entries(defs).filter(([n]) => !once.has(n))
  const out = inline(rest) as Json
  return kept.length > 0 ? { ...out, $defs: Object.fromEntries(kept) } : out
}

/**
 * The identity params every write takes. A tool lists them where they change something:
 * a claim-locked action (a claim is compared with them), claim_next (it claims) and
 * add_comment (agentName says an agent wrote it). Every other write accepts them and
 * ignores them; the instructions say what they are (IDENTITY_NOTE), and each listing keeps
 * its meaning, without the bounds the instructions give once.
 */
const IDENTITY_BOUNDS = ['minLength', 'maxLength', 'minimum', 'maximum']

function identityListed(name: ActionName): boolean {
  return actions[name].claimLocked || name === 'claim_next' || name === 'add_comment'
}

function withIdentityAsUsed(name: ActionName, schema: Json): Json {
  const properties = schema.properties
  if (!isJson(properties)) return schema
  const out: Json = { ...properties }
  for (const param of Object.keys(identity)) {
    const p = out[param]
    if (!isJson(p)) continue
    if (!identityListed(name)) delete out[param]
    else
      out[param] = Object.fromEntries(
        Object.entries(p).filter(([k]) => !IDENTITY_BOUNDS.includes(k)),
      )
  }
  return { ...schema, properties: out }
}

/** The JSON Schema of what a caller sends to an action, from the action's zod schema. */
export function inputJsonSchema(name: ActionName): Tool['inputSchema'] {
  const schema = compact(
    withIdentityAsUsed(
      name,
      z.toJSONSchema(actions[name].input, { io: 'input', target: 'draft-2020-12' }) as Json,
    ),
    false,
  )
  if (schema.type !== 'object') {
    throw new Error(`the params of ${name} must be a JSON object schema, got ${schema.type}`)
  }
  return schema as Tool['inputSchema']
}

/** What the tool answers (its structured content on success), from the action table. */
function outputJsonSchema(name: ActionName): NonNullable<Tool['outputSchema']> {
  const written = z.toJSONSchema(actions[name].output, {
    io: 'output',
    target: 'draft-2020-12',
    metadata: records,
  }) as Json
  const schema = compact(inlineSingleUse(written), true)
  if (schema.type !== 'object') {
    throw new Error(`the result of ${name} must be a JSON object schema, got ${schema.type}`)
  }
  return schema as NonNullable<Tool['outputSchema']>
}

function buildTools(): Tool[] {
  return actionNames.map((name) => {
    const spec = actions[name]
    const inputSchema = inputJsonSchema(name)
    return {
      name,
      title: toolTitle(name),
      description: toolDescription(spec),
      inputSchema,
      outputSchema: outputJsonSchema(name),
      // All four set, from the table: a client assumes the worst of a hint left out (an
      // unset destructiveHint reads as destructive).
      annotations: {
        readOnlyHint: !spec.write,
        destructiveHint: spec.destructive,
        idempotentHint: spec.idempotent,
        // Every tool acts on this service's own board and maps, never on the outside world.
        openWorldHint: false,
      },
    }
  })
}

/** The tool list, computed once from the action table. */
export const tools: readonly Tool[] = buildTools()

export const instructions = serverInstructions(
  tools.filter((t) => Object.hasOwn(t.inputSchema.properties ?? {}, 'position')).map((t) => t.name),
)

/**
 * A failed action as a tool sees it: the endpoint's `{ error, ...extra }` body (a 409's
 * `holder` and `expiresAt`) with its status, and for a 429 the seconds to wait.
 */
export interface ToolFailure {
  status: number
  error: string
  retryAfter?: number
  [extra: string]: unknown
}

/** Thrown by an executor for a failure to show the caller as a tool error. */
export class ToolFailureError extends Error {
  readonly failure: ToolFailure
  constructor(failure: ToolFailure) {
    super(failure.error)
    this.failure = failure
  }
}

/** Runs one action for the caller; a failure is thrown as a {@link ToolFailureError}. */
export type ToolExecutor = (action: ActionName, args: Record<string, unknown>) => Promise<unknown>

export interface ToolHooks {
  execute: ToolExecutor
  /** Called for a tool name that is not an action (the endpoint charges such a request). */
  onUnknownTool?(name: string): Promise<void>
  /** Where faults (anything but a ToolFailureError) are logged before a generic 500. */
  log?: Pick<Console, 'error'>
}

/**
 * A success: the result as structured content (exactly what the endpoint returns) and as
 * JSON text, plus each screenshot (or an exported PNG) as image content. The text leaves
 * the image bytes out (they follow as images), so a model does not read megabytes of
 * base64 as text.
 */
export function toolResult(result: unknown): CallToolResult {
  if (!isRecord(result)) {
    return { content: [{ type: 'text', text: JSON.stringify(result) }] }
  }
  const { text, images } = answerText(result)
  return {
    content: [
      { type: 'text', text },
      ...images.map((image) => ({
        type: 'image' as const,
        data: image.dataBase64,
        mimeType: image.mimeType,
      })),
    ],
    structuredContent: result,
  }
}

/** What an agent should do about a failure, by status. */
function adviceFor(failure: ToolFailure): string {
  switch (failure.status) {
    case 0:
      return 'No answer from the service: check that it runs at the configured URL, then try again.'
    case 400:
      return 'The same call fails the same way: fix the parameter the message names.'
    case 401:
      return 'The API key is missing, malformed or revoked: check the host, then the key.'
    case 403:
      return 'This key is not allowed the operation: do not retry; a person must change its access.'
    case 404:
      return 'No such id in this organisation: the id is stale, re-read the board.'
    case 409:
      return failure.holder !== undefined
        ? `Someone else holds the card: work another card and come back after ${typeof failure.expiresAt === 'string' ? failure.expiresAt : 'expiresAt'}, or ask an owner or admin to release it. Do not retry in a loop.`
        : 'You hold no live claim on this card (or another agent is working on it): call claim_task again before writing, unless the message says another agent is working on it, then back off. Do not retry in a loop.'
    case 429:
      return `A rate budget is used up: wait ${failure.retryAfter ?? 'a few'} seconds and slow down.`
    default:
      return failure.status >= 500
        ? 'A failure inside the service: retry once after a short pause.'
        : 'The call failed; do not retry it unchanged.'
  }
}

/** A failure as a tool error: `isError`, the status and message, and what to do about it. */
/**
 * A failed call: the endpoint's error body as JSON text, then advice in words. No
 * structured content: a client validates it against the tool's output schema (the
 * success shape) even on errors, and would replace the real message with a complaint.
 */
export function toolError(failure: ToolFailure): CallToolResult {
  return {
    isError: true,
    content: [
      { type: 'text', text: JSON.stringify(failure) },
      { type: 'text', text: adviceFor(failure) },
    ],
  }
}

/** An MCP server offering every action as a tool; connect it to any transport. */
export function createToolServer(hooks: ToolHooks): Server {
  const failureOf = (error: unknown): ToolFailure => {
    if (error instanceof ToolFailureError) return error.failure
    ;(hooks.log ?? console).error(error)
    return { status: 500, error: 'Internal server error' }
  }
  const server = new Server(
    { name: SERVER_NAME, title: 'Corkboard', version: SERVER_VERSION },
    { capabilities: { tools: {} }, instructions },
  )
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools] }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const { name, arguments: args } = request.params
    if (!isActionName(name)) {
      try {
        await hooks.onUnknownTool?.(name)
      } catch (error) {
        return toolError(failureOf(error))
      }
      throw new McpError(
        ErrorCode.InvalidParams,
        `Unknown tool "${name}"${didYouMean(name, actionNames)}: call tools/list for the ${tools.length} tools`,
      )
    }
    try {
      return toolResult(await hooks.execute(name, args ?? {}))
    } catch (error) {
      return toolError(failureOf(error))
    }
  })
  return server
}
