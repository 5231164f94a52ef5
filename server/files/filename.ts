/** Longest stored file name, extension included (the specification's filename limit). */
const MAX_LENGTH = 100
const DEFAULT_BASE = 'screenshot'

/**
 * Reduces a screenshot's label to safe characters and gives it the extension of its
 * actual bytes: accents are folded, everything outside `A–Z a–z 0–9 . _ -` (slashes
 * included, so no path survives) becomes `-`, a declared extension is dropped, no leading
 * dot is left (no hidden files), and the result fits in 100 characters.
 */
export function safeFilename(label: string | undefined, extension: string): string {
  let base = (label ?? '')
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/-{2,}/g, '-')
  base = base.replace(/\.[A-Za-z0-9]{1,5}$/, '')
  base = base.replace(/^[.\-_]+/, '').replace(/[.\-_]+$/, '')
  base = base.slice(0, MAX_LENGTH - extension.length - 1).replace(/[.\-_]+$/, '')
  return `${base || DEFAULT_BASE}.${extension}`
}
