import type { Db } from '../../persistence/types.ts'
import { hmacBase64url, safeEqual } from '../auth/crypto.ts'
import { sharedSecret } from '../auth/secrets.ts'
import type { Config } from '../config.ts'

/** How long a screenshot link works (docs/design.md: signed links valid for 10 minutes). */
export const LINK_TTL_SECONDS = 600

const secrets = new WeakMap<Db, Promise<string>>()

/** The file-link signing secret every server process shares (made once, kept in Postgres). */
export function fileLinkSecret(db: Db): Promise<string> {
  let secret = secrets.get(db)
  if (!secret) {
    secret = sharedSecret(db, 'file-links')
    secret.catch(() => secrets.delete(db))
    secrets.set(db, secret)
  }
  return secret
}

/** What a link's signature covers: the organisation, the file and the expiry. */
function signed(orgId: string, fileId: string, expires: number): string {
  return `v1.${orgId}.${fileId}.${expires}`
}

/** A URL path made absolute against PUBLIC_URL when it is set, root-relative otherwise. */
export function absoluteUrl(config: Pick<Config, 'publicUrl'>, path: string): string {
  return config.publicUrl ? `${config.publicUrl.replace(/\/+$/, '')}${path}` : path
}

/** A node image's permanent public path. */
export function publicFilePath(orgId: string, fileId: string, extension: string): string {
  return `/files/public/${orgId}/${fileId}.${extension}`
}

export interface SignedLink {
  url: string
  expiresAt: string
}

/**
 * A link to a private file valid for LINK_TTL_SECONDS. The file name in the path is only
 * a label for downloads; the signature binds the organisation, the file and the expiry,
 * so a link cannot be turned to another file or organisation, nor extended.
 */
export function signFileLink(
  secret: string,
  config: Pick<Config, 'publicUrl'>,
  file: { orgId: string; id: string; filename: string },
  now = Date.now(),
): SignedLink {
  const expires = Math.floor(now / 1000) + LINK_TTL_SECONDS
  const sig = hmacBase64url(secret, signed(file.orgId, file.id, expires))
  const path = `/files/private/${file.orgId}/${file.id}/${encodeURIComponent(file.filename)}?expires=${expires}&sig=${sig}`
  return { url: absoluteUrl(config, path), expiresAt: new Date(expires * 1000).toISOString() }
}

export type LinkCheck = 'ok' | 'expired' | 'invalid'

export function checkFileLink(
  secret: string,
  orgId: string,
  fileId: string,
  expires: string | null,
  sig: string | null,
  now = Date.now(),
): LinkCheck {
  if (!expires || !sig || !/^\d{1,12}$/.test(expires)) return 'invalid'
  const at = Number(expires)
  if (!safeEqual(sig, hmacBase64url(secret, signed(orgId, fileId, at)))) return 'invalid'
  // A valid signature over a far-future expiry cannot exist: the server never makes one.
  return at * 1000 <= now ? 'expired' : 'ok'
}
