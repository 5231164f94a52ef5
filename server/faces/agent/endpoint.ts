import type { IncomingMessage, ServerResponse } from 'node:http'
import { type ActionName, actionNames, actions, isActionName } from '../../../shared/actions.ts'
import { type AnswerBudget, budgetOfTokens } from '../../actions/answer-budget.ts'
import type { Services } from '../../actions/context.ts'
import { run, validate } from '../../actions/perform.ts'
import { didYouMean } from '../../actions/suggest.ts'
import { INVALID_KEY_HINT, keyCredentials } from '../../auth/api-keys.ts'
import { ACCESS_TOKEN_PREFIX } from '../../auth/oauth-grants.ts'
import { ApiError } from '../../errors.ts'
import { type Logger, parseJson, readBody, sendError, sendJson } from '../../http/json.ts'
import { noteRequest } from '../../http/request-context.ts'
import { policyHeader } from '../../rate-limit/limiter.ts'
import { admit } from './admission.ts'
import type { AgentForwarding } from './forward.ts'
import { parseIdempotencyKey, REPLAYED_HEADER, runIdempotent } from './idempotency.ts'

/** The Bearer key of a request, or 401 (with the hint about the redirecting bare domain). */
export function bearerKey(req: IncomingMessage): string {
  const header = req.headers.authorization
  if (!header)
    throw new ApiError(
      401,
      `Missing Authorization header: send "Authorization: Bearer <API key>". ${INVALID_KEY_HINT}`,
    )
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header)
  if (!m?.[1])
    throw new ApiError(
      401,
      `Malformed Authorization header: expected "Bearer <API key>". ${INVALID_KEY_HINT}`,
    )
  return m[1]
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

export interface Envelope {
  action: ActionName
  params: Record<string, unknown>
}

/** Checks the `{ action, params }` body: a known action, params an object, nothing else. */
export function parseEnvelope(body: unknown): Envelope {
  if (!isPlainObject(body)) throw new ApiError(400, 'Body must be a JSON object { action, params }')
  const extra = Object.keys(body).filter((k) => k !== 'action' && k !== 'params')
  if (extra.length > 0) {
    throw new ApiError(
      400,
      `Unknown body field${extra.length > 1 ? 's' : ''} ${extra.map((k) => `"${k}"`).join(', ')}; the body is { action, params }`,
    )
  }
  const { action, params } = body
  if (typeof action !== 'string') throw new ApiError(400, 'action is required and must be a string')
  if (!isActionName(action)) throw new ApiError(400, unknownActionMessage(action))
  if (params !== undefined && !isPlainObject(params))
    throw new ApiError(400, 'params must be a JSON object')
  return { action, params: params ?? {} }
}

/** What an unknown action is told: the nearest actions, and where the full list is. */
export function unknownActionMessage(action: string): string {
  return `Unknown action "${action}"${didYouMean(action, actionNames)}; the ${actionNames.length} actions are listed in docs/agent-api.md, GET /api/openapi.json and the MCP tools/list`
}

/** The optional header asking for answers that fit, as MCP's (docs/agent-api.md). */
export const ANSWER_TOKENS_HEADER = 'Answer-Tokens'
const ANSWER_TOKENS = { min: 1_000, max: 1_000_000 }

/** The budget an `Answer-Tokens` header asks for, undefined without one; a bad one is a 400. */
export function parseAnswerTokens(values: readonly string[] | undefined): AnswerBudget | undefined {
  if (values === undefined || values.length === 0) return undefined
  const raw = values.length === 1 ? (values[0] as string).trim() : ''
  const tokens = /^\d{1,7}$/.test(raw) ? Number(raw) : Number.NaN
  if (!(tokens >= ANSWER_TOKENS.min && tokens <= ANSWER_TOKENS.max)) {
    throw new ApiError(
      400,
      `${ANSWER_TOKENS_HEADER} must be one integer from ${ANSWER_TOKENS.min} to ${ANSWER_TOKENS.max.toLocaleString('en')}: the tokens (three characters each) an answer may take`,
    )
  }
  return budgetOfTokens(tokens)
}

/** `POST /api/agent`: any other method is a 405; failures are `{ error }` bodies. */
export function agentEndpoint(services: Services, log: Logger, forwarding?: AgentForwarding) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      // Every answer says the policy, even one that charged no key (401, 405).
      if (services.limiter) {
        res.setHeader('RateLimit-Policy', policyHeader([services.limiter.budgets.perKey]))
      }
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST')
        throw new ApiError(
          405,
          `Method ${req.method} not allowed: the agent endpoint takes POST only`,
        )
      }
      // A malformed key is refused before the body is read or anything is queried.
      const bearer = bearerKey(req)
      if (bearer.startsWith(ACCESS_TOKEN_PREFIX)) {
        // RFC 8707: an access token is bound to /mcp, the resource it was issued for.
        throw new ApiError(
          401,
          'An OAuth access token is good for /mcp only: the agent endpoint takes an organisation API key',
        )
      }
      const credentials = keyCredentials(bearer)
      const setHeaders = (headers: Record<string, string>) => {
        for (const [name, value] of Object.entries(headers)) res.setHeader(name, value)
      }
      // The body is read before the key is checked, so both go to Postgres in one round
      // trip; an unusable body is reported only once the key passed (401 comes first), and
      // still spends the key's budget.
      let envelope: Envelope | undefined
      let bodyError: unknown
      let body: Buffer | undefined
      try {
        body = await readBody(req)
      } catch (error) {
        bodyError = error
      }
      // Scaled out, the process serving the key's organisation computes the call.
      if (body && forwarding && (await forwarding.forward(req, res, credentials.keyId, body))) {
        return
      }
      try {
        if (body) envelope = parseEnvelope(parseJson(body))
      } catch (error) {
        bodyError = error
      }
      const key = await admit(services, credentials, envelope?.action, setHeaders)
      noteRequest({ keyId: key.id, orgId: key.orgId, action: envelope?.action })
      if (!envelope) throw bodyError
      const idempotencyKey = parseIdempotencyKey(req.headersDistinct['idempotency-key'])
      const budget = parseAnswerTokens(req.headersDistinct[ANSWER_TOKENS_HEADER.toLowerCase()])
      // Validated before the Idempotency-Key is taken: a 400 here never uses it up.
      const request = validate(
        { type: 'agent', key, identity: {} },
        envelope.action,
        envelope.params,
      )
      // Reads ignore the key: running one again changes nothing.
      if (idempotencyKey === undefined || !actions[envelope.action].write) {
        sendJson(res, 200, await run(services, request, { budget }))
        return
      }
      const answer = await runIdempotent(
        services,
        log,
        { keyId: key.id, key: idempotencyKey, ...envelope },
        (answer) => run(services, request, { answer, budget }),
      )
      sendJson(
        res,
        answer.status,
        answer.body,
        answer.replayed ? { [REPLAYED_HEADER]: 'true' } : {},
      )
    } catch (error) {
      sendError(res, error, log)
    }
  }
}
