import type { IncomingMessage, ServerResponse } from 'node:http'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { budgetOfTokens } from '../../actions/answer-budget.ts'
import type { Services } from '../../actions/context.ts'
import { perform } from '../../actions/perform.ts'
import { type ApiKeyRow, authenticateApiKey } from '../../auth/api-keys.ts'
import { ACCESS_TOKEN_PREFIX, authenticateAccessToken } from '../../auth/oauth-grants.ts'
import { ApiError } from '../../errors.ts'
import { type Logger, MAX_BODY_BYTES, sendError } from '../../http/json.ts'
import { noteRequest } from '../../http/request-context.ts'
import { asApiError } from '../../http/unavailable.ts'
import { chargeRequest, policyHeader } from '../../rate-limit/limiter.ts'
import { bearerKey } from '../agent/endpoint.ts'
import { mcpChallenge } from '../oauth/routes.ts'
import { createToolServer, type ToolFailure, ToolFailureError } from './tools.ts'

export const MCP_PATH = '/mcp'

/** The failure shown for an error of the action path: ApiErrors as sent, faults as a bare 500. */
export function failureOfApiError(caught: unknown, log: Logger, retryAfter?: number): ToolFailure {
  const error = asApiError(caught)
  if (!error) {
    log.error(caught)
    return { status: 500, error: 'Internal server error' }
  }
  // The same body as the endpoint sends (`{ error, ...extra }`), with its status first.
  const failure: ToolFailure = { status: error.status, error: error.message, ...error.extra }
  if (error.status === 429 && retryAfter !== undefined) failure.retryAfter = retryAfter
  return failure
}

const MCP_KEY_HINT =
  'This MCP server expects an organisation API key as the bearer token ("Authorization: Bearer cb_..."), made by an owner or admin in Settings → API keys, or an access token from OAuth sign-in (MCP clients find it from the WWW-Authenticate header).'

/**
 * The principal of a bearer credential on /mcp: an OAuth access token (told by its prefix,
 * good here only) resolves to its grant's key row and robot, exactly what an API key
 * resolves to, so everything after this is the key's path.
 */
async function authenticateBearer(services: Services, req: IncomingMessage): Promise<ApiKeyRow> {
  const bearer = bearerKey(req)
  if (!bearer.startsWith(ACCESS_TOKEN_PREFIX)) return authenticateApiKey(services.db.lane, bearer)
  const principal = await authenticateAccessToken(services.db.lane, bearer)
  if (!principal) {
    throw new ApiError(
      401,
      'Invalid, expired or revoked access token: refresh it, or sign in again.',
    )
  }
  return principal
}

/**
 * `POST /mcp`: the Model Context Protocol over Streamable HTTP, stateless. Every HTTP
 * request is authenticated with its own `Authorization: Bearer <API key or access token>`
 * (so a revoked key or grant stops at once) and served by a fresh server and transport; a tool call runs the action
 * through `perform` (actions/perform.ts), the endpoint's own pipeline, so rate budgets, validation, claim locks
 * and errors are the same as `POST /api/agent`. Only tool calls are charged against the
 * budgets, as requests are on the endpoint; initialisation and tools/list are not.
 */
export function mcpEndpoint(services: Services, log: Logger) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      // Every answer says the policy, also those that charge nothing (401, 405, tools/list).
      if (services.limiter) {
        res.setHeader('RateLimit-Policy', policyHeader([services.limiter.budgets.perKey]))
      }
      if (req.method !== 'POST') {
        // Stateless: no session to resume or delete and no standalone event stream.
        res.setHeader('allow', 'POST')
        throw new ApiError(
          405,
          `Method ${req.method} not allowed: ${MCP_PATH} is a stateless Streamable HTTP endpoint and takes POST only`,
        )
      }
      let key: ApiKeyRow
      try {
        key = await authenticateBearer(services, req)
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) {
          // Where an MCP client finds how to sign in (RFC 9728 §5.1).
          res.setHeader('www-authenticate', mcpChallenge(req, services.config))
          // MCP clients try OAuth sign-in on a 401; say plainly what this server takes.
          throw new ApiError(401, `${error.message} ${MCP_KEY_HINT}`)
        }
        throw error
      }
      noteRequest({ keyId: key.id, orgId: key.orgId })
      const setHeaders = (headers: Record<string, string>) => {
        if (res.headersSent) return
        for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
      }
      const server = createToolServer({
        execute: async (action, args) => {
          let retryAfter: number | undefined
          noteRequest({ action })
          try {
            const answer = await perform(services, {
              caller: { type: 'agent', key, identity: {} },
              action,
              params: args,
              budget: budgetOfTokens(services.config.mcpAnswerTokens),
              onRateLimit: (headers) => {
                setHeaders(headers)
                if (headers['Retry-After'] !== undefined)
                  retryAfter = Number(headers['Retry-After'])
              },
            })
            noteRequest({ actionStatus: 200 })
            return answer
          } catch (error) {
            const failure = failureOfApiError(error, log, retryAfter)
            noteRequest({ actionStatus: failure.status })
            throw new ToolFailureError(failure)
          }
        },
        onUnknownTool: async () => {
          try {
            await chargeRequest(services.limiter, key, undefined, setHeaders)
          } catch (error) {
            throw new ToolFailureError(failureOfApiError(error, log))
          }
        },
        log,
      })
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        // One JSON answer per POST: tool calls here never stream progress.
        enableJsonResponse: true,
        maxRequestBodySize: MAX_BODY_BYTES,
      })
      res.on('close', () => {
        void transport.close()
        void server.close()
      })
      await server.connect(transport)
      await transport.handleRequest(req, res)
    } catch (error) {
      sendError(res, error, log)
    }
  }
}
