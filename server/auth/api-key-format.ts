import { randomBytes } from 'node:crypto'
import { crc32 } from 'node:zlib'

/**
 * API key: `cb_` + key id (32 hex) + secret (40 base62) + checksum (8 hex, CRC-32 of what
 * precedes it). One token with no separators, so a double-click selects all of it. The
 * checksum lets a mistyped or truncated key be refused before any query.
 */
export const KEY_PREFIX = 'cb_'
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const SHAPE = /^cb_([0-9a-f]{32})([0-9A-Za-z]{40})([0-9a-f]{8})$/

function checksum(body: string): string {
  return crc32(body).toString(16).padStart(8, '0')
}

function base62(length: number): string {
  let out = ''
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 4 * 62: drop the top bytes so every character is equally likely.
      if (byte < 248 && out.length < length) out += ALPHABET[byte % 62]
    }
  }
  return out
}

export function newApiKey(keyId: string): string {
  const body = `${KEY_PREFIX}${keyId.replaceAll('-', '')}${base62(40)}`
  return body + checksum(body)
}

/** The key id inside a well-formed key, or undefined for a malformed or mistyped one. */
export function parseApiKey(key: string): { keyId: string } | undefined {
  const m = SHAPE.exec(key)
  if (!m) return undefined
  const [, hex, , sum] = m as unknown as [string, string, string, string]
  if (checksum(key.slice(0, -8)) !== sum) return undefined
  const keyId = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
  return { keyId }
}

/** What the key screen shows: enough to recognise a key, useless to use it. */
export function displayPrefix(keyId: string): string {
  return `${KEY_PREFIX}${keyId.replaceAll('-', '').slice(0, 8)}`
}
