import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

export const sha256Hex = (s: string) => createHash('sha256').update(s).digest('hex')

export const randomToken = (bytes = 32) => randomBytes(bytes).toString('base64url')

export function hmacBase64url(secret: string, data: string): string {
  return createHmac('sha256', secret).update(data).digest('base64url')
}

/** Constant-time comparison of two strings of possibly different length. */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}
