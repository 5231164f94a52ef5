import { isBusyError, isConnectionError } from '../../persistence/availability.ts'
import { ApiError } from '../errors.ts'

/** How long a client is asked to wait while the database is away (it is probed twice a second). */
export const UNAVAILABLE_RETRY_SECONDS = 2

/** The answer while the database does not answer: at once, saying so, never a hang or a bare 500. */
export function unavailableError(): ApiError {
  return new ApiError(
    503,
    `The database is not answering; nothing was written. Try again in ${UNAVAILABLE_RETRY_SECONDS} seconds`,
  )
}

/**
 * The answer when the database is there but did not finish in time (a lock or a statement
 * timed out, a deadlock was broken): the transaction was rolled back, nothing was written.
 */
export function busyError(): ApiError {
  return new ApiError(
    503,
    `The database is busy (a lock or a statement timed out); nothing was written. Try again in ${UNAVAILABLE_RETRY_SECONDS} seconds`,
  )
}

/** An error as the client should see it: storage failures become the 503s above. */
export function asApiError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error
  if (isConnectionError(error)) return unavailableError()
  return isBusyError(error) ? busyError() : undefined
}
