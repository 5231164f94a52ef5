import type * as Y from 'yjs'
import { boardMaps } from '../../shared/board-doc.ts'
import type { StoredClaim } from '../../shared/claims.ts'

/**
 * What get_board computed from a board document, kept until the document changes: cards
 * presented, sorted and serialized cost more than everything else get_board does (2,000
 * cards: 1.6 MB of JSON), and agents read an unchanged board again and again. An entry is
 * valid while the document has had no update since (any origin: a write, a person's
 * edit, another process through Redis) and the clock is inside the interval in which every
 * card's claim stays as shown (a lease passing turns a card's claim from working to
 * lapsed). Entries are made inside a read of the document, so they hold committed state.
 */

/** Answers kept per document (one per distinct set of filters; the common ones are few). */
const MAX_ANSWERS = 16

export interface BoardAnswer<T> {
  /** The clock interval in which the answer stays true. */
  from: number
  until: number
  value: T
}

interface DocAnswers {
  version: number
  answers: Map<string, BoardAnswer<unknown>>
}

const perDoc = new WeakMap<Y.Doc, DocAnswers>()

function answersOf(doc: Y.Doc): DocAnswers {
  let entry = perDoc.get(doc)
  if (!entry) {
    const made: DocAnswers = { version: 0, answers: new Map() }
    doc.on('update', () => {
      made.version += 1
      made.answers.clear()
    })
    perDoc.set(doc, made)
    entry = made
  }
  return entry
}

/**
 * The interval of the clock around `now` in which no claim of the board changes how it is
 * shown: until the first live lease passes, and not before the last lapsed one passed (a
 * test's clock may go back).
 */
export function claimsStableAround(doc: Y.Doc, now: number): { from: number; until: number } {
  let from = Number.NEGATIVE_INFINITY
  let until = Number.POSITIVE_INFINITY
  boardMaps(doc).claims.forEach((value) => {
    const stored = value as StoredClaim | undefined
    if (!stored || (stored.releasedAt ?? null) !== null) return
    const expires = Date.parse(stored.expiresAt)
    if (Number.isNaN(expires)) return
    if (expires > now) until = Math.min(until, expires)
    else from = Math.max(from, expires)
  })
  return { from, until }
}

/** The answer for `key` computed from this document, made by `make` when none is valid at `now`. */
export function boardAnswer<T>(doc: Y.Doc, key: string, now: number, make: () => T): T {
  const entry = answersOf(doc)
  const kept = entry.answers.get(key) as BoardAnswer<T> | undefined
  if (kept && kept.from <= now && now < kept.until) return kept.value
  const value = make()
  const { from, until } = claimsStableAround(doc, now)
  if (entry.answers.size >= MAX_ANSWERS) entry.answers.clear()
  entry.answers.set(key, { from, until, value })
  return value
}
