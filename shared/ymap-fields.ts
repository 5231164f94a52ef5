import type * as Y from 'yjs'

/**
 * Reading a live document's Y.Map fields as wire data, checked value by value: whatever a
 * client wrote, a reader gets the type it expects (empty or null for anything else).
 */

export function str(m: Y.Map<unknown>, key: string): string {
  const v = m.get(key)
  return typeof v === 'string' ? v : ''
}

/** A non-empty string, or null. */
export function strOrNull(m: Y.Map<unknown>, key: string): string | null {
  const v = m.get(key)
  return typeof v === 'string' && v !== '' ? v : null
}

/** A finite number, or 0. */
export function num(m: Y.Map<unknown>, key: string): number {
  const v = m.get(key)
  return typeof v === 'number' && Number.isFinite(v) ? v : 0
}

/** The strings of an array value (anything else dropped), or []. */
export function strings(m: Y.Map<unknown>, key: string): string[] {
  const v = m.get(key)
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []
}
