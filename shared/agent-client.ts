import {
  type ActionName,
  type ActionParams,
  type ActionResults,
  actionNames,
  actions,
} from './actions.ts'
import type { ClaimRecord } from './records.ts'

/**
 * A typed client for the agent endpoint (`POST {url}/api/agent`), derived from the action
 * table: `client.call('create_task', params)` and `client.create_task(params)` take that
 * action's params and resolve to its result type, and a new action of the table is a new
 * method without anyone writing it. Pure and fetch-based: runs in browsers and in Node.
 * Failures are thrown as typed errors, one class per status of the specification.
 *
 * Retries are safe: every write carries an `Idempotency-Key` (a fresh random one per call,
 * the same on each of its attempts), so the service runs it once however often it arrives.
 * A call is sent again, after a growing wait, on no answer at all (connection refused,
 * reset, hung up), on 502, 503 and 504 (waiting at least their Retry-After), and, for a
 * write, on a 409 with Retry-After (the same call is still running on the service). Never
 * on another 4xx or a 500: those would fail the same way.
 */

/** True when every param of the action is optional, so the params argument may be left out. */
type AllOptional<T> = Record<never, never> extends T ? true : false

/** The params argument of an action: optional exactly when the action needs no param. */
export type ParamsArg<N extends ActionName> =
  AllOptional<ActionParams<N>> extends true ? [params?: ActionParams<N>] : [params: ActionParams<N>]

/** One method per action, named exactly as the action. */
export type AgentActionMethods = {
  [N in ActionName]: (...params: ParamsArg<N>) => Promise<ActionResults[N]>
}

export interface AgentClientOptions {
  /** The service's base URL on its direct host, e.g. `https://www.example.com`. */
  url: string
  /** The organisation API key, sent as `Authorization: Bearer <key>`. */
  apiKey: string
  /** The fetch to use; defaults to the global one. */
  fetch?: typeof fetch
  /** Extra request headers (e.g. a User-Agent in Node). */
  headers?: Record<string, string>
  /** How a call is sent again after no answer or an answer saying to (see above). */
  retry?: RetryOptions
}

export interface RetryOptions {
  /** Attempts in all, the first one included; 1 never retries. Default 6. */
  attempts?: number
  /** The wait before the first retry; each next one doubles (with jitter). Default 500 ms. */
  baseDelayMs?: number
  /** The longest wait, Retry-After included. Default 8,000 ms. */
  maxDelayMs?: number
}

const RETRY_DEFAULTS: Required<RetryOptions> = { attempts: 6, baseDelayMs: 500, maxDelayMs: 8_000 }

/** Statuses a proxy or the service answers when it could not run the call now. */
const UNAVAILABLE = new Set([502, 503, 504])

/** A fresh Idempotency-Key: 128 random bits (getRandomValues works on plain http too). */
function idempotencyKey(): string {
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(16))
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** The wait before retry number `retry` (1-based): doubling, between half and all of it. */
function backoff(retry: number, options: Required<RetryOptions>, retryAfter?: number): number {
  const full = options.baseDelayMs * 2 ** (retry - 1)
  const jittered = full / 2 + Math.random() * (full / 2)
  return Math.min(options.maxDelayMs, Math.max(jittered, (retryAfter ?? 0) * 1000))
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

export interface AgentClientBase {
  /** The endpoint this client posts to. */
  readonly endpoint: string
  /** Calls one action; resolves to its result or throws an {@link AgentApiError}. */
  call<N extends ActionName>(action: N, ...params: ParamsArg<N>): Promise<ActionResults[N]>
}

export type AgentClient = AgentClientBase & AgentActionMethods

/** The error kinds, keyed by the status that produces them. */
export const ERROR_KINDS = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  429: 'rate_limited',
  500: 'server_error',
} as const

export type ErrorKind =
  | (typeof ERROR_KINDS)[keyof typeof ERROR_KINDS]
  /** Any other HTTP status. */
  | 'http_error'
  /** The endpoint answered with a redirect: the Authorization header would be dropped. */
  | 'redirect'
  /** No HTTP answer at all (connection refused, DNS, aborted). */
  | 'network'

/** What a failed call carries besides its message (the `{ error, ... }` body). */
export interface AgentErrorDetails {
  /** 409 only: the claim record of whoever holds the card. */
  holder?: ClaimRecord
  /** 409 with holder: when the holder's claim lapses. */
  expiresAt?: string
  /**
   * Seconds to wait before calling again (the Retry-After header): a 429, a 503, and a 409
   * whose Idempotency-Key's first request is still running.
   */
  retryAfter?: number
  /** The decoded error body as sent, when there was one. */
  body?: unknown
}

/**
 * A failed call: `status` is the HTTP status (0 when there was no answer), `message` the
 * service's message, written for a person and naming the parameter on a 400.
 */
export class AgentApiError extends Error {
  readonly status: number
  readonly kind: ErrorKind
  readonly holder: ClaimRecord | undefined
  readonly expiresAt: string | undefined
  readonly retryAfter: number | undefined
  readonly body: unknown

  constructor(status: number, message: string, details: AgentErrorDetails = {}, kind?: ErrorKind) {
    super(message)
    this.name = new.target.name
    this.status = status
    this.kind = kind ?? kindOf(status)
    this.holder = details.holder
    this.expiresAt = details.expiresAt
    this.retryAfter = details.retryAfter
    this.body = details.body
  }
}

/** 400: a wrong value or unknown parameter; the same call fails the same way, fix it. */
export class BadRequestError extends AgentApiError {
  declare readonly status: 400
  declare readonly kind: 'bad_request'
}
/** 401: missing, malformed or revoked key (or the header dropped by a redirect). */
export class UnauthorizedError extends AgentApiError {
  declare readonly status: 401
  declare readonly kind: 'unauthorized'
}
/** 403: the key is not allowed the operation; do not retry. */
export class ForbiddenError extends AgentApiError {
  declare readonly status: 403
  declare readonly kind: 'forbidden'
}
/** 404: no such id in this key's organisation; the id is stale, re-read. */
export class NotFoundError extends AgentApiError {
  declare readonly status: 404
  declare readonly kind: 'not_found'
}
/** 405: a method other than POST. */
export class MethodNotAllowedError extends AgentApiError {
  declare readonly status: 405
  declare readonly kind: 'method_not_allowed'
}
/**
 * 409: a claim lock. With `holder`, someone else holds the card: work another card and
 * come back after `expiresAt`. Without, the caller holds no live claim: claim again.
 * Never retry in a loop. (With `retryAfter`, the same write is still running on the
 * service: the client retried it until its attempts ran out.)
 */
export class ConflictError extends AgentApiError {
  declare readonly status: 409
  declare readonly kind: 'conflict'
}
/** 413: the request body is over the size limit. */
export class PayloadTooLargeError extends AgentApiError {
  declare readonly status: 413
  declare readonly kind: 'payload_too_large'
}
/** 429: a rate budget is used up (the message names it); wait `retryAfter` seconds. */
export class RateLimitedError extends AgentApiError {
  declare readonly status: 429
  declare readonly kind: 'rate_limited'
}
/** 500: a failure inside the service; retry once after a short pause. */
export class ServerError extends AgentApiError {
  declare readonly status: 500
  declare readonly kind: 'server_error'
}
/** The endpoint redirected: call the service on its direct host. */
export class RedirectError extends AgentApiError {
  declare readonly kind: 'redirect'
}
/** No answer from the service at all. */
export class NetworkError extends AgentApiError {
  declare readonly status: 0
  declare readonly kind: 'network'
}

const ERROR_CLASSES = {
  400: BadRequestError,
  401: UnauthorizedError,
  403: ForbiddenError,
  404: NotFoundError,
  405: MethodNotAllowedError,
  409: ConflictError,
  413: PayloadTooLargeError,
  429: RateLimitedError,
  500: ServerError,
} as const satisfies Record<keyof typeof ERROR_KINDS, typeof AgentApiError>

const hasStatus = <T extends object>(table: T, status: number): status is keyof T & number =>
  Object.hasOwn(table, status)

function kindOf(status: number): ErrorKind {
  return hasStatus(ERROR_KINDS, status) ? ERROR_KINDS[status] : 'http_error'
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** The holder of a 409 body, kept only if it has the shape of a claim record. */
function claimRecordOf(v: unknown): ClaimRecord | undefined {
  if (!isRecord(v)) return undefined
  return typeof v.taskId === 'string' &&
    typeof v.holder === 'string' &&
    typeof v.expiresAt === 'string' &&
    typeof v.isLive === 'boolean'
    ? (v as unknown as ClaimRecord)
    : undefined
}

function retryAfterOf(header: string | null): number | undefined {
  if (header === null) return undefined
  const seconds = Number(header)
  if (Number.isFinite(seconds)) return Math.max(0, seconds)
  const date = Date.parse(header)
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000))
}

/** The typed error of an error answer: the class of its status, with the body's details. */
export function agentError(status: number, body: unknown, headers?: Headers): AgentApiError {
  const message =
    isRecord(body) && typeof body.error === 'string'
      ? body.error
      : `The agent endpoint answered ${status} without an error message`
  const details: AgentErrorDetails = { body }
  if (isRecord(body)) {
    details.holder = claimRecordOf(body.holder)
    if (typeof body.expiresAt === 'string') details.expiresAt = body.expiresAt
  }
  details.retryAfter = retryAfterOf(headers?.get('retry-after') ?? null)
  if (hasStatus(ERROR_CLASSES, status)) return new ERROR_CLASSES[status](status, message, details)
  return new AgentApiError(status, message, details, status >= 500 ? 'server_error' : 'http_error')
}

async function decode(res: Response): Promise<unknown> {
  const text = await res.text()
  if (text === '') return undefined
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Creates a client for one service and key. */
export function createAgentClient(options: AgentClientOptions): AgentClient {
  const endpoint = `${options.url.replace(/\/+$/, '')}/api/agent`
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis)
  const headers = {
    ...options.headers,
    authorization: `Bearer ${options.apiKey}`,
    'content-type': 'application/json',
  }

  const retry = { ...RETRY_DEFAULTS, ...options.retry }

  async function call<N extends ActionName>(
    action: N,
    ...[params]: ParamsArg<N>
  ): Promise<ActionResults[N]> {
    const write = actions[action].write
    const init: RequestInit = {
      method: 'POST',
      // The draft's form of the header: a quoted string.
      headers: write ? { ...headers, 'idempotency-key': `"${idempotencyKey()}"` } : headers,
      body: JSON.stringify({ action, params: params ?? {} }),
      // A redirect to another host drops the Authorization header and turns a good key
      // into a 401; stopping here says what actually went wrong.
      redirect: 'manual',
    }
    for (let attempt = 1; ; attempt++) {
      const last = attempt >= retry.attempts
      try {
        return await once(action, init)
      } catch (error) {
        if (last || !(error instanceof AgentApiError)) throw error
        const again =
          error.kind === 'network' ||
          UNAVAILABLE.has(error.status) ||
          (write && error.status === 409 && error.retryAfter !== undefined)
        if (!again) throw error
        await sleep(backoff(attempt, retry, error.retryAfter))
      }
    }
  }

  /** One attempt of a call. */
  async function once<N extends ActionName>(
    action: N,
    init: RequestInit,
  ): Promise<ActionResults[N]> {
    const unreachable = (error: unknown) =>
      new NetworkError(
        0,
        `Could not reach the agent endpoint ${endpoint}: ${error instanceof Error ? error.message : String(error)}`,
        {},
        'network',
      )
    let res: Response
    try {
      res = await doFetch(endpoint, init)
    } catch (error) {
      throw unreachable(error)
    }
    if (res.type === 'opaqueredirect' || (res.status >= 300 && res.status < 400)) {
      const location = res.headers.get('location')
      throw new RedirectError(
        res.status,
        `The agent endpoint ${endpoint} redirected${location ? ` to ${location}` : ''}; call the service on its direct host, since a redirect drops the Authorization header`,
        {},
        'redirect',
      )
    }
    let body: unknown
    try {
      body = await decode(res)
    } catch (error) {
      // The connection broke while the answer was arriving.
      throw unreachable(error)
    }
    if (!res.ok) throw agentError(res.status, body, res.headers)
    if (!isRecord(body)) {
      throw new ServerError(500, `The agent endpoint answered ${action} with a non-object body`, {
        body,
      })
    }
    // The service's result for this action; its shape is the action table's contract.
    return body as ActionResults[N]
  }

  const client = { endpoint, call } as AgentClientBase & Partial<AgentActionMethods>
  for (const name of actionNames) {
    Object.defineProperty(client, name, {
      enumerable: true,
      value: (params?: ActionParams<typeof name>) =>
        (call as (a: ActionName, p?: unknown) => Promise<unknown>)(name, params),
    })
  }
  return client as AgentClient
}
