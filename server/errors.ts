/**
 * The one error type that crosses the wire: becomes `{ error: message, ...extra }` with
 * its status. Anything else thrown is a fault, logged and answered with a bare 500.
 */
export class ApiError extends Error {
  readonly status: number
  readonly extra: Record<string, unknown> | undefined
  /** Response headers the answer needs (a 429's Retry-After, say). */
  readonly headers: Record<string, string> | undefined

  constructor(
    status: number,
    message: string,
    extra?: Record<string, unknown>,
    headers?: Record<string, string>,
  ) {
    super(message)
    this.status = status
    this.extra = extra
    this.headers = headers
  }
}

export const badRequest = (message: string) => new ApiError(400, message)
export const notFound = (message: string) => new ApiError(404, message)
export const forbidden = (message: string) => new ApiError(403, message)
export const unauthorized = (message: string) => new ApiError(401, message)
export const conflict = (message: string, extra?: Record<string, unknown>) =>
  new ApiError(409, message, extra)
