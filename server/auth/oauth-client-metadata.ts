import { OAuthClientMetadataSchema } from '@modelcontextprotocol/sdk/shared/auth.js'

/**
 * What a client says about itself, checked one way whether it arrives as a registration
 * (RFC 7591) or as a client ID metadata document: public clients only, redirect URIs that
 * are https or loopback http, the authorization code and refresh token grants.
 */

const MAX_REDIRECT_URIS = 10
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/** A client as the authorization endpoint sees it. */
export type ClientRow = {
  id: string
  name: string
  redirect_uris: string[]
}

export type MetadataCheck =
  | {
      type: 'ok'
      /** `client_name`, trimmed; empty when the client gave none. */
      name: string
      redirectUris: string[]
      grantTypes: string[]
    }
  | { type: 'refused'; code: 'invalid_client_metadata' | 'invalid_redirect_uri'; message: string }

/** A redirect URI a public client may use: https, or http to a loopback host (RFC 8252 §7.3). */
export function redirectProblem(uri: string): string | undefined {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return `redirect URI ${uri} is not an absolute URL`
  }
  if (url.hash) return `redirect URI ${uri} must not have a fragment`
  if (url.username || url.password) return `redirect URI ${uri} must not carry credentials`
  if (url.protocol === 'https:') return undefined
  if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return undefined
  return `redirect URI ${uri} must be https, or http to localhost, 127.0.0.1 or [::1]`
}

/** Checks client metadata (already parsed JSON) against what this server supports. */
export function checkClientMetadata(raw: unknown): MetadataCheck {
  const refused = (
    message: string,
    code: 'invalid_client_metadata' | 'invalid_redirect_uri' = 'invalid_client_metadata',
  ): MetadataCheck => ({ type: 'refused', code, message })
  const parsed = OAuthClientMetadataSchema.safeParse(raw)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    return refused(`${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`)
  }
  const meta = parsed.data
  const uris = meta.redirect_uris
  if (uris.length === 0 || uris.length > MAX_REDIRECT_URIS) {
    return refused(`redirect_uris must list 1 to ${MAX_REDIRECT_URIS} URIs`, 'invalid_redirect_uri')
  }
  for (const uri of uris) {
    const problem = redirectProblem(uri)
    if (problem) return refused(problem, 'invalid_redirect_uri')
  }
  const method = meta.token_endpoint_auth_method ?? 'none'
  if (method !== 'none') {
    return refused(
      `token_endpoint_auth_method ${method} is not supported: clients here are public (none), with PKCE`,
    )
  }
  const grantTypes = meta.grant_types ?? ['authorization_code', 'refresh_token']
  const unsupported = grantTypes.filter((g) => g !== 'authorization_code' && g !== 'refresh_token')
  if (unsupported.length > 0) {
    return refused(
      `grant_types ${unsupported.join(', ')} not supported: authorization_code and refresh_token are`,
    )
  }
  if (meta.response_types?.some((t) => t !== 'code')) {
    return refused('response_types may only be code')
  }
  return {
    type: 'ok',
    name: (meta.client_name ?? '').trim().slice(0, 100),
    redirectUris: uris,
    grantTypes,
  }
}
