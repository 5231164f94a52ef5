import {
  type ActionInput,
  type ActionName,
  type ActionResults,
  actions,
} from '../../shared/actions.ts'
import { invalidKeyError } from '../auth/api-keys.ts'
import { KeyRefused } from '../live/write-record.ts'
import { chargeRequest } from '../rate-limit/limiter.ts'
import { type AnswerBudget, fits, trimmedWriteAnswer } from './answer-budget.ts'
import { claimGate } from './claim-gate.ts'
import {
  type AnswerRecorder,
  actionContext,
  type Caller,
  type Handler,
  type Services,
} from './context.ts'
import { handlers } from './handlers.ts'
import { parseParams } from './validation.ts'

/**
 * The one pipeline every face runs an action through (the agent endpoint, MCP, the app's
 * routes that reuse an action): charge → validate → claim gate → handler → blockers →
 * idempotent answer → commit. The endpoint runs its steps apart (it charges while it
 * authenticates, and validates before it takes an Idempotency-Key); MCP runs `perform`.
 */

/** The writes whose answer lists what they wrote, which a budget may cut (their output has `omitted`). */
const TRIMMED = new Set(
  (Object.keys(actions) as ActionName[]).filter(
    (name) => actions[name].write && 'omitted' in actions[name].output.shape,
  ),
)

/** A validated action: its input, and the caller with the identity the params named. */
export interface Validated<N extends ActionName = ActionName> {
  action: N
  input: ActionInput<N>
  caller: Caller
}

/** Validates an action's params (400 naming the parameter); an agent's identity comes from them. */
export function validate(caller: Caller, action: ActionName, params: unknown): Validated {
  const input = parseParams(action, actions[action].input, params) as ActionInput<ActionName>
  if (caller.type !== 'agent') return { action, input, caller }
  const named = input as Record<string, unknown>
  const identity = {
    agentName: named.agentName as string | undefined,
    house: named.house as string | undefined,
    generation: named.generation as number | undefined,
    isSubChild: named.isSubChild as boolean | undefined,
  }
  return { action, input, caller: { ...caller, identity } }
}

/**
 * Runs a validated action: its writes pass the claim gate (claim-locked actions), record
 * the blockers they moved and, with `answer`, store the answer with them.
 */
export async function run<N extends ActionName>(
  services: Services,
  { action, input, caller }: Validated<N>,
  options: { answer?: AnswerRecorder | undefined; budget?: AnswerBudget | undefined } = {},
): Promise<ActionResults[N]> {
  const ctx = actionContext(services, caller, { gate: claimGate(action, input), ...options })
  try {
    const result = await (handlers[action] as Handler<N>)(ctx, input)
    const { budget } = options
    // Reads fit their answers themselves, as pages; a write's list is cut here, once written.
    if (budget && TRIMMED.has(action) && !fits(budget, result)) {
      return trimmedWriteAnswer(result as Record<string, unknown>, budget) as ActionResults[N]
    }
    return result
  } catch (error) {
    // The key was revoked while the write ran (record_writes refused it).
    if (error instanceof KeyRefused) throw invalidKeyError()
    throw error
  }
}

/** The whole pipeline for an agent or a person: an agent's request is charged first (429). */
export async function perform(
  services: Services,
  request: {
    caller: Caller
    action: ActionName
    /** As sent: validated here. */
    params: unknown
    /** Receives the rate-limit headers (also of a refused request). */
    onRateLimit?: ((headers: Record<string, string>) => void) | undefined
    budget?: AnswerBudget | undefined
  },
): Promise<unknown> {
  const { caller, action } = request
  if (caller.type === 'agent') {
    await chargeRequest(services.limiter, caller.key, action, request.onRateLimit)
  }
  return run(services, validate(caller, action, request.params), { budget: request.budget })
}
