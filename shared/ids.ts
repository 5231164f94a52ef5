/** A UUID in any case (ids are compared lower-cased). The one definition of the pattern. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function isUuid(v: unknown): v is string {
  return typeof v === 'string' && UUID_PATTERN.test(v)
}

/** A UUID as the server writes and indexes ids: lower-case. */
export function isCanonicalUuid(v: unknown): v is string {
  return isUuid(v) && v === v.toLowerCase()
}
