import { createHash } from 'node:crypto'
import { badRequest } from '../errors.ts'
import { answerText } from './answer-text.ts'

/**
 * How long an answer may be, for an agent that pays for every character it reads: over MCP
 * (MCP_ANSWER_TOKENS) or when a caller of the endpoint sends `Answer-Tokens`. A read too long
 * answers the first page that fits and says how to page on or narrow (`note`); a record is
 * never cut in two (docs/agent-api.md, "Reading a big board").
 */
export interface AnswerBudget {
  /** Characters of text the answer may take (a token counted as three characters). */
  readonly chars: number
}

/** Characters per token, as budgets count them. */
export const CHARS_PER_TOKEN = 3

/** Room kept for the note and the fields a page adds (nextCursor, truncation flags). */
const RESERVE = 600

export function budgetOfTokens(tokens: number): AnswerBudget {
  return { chars: tokens * CHARS_PER_TOKEN }
}

/** The characters a value takes as JSON, as an answer's text carries it. */
export function jsonLength(value: unknown): number {
  return value === undefined ? 0 : JSON.stringify(value).length
}

/** What is left of the budget for records once the rest of the answer is laid out. */
export function roomFor(budget: AnswerBudget, rest: unknown): number {
  return Math.max(0, budget.chars - RESERVE - jsonLength(rest))
}

/**
 * How many of `items`, in order, fit in `room` characters (each with the comma between).
 * At least `min` are taken, so a page always moves on.
 */
export function fittingCount<T>(
  items: readonly T[],
  room: number,
  size: (item: T) => number = jsonLength,
  min = 1,
): number {
  let used = 0
  for (let i = 0; i < items.length; i++) {
    used += size(items[i] as T) + 1
    if (used > room && i >= min) return i
  }
  return items.length
}

/** The characters of an answer's text: its JSON, images left out as tools send them. */
export function answerLength(answer: Record<string, unknown>): number {
  return answerText(answer).text.length
}

/** The answer's text fits the budget (or there is none). */
export function fits(budget: AnswerBudget | undefined, answer: Record<string, unknown>): boolean {
  return !budget || answerLength(answer) <= budget.chars
}

/**
 * Cursors of pages: base64url JSON of where the page stopped and a fingerprint of the query
 * it belongs to, so a cursor sent with other filters is a 400 rather than a wrong page.
 */
export function encodeCursor(query: unknown, at: readonly unknown[]): string {
  return Buffer.from(JSON.stringify([fingerprint(query), ...at])).toString('base64url')
}

/** Where a cursor's page starts, or a 400 naming the parameter. */
export function decodeCursor(cursor: string, query: unknown, name = 'cursor'): unknown[] {
  let parsed: unknown
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
  } catch {
    parsed = undefined
  }
  if (!Array.isArray(parsed) || typeof parsed[0] !== 'string') {
    throw badRequest(`${name} must be the nextCursor of a previous page, sent unchanged`)
  }
  if (parsed[0] !== fingerprint(query)) {
    throw badRequest(
      `${name} belongs to a page of other filters: send the same filters as the first page, or leave ${name} out to start again`,
    )
  }
  return parsed.slice(1)
}

function fingerprint(query: unknown): string {
  return createHash('sha256').update(JSON.stringify(query)).digest('base64url').slice(0, 10)
}

/** Where a page of a list kept in a stable order starts: the offset its cursor carries. */
export function offsetOf(cursor: string, query: unknown): number {
  const [offset] = decodeCursor(cursor, query)
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0) {
    throw badRequest('cursor must be the nextCursor of a previous page, sent unchanged')
  }
  return offset
}

/** A page of a list: where it starts in the whole list and whether the budget cut it. */
export interface ListPage<T> {
  items: T[]
  /** Undefined when the whole list was answered without paging. */
  nextCursor?: string | null
  /** The 1-based place of the page's first item, and how many there are in all. */
  from: number
  of: number
  /** The budget (not `limit`) ended the page. */
  cut: boolean
}

/**
 * A page of a list kept in a stable order, by offset: the whole list when no cursor, limit
 * or budget asks for less; else the items after the cursor, at most `limit`, as many as fit
 * in the budget beside `rest` (the answer without the list).
 */
export function listPage<T>(options: {
  items: readonly T[]
  query: unknown
  cursor?: string | undefined
  limit?: number | undefined
  budget?: AnswerBudget | undefined
  rest: Record<string, unknown>
  size?: (item: T) => number
}): ListPage<T> {
  const { items, query, cursor, limit, budget } = options
  const start = cursor === undefined ? 0 : Math.min(offsetOf(cursor, query), items.length)
  const limited = items.slice(start, limit === undefined ? undefined : start + limit)
  const whole = cursor === undefined && limit === undefined
  if (whole && (!budget || jsonLength(limited) <= roomFor(budget, options.rest))) {
    return { items: [...limited], from: 1, of: items.length, cut: false }
  }
  const n = budget
    ? fittingCount(limited, roomFor(budget, options.rest), options.size ?? jsonLength)
    : limited.length
  const end = start + n
  return {
    items: limited.slice(0, n),
    nextCursor: end < items.length ? encodeCursor(query, [end]) : null,
    from: start + 1,
    of: items.length,
    cut: n < limited.length,
  }
}

/** The note of a list page the budget ended: what is shown and how to read on. */
export function pageNote(page: ListPage<unknown>, what: string, action: string): string {
  return `${what} ${page.from}–${page.from + page.items.length - 1} of ${page.of} fit the answer budget: call ${action} with this nextCursor for the next page.`
}

/**
 * A write's answer cut to fit (create_nodes, create_edges, layout_map: their output has
 * `omitted`): its list shortened to what fits, all of which was written, with `omitted` and
 * a note saying where to read the rest.
 */
export function trimmedWriteAnswer<T extends Record<string, unknown>>(
  answer: T,
  budget: AnswerBudget,
): T {
  const lists = Object.entries(answer).filter(([, v]) => Array.isArray(v)) as [string, unknown[]][]
  const longest = lists.sort((a, b) => jsonLength(b[1]) - jsonLength(a[1]))[0]
  if (!longest) return answer
  const [name, list] = longest
  const room = roomFor(budget, { ...answer, [name]: [], omitted: list.length })
  const n = fittingCount(list, room, jsonLength, 0)
  if (n === list.length) return answer
  return {
    ...answer,
    [name]: list.slice(0, n),
    omitted: list.length - n,
    note: `All ${list.length} ${name} were written; the first ${n} fit the answer budget: read the rest with get_map.`,
  }
}
