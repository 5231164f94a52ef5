import { createHmac, randomBytes } from 'node:crypto'

const SECRET_PREFIX = 'whsec_'

/** A new endpoint secret: `whsec_` + base64 of 32 random bytes (docs/design.md). */
export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(32).toString('base64')}`
}

/**
 * The secrets that sign a delivery, newest first: the current one, and the one a rotation
 * replaced while its window lasts (read just before each attempt is sent).
 */
export function validSecrets(
  secret: string,
  previous: string | null,
): readonly [string, ...string[]] {
  return previous ? [secret, previous] : [secret]
}

/**
 * The headers that let a receiver check a delivery:
 * - `X-Service-Signature: v1=<hex HMAC-SHA256>` keyed with the whole secret string as
 *   shown (UTF-8, `whsec_` included) over `<timestamp>.<body>`;
 * - the Standard Webhooks trio, whose key is the base64-decoded part after `whsec_` and
 *   whose signed content is `<webhook-id>.<timestamp>.<body>`, so off-the-shelf
 *   libraries (`standardwebhooks`, Svix) verify it unchanged.
 * `secrets` are the endpoint's valid secrets, newest first (two during a rotation): each
 * header then lists one signature per secret, space-separated, in that order, as the
 * Standard Webhooks specification defines for `webhook-signature`.
 * `deliveryId` is the same on every retry; `timestamp` (Unix seconds) is the attempt's.
 */
export function signatureHeaders(
  secrets: readonly [string, ...string[]],
  deliveryId: string,
  timestamp: number,
  body: string,
): Record<string, string> {
  const ts = String(timestamp)
  const service = secrets.map(
    (secret) => `v1=${createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex')}`,
  )
  const standard = secrets.map((secret) => {
    const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')
    return `v1,${createHmac('sha256', key).update(`${deliveryId}.${ts}.${body}`).digest('base64')}`
  })
  return {
    'x-service-signature': service.join(' '),
    'x-service-delivery': deliveryId,
    'x-service-timestamp': ts,
    'webhook-id': deliveryId,
    'webhook-timestamp': ts,
    'webhook-signature': standard.join(' '),
  }
}
