import { pino } from 'pino'
import { currentRequest } from './request-context.ts'

/** LOG_LEVEL: each level writes its own lines and those of the levels before it. */
export const LOG_LEVELS = ['silent', 'error', 'warn', 'info', 'debug'] as const
export type LogLevel = (typeof LOG_LEVELS)[number]

/**
 * What the service's parts log through, called like `console` (`log.error('what failed',
 * error)`), so tests may pass `console` or a collector. Strings make the message, an Error
 * its `err` (with stack and cause), a plain object adds its fields to the line.
 */
export interface Logger {
  error(...args: unknown[]): void
  warn(...args: unknown[]): void
  info(...args: unknown[]): void
}

/** The service's logger: JSON lines (pino), each carrying the request id of its request. */
export interface ServiceLogger extends Logger {
  debug(...args: unknown[]): void
  /** Whether lines of this level are written (skip building a line nobody reads). */
  enabled(level: Exclude<LogLevel, 'silent'>): boolean
}

export type LogDestination = pino.DestinationStream

/** Stdout, shared by every logger of the process (tests start many services in one). */
let stdout: LogDestination | undefined

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

/** A console-style call as pino's (fields, message). */
function lineOf(args: readonly unknown[]): [Record<string, unknown>, string] {
  const fields: Record<string, unknown> = {}
  const words: string[] = []
  for (const arg of args) {
    if (typeof arg === 'string') words.push(arg)
    else if (isPlainObject(arg)) Object.assign(fields, arg)
    else if (typeof arg === 'object' && arg !== null) {
      // An Error (or anything thrown): the first is the line's `err`, later ones are words.
      if (fields.err === undefined) fields.err = arg
      else words.push(arg instanceof Error ? arg.message : String(arg))
    } else words.push(String(arg))
  }
  if (words.length === 0 && fields.err instanceof Error) words.push(fields.err.message)
  return [fields, words.join(' ')]
}

/**
 * The service's logger at `level`, writing JSON lines to `destination` (stdout unless a
 * test captures them). Every line written inside a request's async chain names its
 * `requestId`, whichever part wrote it.
 */
export function createLogger(level: LogLevel, destination?: LogDestination): ServiceLogger {
  stdout ??= destination ? undefined : pino.destination({ dest: 1, sync: true })
  const out = pino(
    {
      level,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => {
        const request = currentRequest()
        return request ? { requestId: request.id } : {}
      },
    },
    destination ?? (stdout as LogDestination),
  )
  const write =
    (method: 'error' | 'warn' | 'info' | 'debug') =>
    (...args: unknown[]) => {
      if (!out.isLevelEnabled(method)) return
      const [fields, message] = lineOf(args)
      out[method](fields, message)
    }
  return {
    error: write('error'),
    warn: write('warn'),
    info: write('info'),
    debug: write('debug'),
    enabled: (at) => out.isLevelEnabled(at),
  }
}
