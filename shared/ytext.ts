import type * as Y from 'yjs'

/**
 * Replaces a Y.Text's content with `value` by editing only the part that differs (common
 * prefix and suffix kept), so a person typing elsewhere in the same text keeps their edit.
 */
export function replaceText(text: Y.Text, value: string): void {
  const current = text.toString()
  if (current === value) return
  let start = 0
  const max = Math.min(current.length, value.length)
  while (start < max && current[start] === value[start]) start++
  let end = 0
  while (end < max - start && current[current.length - 1 - end] === value[value.length - 1 - end]) {
    end++
  }
  const removed = current.length - start - end
  if (removed > 0) text.delete(start, removed)
  const inserted = value.slice(start, value.length - end)
  if (inserted) text.insert(start, inserted)
}
