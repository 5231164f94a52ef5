import { type ActionName, actionNames, actions } from '../../shared/actions.ts'
import { claimRecord } from '../../shared/schemas/outputs.ts'
import { errorResponse, jsonSchema, ref } from '../http/openapi-schema.ts'
import type { JsonSchema } from '../http/route-docs.ts'
import type { RegisteredRoute } from '../http/router.ts'
import { ANSWER_TOKENS_HEADER } from './agent/endpoint.ts'
import {
  IDEMPOTENCY_HEADER,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  REPLAYED_HEADER,
} from './agent/idempotency.ts'
import { IDEMPOTENCY_TTL_MS } from './agent/idempotency-store.ts'
import { SERVER_VERSION } from './mcp/tools.ts'
import { routePaths, sessionScheme } from './openapi-paths.ts'

/**
 * `GET /api/openapi.json`: the service's HTTP API as OpenAPI 3.1.
 *
 * The agent endpoint (tag `agent`) is generated from the action table like the MCP tools,
 * so the two never disagree: the request body is a union of the actions discriminated by
 * `action`, each with its params schema; the 200 answer is the union of the actions'
 * output schemas; every error is the endpoint's `{ error }` body (a 409 may name the
 * `holder`, a 429 says when to retry); the optional Idempotency-Key header and its answers.
 *
 * The app API (tag `app`) and the file routes (tag `files`) are generated from the routes'
 * own registrations (`routes`: the router's, once every route is registered), see
 * server/app-api/openapi-paths.ts.
 */

const pascal = (name: string) =>
  name
    .split('_')
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')

const requestName = (name: ActionName) => `${pascal(name)}Request`
const resultName = (name: ActionName) => `${pascal(name)}Result`

const ERROR: JsonSchema = {
  type: 'object',
  properties: { error: { type: 'string', description: 'What went wrong, in words.' } },
  required: ['error'],
}

const CONFLICT: JsonSchema = {
  type: 'object',
  properties: {
    error: { type: 'string' },
    holder: {
      description: 'The claim holding the card, when a claim is why the write was refused.',
      ...ref('ClaimRecord'),
    },
    expiresAt: { type: 'string', format: 'date-time' },
  },
  required: ['error'],
}

export function openApiDocument(routes: readonly RegisteredRoute[]): JsonSchema {
  const schemas: Record<string, JsonSchema> = {
    Error: ERROR,
    Conflict: CONFLICT,
    ClaimRecord: jsonSchema(claimRecord, 'output'),
  }
  for (const name of actionNames) {
    const spec = actions[name]
    schemas[requestName(name)] = {
      type: 'object',
      title: name,
      description: spec.description,
      properties: {
        action: { const: name },
        params: jsonSchema(spec.input, 'input'),
      },
      required: ['action'],
      additionalProperties: false,
      'x-claim-locked': spec.claimLocked,
      'x-read-only': !spec.write,
    }
    schemas[resultName(name)] = { title: `${name} result`, ...jsonSchema(spec.output, 'output') }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Corkboard API',
      version: SERVER_VERSION,
      description:
        'Agents (tag agent): one endpoint, POST /api/agent, with { action, params } and an organisation API key as the bearer token. The same actions are the MCP tools at /mcp. See docs/agent-api.md. ' +
        'People (tag app): JSON under /api/app/ with the session cookie, which the web app uses; files (tag files): stored images and screenshots. See docs/app-api.md.',
    },
    tags: [
      {
        name: 'agent',
        description: 'The agent endpoint, an organisation API key as bearer token.',
      },
      { name: 'app', description: 'The app API, as a person with the session cookie.' },
      { name: 'files', description: 'Node images and screenshots.' },
    ],
    components: {
      securitySchemes: {
        apiKey: {
          type: 'http',
          scheme: 'bearer',
          description: 'An organisation API key (cb_…), made in Settings → API keys.',
        },
        session: sessionScheme,
      },
      schemas,
    },
    security: [{ apiKey: [] }],
    paths: {
      '/api/agent': {
        post: {
          operationId: 'agent',
          tags: ['agent'],
          summary: 'Run one action',
          parameters: [
            {
              name: IDEMPOTENCY_HEADER,
              in: 'header',
              required: false,
              description: `Makes a write safe to send again (the IETF draft's semantics): for ${IDEMPOTENCY_TTL_MS / 3_600_000} hours, the same key with the same body under the same API key is answered with the first answer (its status and body, ${REPLAYED_HEADER}: true) and writes nothing; with another body it is a 422; while the first still runs, a 409 with Retry-After. 1–${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters, bare or quoted; a fresh UUID per request. Reads ignore it.`,
              schema: { type: 'string', pattern: '^[!-~]+$' },
            },
            {
              name: ANSWER_TOKENS_HEADER,
              in: 'header',
              required: false,
              description:
                'The longest answer wanted, in tokens of three characters (as MCP_ANSWER_TOKENS does over MCP): a longer read answers its first page, never cutting a record, with nextCursor (or commentsBefore, a get_changes cursor, nextOffset) and a note saying how to read on or narrow.',
              schema: { type: 'integer', minimum: 1_000, maximum: 1_000_000 },
            },
          ],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  oneOf: actionNames.map((n) => ref(requestName(n))),
                  discriminator: {
                    propertyName: 'action',
                    mapping: Object.fromEntries(
                      actionNames.map((n) => [n, `#/components/schemas/${requestName(n)}`]),
                    ),
                  },
                },
              },
            },
          },
          responses: {
            '200': {
              description: "The action's result (its schema is <Action>Result).",
              headers: {
                RateLimit: { schema: { type: 'string' } },
                'RateLimit-Policy': { schema: { type: 'string' } },
                [REPLAYED_HEADER]: {
                  description: `"true" on an answer repeated for an ${IDEMPOTENCY_HEADER} (an error answer too).`,
                  schema: { type: 'string', const: 'true' },
                },
              },
              content: {
                'application/json': {
                  schema: { oneOf: actionNames.map((n) => ref(resultName(n))) },
                },
              },
            },
            '400': errorResponse('Bad input: the message names the parameter and what is wrong.'),
            '401': errorResponse('A missing, malformed or revoked API key.'),
            '404': errorResponse('No such card, column, map, node or edge in this organisation.'),
            '409': {
              ...errorResponse(
                `Refused by a claim (holder), a state conflict (a column with cards being worked on), or the first request with this ${IDEMPOTENCY_HEADER} still running (Retry-After).`,
                'Conflict',
              ),
              headers: { 'Retry-After': { schema: { type: 'integer' } } },
            },
            '413': errorResponse('The body is larger than the endpoint takes.'),
            '422': errorResponse(
              `This ${IDEMPOTENCY_HEADER} was first sent with another request body.`,
            ),
            '429': {
              ...errorResponse('A rate budget is used up: wait Retry-After seconds.'),
              headers: { 'Retry-After': { schema: { type: 'integer' } } },
            },
            '503': {
              ...errorResponse('The database is not answering; nothing was written.'),
              headers: { 'Retry-After': { schema: { type: 'integer' } } },
            },
          },
        },
      },
      ...routePaths(routes),
    },
  }
}
