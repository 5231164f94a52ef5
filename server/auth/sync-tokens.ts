import { hmacBase64url, safeEqual } from './crypto.ts'

/**
 * Sync token: what a browser's provider sends to open live documents. Stateless and
 * short-lived: `st1.<payload>.<HMAC-SHA256>`, signed with a secret every process shares.
 */
export interface SyncClaims {
  userId: string
  orgId: string
  /** Expiry, Unix milliseconds. */
  exp: number
}

export function signSyncToken(secret: string, claims: SyncClaims): string {
  const payload = Buffer.from(
    JSON.stringify({ u: claims.userId, o: claims.orgId, e: claims.exp }),
  ).toString('base64url')
  return `st1.${payload}.${hmacBase64url(secret, payload)}`
}

/** The token's claims, or undefined when it is malformed, forged or expired. */
export function verifySyncToken(
  secret: string,
  token: string,
  now = Date.now(),
): SyncClaims | undefined {
  const [version, payload, sig] = token.split('.')
  if (version !== 'st1' || !payload || !sig || !safeEqual(sig, hmacBase64url(secret, payload)))
    return undefined
  try {
    const data = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<
      string,
      unknown
    >
    const { u, o, e } = data
    if (typeof u !== 'string' || typeof o !== 'string' || typeof e !== 'number' || e <= now)
      return undefined
    return { userId: u, orgId: o, exp: e }
  } catch {
    return undefined
  }
}
