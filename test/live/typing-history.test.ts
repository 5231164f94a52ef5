import { describe, expect, test } from 'vitest'
import { TYPING_GAP_MS, typingBegins } from '../../server/live/card-history.ts'

/** A person's edits of a description are one history event per stretch of typing. */
describe('stretches of typing', () => {
  test('the first edit begins one, edits closer than the gap continue it, one after the gap begins the next; each person and card apart', () => {
    const t0 = 1_000_000_000
    expect(typingBegins('ada', 'card-1', t0)).toBe(true)
    expect(typingBegins('ada', 'card-1', t0 + 1_000)).toBe(false)
    expect(typingBegins('ada', 'card-1', t0 + TYPING_GAP_MS)).toBe(false)
    expect(typingBegins('grace', 'card-1', t0 + TYPING_GAP_MS)).toBe(true)
    expect(typingBegins('ada', 'card-2', t0 + TYPING_GAP_MS)).toBe(true)
    expect(typingBegins('ada', 'card-1', t0 + 2 * TYPING_GAP_MS + 1)).toBe(true)
  })
})
