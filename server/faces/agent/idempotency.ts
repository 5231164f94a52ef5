import { createHash, randomUUID } from 'node:crypto'
import type { ActionName } from '../../../shared/actions.ts'
import type { AnswerRecorder, Services } from '../../actions/context.ts'
import { systemClock } from '../../clock.ts'
import { ApiError } from '../../errors.ts'
import { errorBody, type Logger } from '../../http/json.ts'
import { asApiError } from '../../http/unavailable.ts'
import {
  claimKey,
  finishKey,
  IDEMPOTENCY_RENEW_MS,
  type KeyRef,
  type KeyRow,
  readKey,
  releaseKey,
  renewLease,
  settleAbandoned,
} from './idempotency-store.ts'

/**
 * `Idempotency-Key` on POST /api/agent (the IETF draft's semantics, docs/agent-api.md): the
 * key is claimed by one statement, and each write stores its answer with itself, through
 * its write scope (docs/design.md, "Retries made safe").
 */

export const IDEMPOTENCY_HEADER = 'Idempotency-Key'
export const REPLAYED_HEADER = 'Idempotent-Replayed'
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255

const badKey = (why: string) =>
  new ApiError(
    400,
    `${IDEMPOTENCY_HEADER} ${why}: send 1–${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters, bare or as a quoted string ("…"), a fresh one (a UUID) per request`,
  )

/** A quoted string of RFC 8941 (the draft's `sf-string`): its content, or undefined if malformed. */
function unquote(value: string): string | undefined {
  if (value.length < 2 || !value.startsWith('"') || !value.endsWith('"')) return undefined
  const end = value.length - 1
  let out = ''
  for (let i = 1; i < end; i++) {
    const c = value[i] as string
    if (c === '"') return undefined
    if (c === '\\') {
      const next = i + 1 < end ? value[++i] : undefined
      if (next !== '"' && next !== '\\') return undefined
      out += next
    } else out += c
  }
  return out
}

/**
 * The Idempotency-Key of a request (`values`: each header line sent), undefined when none
 * was sent; a malformed one is a 400 naming the header. The draft's quoted form and the bare
 * form (as most services take it) name the same key.
 */
export function parseIdempotencyKey(values: readonly string[] | undefined): string | undefined {
  if (values === undefined || values.length === 0) return undefined
  if (values.length > 1) throw badKey('was sent more than once')
  const raw = values[0] as string
  let key = raw
  if (raw.startsWith('"')) {
    const inner = unquote(raw)
    if (inner === undefined) throw badKey('is a malformed quoted string')
    key = inner
  }
  if (key.length === 0) throw badKey('is empty')
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
    throw badKey(`is ${key.length} characters long, over ${MAX_IDEMPOTENCY_KEY_LENGTH}`)
  // Visible ASCII only: no spaces (a comma-joined repeat looks like one), controls or others.
  if (!/^[\x21-\x7e]+$/.test(key)) throw badKey('holds a character that is not visible ASCII')
  return key
}

/** The same value with every object's keys sorted, so equal bodies serialize alike. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (typeof value !== 'object' || value === null) return value
  const sorted: Record<string, unknown> = {}
  for (const k of Object.keys(value).sort())
    sorted[k] = canonical((value as Record<string, unknown>)[k])
  return sorted
}

/**
 * What "the same request" means for a key: the action and its params as parsed JSON, so
 * key order and spacing do not count.
 */
export function requestFingerprint(action: ActionName, params: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify([action, canonical(params)]))
    .digest('hex')
}

/** An answer of the endpoint: a run's result, or an answer stored for the key. */
export interface Answer {
  status: number
  body: unknown
  replayed: boolean
}

const inProgress = (key: string) =>
  new ApiError(
    409,
    `A request with ${IDEMPOTENCY_HEADER} "${key}" is still running: retry once it has finished (Retry-After)`,
    undefined,
    { 'retry-after': '1' },
  )

const otherBody = (key: string) =>
  new ApiError(
    422,
    `${IDEMPOTENCY_HEADER} "${key}" was first sent with another request (a different action or params): a key names one request, send a fresh key for a new one`,
  )

const takenOver = (key: string) =>
  new ApiError(
    409,
    `This request's ${IDEMPOTENCY_HEADER} "${key}" was taken over by a retry while it ran (its lease lapsed); nothing of this request was written, the retry's answer is the one that counts`,
  )

const answerLost = (key: string) =>
  new ApiError(
    409,
    `The request with ${IDEMPOTENCY_HEADER} "${key}" was carried out, but the service stopped before its answer was stored: read the current state rather than sending it again`,
  )

function replay(row: KeyRow, key: string): Answer {
  if (row.status === null || row.response === null) throw answerLost(key)
  return { status: row.status, body: JSON.parse(row.response), replayed: true }
}

/**
 * A write refused because a retry took the key over: record_writes raising CB409 (a write
 * committing alone), or the lane's IdempotencyTakenOver, which carries the same code (a
 * write refused in a batch).
 */
const isTakenOver = (error: unknown) => (error as { code?: unknown } | null)?.code === 'CB409'

/**
 * Claims the key for `attempt` (undefined), or answers the request from the key: its stored
 * answer, a 422 for another body, a 409 while the first request runs.
 */
async function claimOrAnswer(
  services: Services,
  ref: KeyRef,
  fingerprint: string,
  attempt: string,
): Promise<Answer | undefined> {
  const { db } = services
  const clock = services.clock ?? systemClock
  // A few rounds: between the claim and the read, the holder may let the key go.
  for (let round = 0; round < 3; round++) {
    if (await claimKey(db, ref, fingerprint, attempt, clock.now())) return undefined
    const row = await readKey(db, ref)
    if (!row) continue
    if (row.fingerprint !== fingerprint) throw otherBody(ref.key)
    if (row.state === 'done') return replay(row, ref.key)
    const lapsed = row.lease_until !== null && row.lease_until.getTime() <= clock.now()
    if (!lapsed) throw inProgress(ref.key)
    if (row.status !== null) {
      // Its write committed, then its process stopped before answering: that is the answer.
      await settleAbandoned(db, ref, row.attempt)
      return replay(row, ref.key)
    }
    // Lapsed with nothing written: the next claim takes it over.
  }
  throw inProgress(ref.key)
}

/**
 * Runs one validated write under its Idempotency-Key: the first request runs `run`, whose
 * writes store the answer through the recorder; a retry is answered from the key, refused with
 * 409 while the first runs, or 422 when its body differs. Errors of the run are thrown as
 * they came, after the key's answer (4xx) was stored or the key let go (5xx).
 */
export async function runIdempotent(
  services: Services,
  log: Logger,
  request: KeyRef & { action: ActionName; params: unknown },
  run: (answer: AnswerRecorder) => Promise<unknown>,
): Promise<Answer> {
  const { db } = services
  const clock = services.clock ?? systemClock
  const ref: KeyRef = { keyId: request.keyId, key: request.key }
  const fingerprint = requestFingerprint(request.action, request.params)
  const attempt = randomUUID()
  const settled = await claimOrAnswer(services, ref, fingerprint, attempt)
  if (settled) return settled

  const renewal = setInterval(() => {
    // A failed renewal is tried again at the next turn; if none gets through, the lease
    // lapses and a retry may take the key (this request's write then cannot commit).
    renewLease(db, ref, attempt, clock.now()).catch(() => {})
  }, IDEMPOTENCY_RENEW_MS)
  renewal.unref()
  /** The answer the last committed write stored, the key done with it. */
  let stored: string | undefined
  const recording: AnswerRecorder = (scope, value) => {
    // undefined for a write of no result: stored as 200 with no answer yet (see finishKey).
    const response: string | undefined = JSON.stringify(value)
    scope.idempotent({ keyId: ref.keyId, key: ref.key, attempt, response: response ?? null })
    return () => {
      stored = response
    }
  }
  try {
    let result: unknown
    try {
      result = await run(recording)
    } catch (error) {
      if (isTakenOver(error)) throw takenOver(ref.key)
      const known = asApiError(error)
      if (known && known.status < 500) {
        const response = JSON.stringify(errorBody(known))
        await finishKey(db, ref, attempt, { status: known.status, response }).catch((e: unknown) =>
          log.error('storing an Idempotency-Key answer failed', e),
        )
      } else {
        // If this fails the lease lapses in its time and a retry takes the key then.
        await releaseKey(db, ref, attempt).catch(() => {})
      }
      throw error
    }
    const response = JSON.stringify(result)
    // Mostly the action answers what its write returned, already stored with it (the
    // usual case: nothing left to do). Otherwise the answer is stored now; if this fails,
    // the write's result stands (or, with none, a retry learns the answer was lost).
    if (response !== stored) {
      await finishKey(db, ref, attempt, { status: 200, response }).catch((e: unknown) =>
        log.error('storing an Idempotency-Key answer failed', e),
      )
    }
    return { status: 200, body: result, replayed: false }
  } finally {
    clearInterval(renewal)
  }
}
