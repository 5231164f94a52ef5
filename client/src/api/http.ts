import type { z } from 'zod/mini'

/** A failed app-API call: the server's own words (`{ error }`) and status, or a network failure (status 0). */
export class ApiFailure extends Error {
  readonly status: number
  readonly body: unknown

  constructor(status: number, message: string, body?: unknown) {
    super(message)
    this.name = 'ApiFailure'
    this.status = status
    this.body = body
  }

  get offline(): boolean {
    return this.status === 0
  }
}

function errorMessage(body: unknown, status: number): string {
  if (typeof body === 'object' && body !== null && 'error' in body) {
    const e = (body as { error: unknown }).error
    if (typeof e === 'string' && e !== '') return e
  }
  return `The server answered ${status}`
}

/** Called whenever the server says the session is gone, so the app can show the sign-in screen. */
let onSignedOut: (() => void) | undefined
export function setSignedOutHandler(fn: () => void): void {
  onSignedOut = fn
}

/**
 * Calls the app API as the signed-in person (session cookie) and checks the answer's shape
 * at run time: what comes over the wire is never trusted as a type.
 */
export async function api<S extends z.ZodMiniType>(
  method: string,
  path: string,
  schema: S,
  body?: unknown,
): Promise<z.output<S>> {
  const data = await send(method, path, body)
  const parsed = schema.safeParse(data)
  if (!parsed.success) {
    throw new ApiFailure(500, `The server's answer to ${method} ${path} had an unexpected shape`)
  }
  return parsed.data
}

/** For answers without a body (204). */
export async function apiVoid(method: string, path: string, body?: unknown): Promise<void> {
  await send(method, path, body)
}

async function send(method: string, path: string, body?: unknown): Promise<unknown> {
  let res: Response
  try {
    res = await (startedAtBoot(method, path, body) ??
      fetch(`/api/app${path}`, {
        method,
        credentials: 'same-origin',
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }))
  } catch {
    throw new ApiFailure(0, 'You are offline: this needs a connection to the server.')
  }
  const text = await res.text()
  let data: unknown
  try {
    data = text ? JSON.parse(text) : undefined
  } catch {
    data = undefined
  }
  if (!res.ok) {
    if (res.status === 401 && !path.startsWith('/login')) onSignedOut?.()
    throw new ApiFailure(res.status, errorMessage(data, res.status), data)
  }
  return data
}

const BOOT_ANSWERS_KEPT_MS = 10_000

/**
 * The same request, bodiless, started by the page's first script (boot.ts): taken once,
 * and only while the page is new (a sync token asked for later must be a fresh one).
 */
function startedAtBoot(method: string, path: string, body: unknown): Promise<Response> | undefined {
  const started = window.corkboardBoot?.started
  if (body !== undefined || !started) return undefined
  if (performance.now() > BOOT_ANSWERS_KEPT_MS) {
    started.clear()
    return undefined
  }
  const key = `${method} ${path}`
  const response = started.get(key)
  started.delete(key)
  return response
}

/** A message for a person from anything thrown. */
export function describeError(error: unknown): string {
  if (error instanceof ApiFailure) return error.message
  if (error instanceof Error) return error.message
  return 'Something went wrong'
}
