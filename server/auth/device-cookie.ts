import { hmacBase64url, randomToken, safeEqual } from './crypto.ts'

/**
 * The "device" cookie: proof that this browser signed in to an account before. Failed
 * sign-ins are throttled per account so that nobody can guess a password by spreading
 * guesses over many addresses, but then anyone can lock the owner out by failing on
 * purpose. A browser holding this cookie for the account is exempt from that budget (not
 * from its address's), so the owner's usual browser keeps signing in while someone
 * elsewhere hammers the account (OWASP's "device cookies").
 *
 * The value names no account: `v1.<issued>.<nonce>.<mac>`, where the MAC covers the
 * normalised e-mail it was issued for, so it only verifies for that account. One cookie
 * per browser: signing in to another account replaces it.
 */
export const DEVICE_COOKIE = 'cb_device'

/** How long a browser stays known after its last successful sign-in there. */
export const DEVICE_COOKIE_DAYS = 365

const LIFETIME_MS = DEVICE_COOKIE_DAYS * 86_400_000

const mac = (secret: string, account: string, issued: string, nonce: string) =>
  hmacBase64url(secret, `device.v1.${account}.${issued}.${nonce}`)

/** A fresh device cookie value for the account (a normalised e-mail), issued at `now`. */
export function signDevice(secret: string, account: string, now: number): string {
  const issued = Math.floor(now).toString(36)
  const nonce = randomToken(12)
  return `v1.${issued}.${nonce}.${mac(secret, account, issued, nonce)}`
}

/** Whether the cookie value was issued by this service for this account and has not expired. */
export function deviceKnown(
  secret: string,
  value: string | undefined,
  account: string,
  now: number,
): boolean {
  const parts = value?.split('.')
  if (parts?.length !== 4 || parts[0] !== 'v1') return false
  const [, issued = '', nonce = '', given = ''] = parts
  const at = Number.parseInt(issued, 36)
  // A minute of grace: another process, whose clock may run a little ahead, may have issued it.
  if (!Number.isFinite(at) || at > now + 60_000 || now - at > LIFETIME_MS) return false
  return safeEqual(given, mac(secret, account, issued, nonce))
}

/**
 * The Set-Cookie header: sent back only to the sign-in route (Path), never readable by
 * scripts (HttpOnly), never sent with another site's requests (SameSite=Strict).
 */
export function deviceCookie(value: string, secure: boolean): string {
  return `${DEVICE_COOKIE}=${value}; Path=/api/app/login; HttpOnly; SameSite=Strict; Max-Age=${DEVICE_COOKIE_DAYS * 86_400}${secure ? '; Secure' : ''}`
}
