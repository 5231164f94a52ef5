import { createHash } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Db } from '../../../persistence/types.ts'
import { isUuid } from '../../../shared/ids.ts'
import {
  createSession,
  logIn,
  membership,
  normaliseEmail,
  organizationsOf,
  type User,
} from '../../auth/accounts.ts'
import { hmacBase64url, randomToken, safeEqual, sha256Hex } from '../../auth/crypto.ts'
import { DEVICE_COOKIE, deviceCookie, deviceKnown, signDevice } from '../../auth/device-cookie.ts'
import { LoginThrottle, loginBudgets } from '../../auth/login-throttle.ts'
import { ClientDocs, isClientDocId } from '../../auth/oauth-client-docs.ts'
import { type ClientRow, checkClientMetadata } from '../../auth/oauth-client-metadata.ts'
import { createGrant, refreshGrant, revokeToken } from '../../auth/oauth-grants.ts'
import { sharedSecret } from '../../auth/secrets.ts'
import { readCookie, SESSION_COOKIE, sessionCookie } from '../../auth/session.ts'
import type { Clock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import { ApiError } from '../../errors.ts'
import { browserUsesHttps, clientAddress, type Reached } from '../../http/client-address.ts'
import { ownOrigin } from '../../http/cross-site.ts'
import { readBody, sendJson } from '../../http/json.ts'
import type { Router } from '../../http/router.ts'
import { AddressLimit } from '../../rate-limit/address-limit.ts'
import { consentPage, errorPage, signInPage } from './pages.ts'

/**
 * Corkboard as the OAuth 2.1 authorization server of its own /mcp, as the MCP
 * authorization specification describes: protected resource metadata (RFC 9728),
 * authorization server metadata (RFC 8414), dynamic registration of public clients
 * (RFC 7591), the authorization code with PKCE S256 and exact redirect URIs, the resource
 * indicator (RFC 8707: tokens are for /mcp only) and revocation (RFC 7009).
 *
 * The SDK's own server pieces are Express middleware, so the protocol lives here on our
 * router; the SDK's client metadata schema validates registrations.
 */

export const MCP_RESOURCE_PATH = '/mcp'
export const PROTECTED_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource/mcp'

/** An authorization code is good this long (RFC 6749 §4.1.2 recommends at most 10 minutes). */
const CODE_SECONDS = 300
const FORM_LIMIT = 16_384

export interface OAuthDeps {
  db: Db
  config: Config
  clock: Clock
  /** Called when a grant ends here (a replayed refresh token, a revoked refresh token). */
  onGrantRevoked?: (keyId: string) => void
  /** A certificate authority to trust beside the system's when fetching client metadata documents. */
  clientDocsCa?: string
}

/** The issuer: PUBLIC_URL's origin, or the request's own (as the cross-site check derives it). */
export function issuerOf(req: IncomingMessage, reached: Reached): string {
  const origin = ownOrigin(req, reached)
  if (!origin) throw new ApiError(400, 'The request has no usable Host header')
  return origin
}

/** The header a 401 on /mcp carries, pointing clients at the metadata (RFC 9728 §5.1). */
export function mcpChallenge(req: IncomingMessage, reached: Reached): string {
  const origin = ownOrigin(req, reached)
  return origin
    ? `Bearer resource_metadata="${origin}${PROTECTED_RESOURCE_METADATA_PATH}"`
    : 'Bearer'
}

class OAuthError extends Error {
  readonly status: number
  readonly code: string
  readonly headers: Record<string, string>
  constructor(status: number, code: string, description: string, headers = {}) {
    super(description)
    this.status = status
    this.code = code
    this.headers = headers
  }
}

function sendOAuthError(res: ServerResponse, error: OAuthError): void {
  sendJson(
    res,
    error.status,
    { error: error.code, error_description: error.message },
    { ...CORS, ...error.headers },
  )
}

/** Token-authenticated endpoints send no cookies, so any page may call them (browser-based MCP clients do). */
const CORS: Record<string, string> = {
  'access-control-allow-origin': '*',
  'access-control-allow-headers': 'authorization, content-type, mcp-protocol-version',
  'access-control-allow-methods': 'GET, POST, OPTIONS',
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const type = req.headers['content-type']?.split(';')[0]?.trim().toLowerCase()
  if (type !== 'application/x-www-form-urlencoded') {
    throw new OAuthError(
      400,
      'invalid_request',
      'Send the parameters as application/x-www-form-urlencoded',
    )
  }
  return new URLSearchParams((await readBody(req, FORM_LIMIT)).toString('utf8'))
}

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url')
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/
const CHALLENGE = /^[A-Za-z0-9\-_]{43}$/

/** An authorization request checked far enough to answer on its redirect URI. */
interface AuthorizeRequest {
  client: ClientRow
  redirectUri: string
  state: string | undefined
  codeChallenge: string
  resource: string
}

type Checked =
  | { type: 'ok'; request: AuthorizeRequest }
  /** Unknown client or unregistered redirect URI: shown, never redirected (RFC 6749 §4.1.2.1). */
  | { type: 'page'; message: string }
  | { type: 'redirect'; to: string }

function redirectWith(uri: string, params: Record<string, string | undefined>): string {
  const url = new URL(uri)
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v)
  return url.toString()
}

export function oauthRoutes(router: Router, deps: OAuthDeps): void {
  const { db, config, clock } = deps
  const throttle = new LoginThrottle(db, clock, loginBudgets(config))
  // Registration is open to anyone (RFC 7591): counted per address, or a script fills the table.
  const registrations = new AddressLimit(db, clock, {
    name: 'oauth-register:address',
    quota: config.oauthRegistrationsPerAddress,
    windowMs: config.oauthRegistrationWindowSeconds * 1000,
    what: 'client registrations',
  })
  const secret = (name: string) => {
    const cached = new Map<string, Promise<string>>()
    return () => {
      let s = cached.get(name)
      if (!s) {
        s = sharedSecret(db, name)
        s.catch(() => cached.delete(name))
        cached.set(name, s)
      }
      return s
    }
  }
  const clientDocs = new ClientDocs({
    clock,
    allowPrivate: config.oauthAllowPrivateClientDocs,
    ca: deps.clientDocsCa,
  })
  /** A registered client from its row, or one named by its metadata document's URL. */
  const findClient = async (
    clientId: string,
  ): Promise<{ type: 'ok'; client: ClientRow } | { type: 'refused'; message: string }> => {
    if (isClientDocId(clientId)) return clientDocs.resolve(clientId)
    const [client] = clientId
      ? await db.query<ClientRow>(
          'select id, name, redirect_uris from oauth_clients where id = $1',
          [clientId],
        )
      : []
    return client
      ? { type: 'ok', client }
      : { type: 'refused', message: `Unknown client_id "${clientId}".` }
  }
  const consentSecret = secret('oauth-consent')
  const deviceSecret = secret('login-device')
  const resourceOf = (req: IncomingMessage) => `${issuerOf(req, config)}${MCP_RESOURCE_PATH}`

  const preflight = async (_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(204, { ...CORS, 'access-control-max-age': '600' })
    res.end()
  }
  const metadata = (path: string, build: (req: IncomingMessage) => Record<string, unknown>) => {
    router.on('GET', path, async (req, res) => sendJson(res, 200, build(req), CORS))
    router.on('OPTIONS', path, preflight)
  }

  const protectedResource = (req: IncomingMessage) => ({
    resource: resourceOf(req),
    authorization_servers: [issuerOf(req, config)],
    bearer_methods_supported: ['header'],
    resource_name: 'Corkboard',
    resource_documentation: 'https://github.com/corkboard/corkboard/blob/main/docs/mcp.md',
  })
  metadata(PROTECTED_RESOURCE_METADATA_PATH, protectedResource)
  // Clients that probe the root form first (RFC 9728 §3.1 lets a resource have either).
  metadata('/.well-known/oauth-protected-resource', protectedResource)
  metadata('/.well-known/oauth-authorization-server', (req) => {
    const issuer = issuerOf(req, config)
    return {
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      registration_endpoint: `${issuer}/oauth/register`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['none'],
      revocation_endpoint_auth_methods_supported: ['none'],
      client_id_metadata_document_supported: true,
      service_documentation: 'https://github.com/corkboard/corkboard/blob/main/docs/mcp.md',
    }
  })

  const oauthEndpoint = (
    path: string,
    handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  ) => {
    router.on('POST', path, async (req, res) => {
      try {
        await handler(req, res)
      } catch (error) {
        if (error instanceof OAuthError) return sendOAuthError(res, error)
        throw error
      }
    })
    router.on('OPTIONS', path, preflight)
  }

  oauthEndpoint('/oauth/register', async (req, res) => {
    try {
      await registrations.charge(clientAddress(req, config.trustProxy))
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 429) throw error
      // RFC 7591 names no code for it; RFC 6585's status and Retry-After say it all.
      throw new OAuthError(429, 'too_many_requests', error.message, error.headers)
    }
    let raw: unknown
    try {
      raw = JSON.parse((await readBody(req, FORM_LIMIT)).toString('utf8'))
    } catch {
      throw new OAuthError(400, 'invalid_client_metadata', 'The body must be a JSON object')
    }
    const checked = checkClientMetadata(raw)
    if (checked.type === 'refused') throw new OAuthError(400, checked.code, checked.message)
    const { redirectUris: uris, grantTypes } = checked
    const name = checked.name || 'An MCP client'
    const id = randomToken(24)
    const [row] = await db.query<{ created_at: Date }>(
      'insert into oauth_clients (id, name, redirect_uris) values ($1, $2, $3) returning created_at',
      [id, name, uris],
    )
    sendJson(
      res,
      201,
      {
        client_id: id,
        client_id_issued_at: Math.floor((row?.created_at ?? new Date()).getTime() / 1000),
        client_name: name,
        redirect_uris: uris,
        grant_types: grantTypes,
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      CORS,
    )
  })

  /** Checks an authorization request's parameters (from the query or the consent form). */
  const checkAuthorize = async (
    req: IncomingMessage,
    params: URLSearchParams,
  ): Promise<Checked> => {
    const found = await findClient(params.get('client_id') ?? '')
    if (found.type === 'refused') return { type: 'page', message: found.message }
    const { client } = found
    const redirectUri = params.get('redirect_uri') ?? ''
    // Exact string match against what the client registered, nothing looser.
    if (!client.redirect_uris.includes(redirectUri)) {
      return {
        type: 'page',
        message: `The redirect URI "${redirectUri}" is not one this client registered.`,
      }
    }
    const state = params.get('state') ?? undefined
    const fail = (description: string, error = 'invalid_request'): Checked => ({
      type: 'redirect',
      to: redirectWith(redirectUri, { error, error_description: description, state }),
    })
    if (params.get('response_type') !== 'code') {
      return fail('response_type must be code', 'unsupported_response_type')
    }
    const codeChallenge = params.get('code_challenge') ?? ''
    if (params.get('code_challenge_method') !== 'S256' || !CHALLENGE.test(codeChallenge)) {
      return fail('PKCE is required: code_challenge with code_challenge_method S256')
    }
    const resource = resourceOf(req)
    const asked = params.get('resource')
    if (asked !== null && asked !== resource && asked !== `${resource}/`) {
      return fail(`resource must be ${resource}, the only resource here`, 'invalid_target')
    }
    return { type: 'ok', request: { client, redirectUri, state, codeChallenge, resource } }
  }

  const signedInUser = async (req: IncomingMessage) => {
    const token = readCookie(req, SESSION_COOKIE)
    if (!token) return undefined
    const [user] = await db.query<{ id: string; email: string; name: string }>(
      `select u.id, u.email, u.name from sessions s join users u on u.id = s.user_id
        where s.token_hash = $1 and s.expires_at > now()`,
      [sha256Hex(token)],
    )
    return user ? { user, sessionHash: sha256Hex(token) } : undefined
  }
  /** The consent form's own token, bound to the session that saw the form. */
  const consentToken = async (sessionHash: string) =>
    hmacBase64url(await consentSecret(), `consent:${sessionHash}`)

  /**
   * A form post must come from this service's own page: refused when the browser says it
   * comes from another site or origin (a form post from a page elsewhere carries Origin).
   */
  const refuseForeignForm = (req: IncomingMessage) => {
    const site = req.headers['sec-fetch-site']?.toString()
    if (site === 'cross-site' || site === 'same-site') {
      throw new ApiError(
        403,
        `Refused a ${site} form post: sign-in forms only take posts from this service's own pages`,
      )
    }
    const origin = req.headers.origin
    if (origin !== undefined && origin !== ownOrigin(req, config)) {
      throw new ApiError(
        403,
        `Refused a form post from origin ${origin}: sign-in forms only take posts from this service's own pages`,
      )
    }
  }

  const showAuthorize = async (req: IncomingMessage, res: ServerResponse, query: string) => {
    const params = new URLSearchParams(query)
    const checked = await checkAuthorize(req, params)
    if (checked.type === 'page') return errorPage(res, 400, checked.message)
    if (checked.type === 'redirect') {
      res.writeHead(303, { location: checked.to, 'cache-control': 'no-store' })
      res.end()
      return
    }
    const { client, redirectUri } = checked.request
    const session = await signedInUser(req)
    if (!session) {
      return signInPage(res, { returnTo: `/oauth/authorize?${query}`, clientName: client.name })
    }
    const organizations = await organizationsOf(db, session.user.id)
    if (organizations.length === 0) {
      return errorPage(res, 403, `${session.user.email} belongs to no organisation to connect.`)
    }
    const fields: Record<string, string> = { csrf: await consentToken(session.sessionHash) }
    for (const name of [
      'client_id',
      'redirect_uri',
      'response_type',
      'code_challenge',
      'code_challenge_method',
      'state',
      'resource',
      'scope',
    ]) {
      const value = params.get(name)
      if (value !== null) fields[name] = value
    }
    consentPage(res, {
      clientName: client.name,
      redirectHost: new URL(redirectUri).host,
      email: session.user.email,
      organizations,
      fields,
    })
  }

  router.on('GET', '/oauth/authorize', async (req, res) => {
    await showAuthorize(req, res, new URL(req.url ?? '/', 'http://localhost').search.slice(1))
  })

  router.on('POST', '/oauth/authorize', async (req, res) => {
    refuseForeignForm(req)
    const form = await readForm(req).catch(() => {
      throw new ApiError(415, 'Send the consent form as application/x-www-form-urlencoded')
    })
    const session = await signedInUser(req)
    if (!session) throw new ApiError(401, 'Not signed in: open the sign-in link again')
    const csrf = form.get('csrf') ?? ''
    if (!safeEqual(csrf, await consentToken(session.sessionHash))) {
      throw new ApiError(
        403,
        'The consent form is missing its token or was made for another session',
      )
    }
    const checked = await checkAuthorize(req, form)
    if (checked.type === 'page') return errorPage(res, 400, checked.message)
    if (checked.type === 'redirect') {
      res.writeHead(303, { location: checked.to })
      res.end()
      return
    }
    const { client, redirectUri, state, codeChallenge, resource } = checked.request
    if (form.get('decision') !== 'approve') {
      res.writeHead(303, {
        location: redirectWith(redirectUri, {
          error: 'access_denied',
          error_description: 'The person denied the request',
          state,
        }),
      })
      res.end()
      return
    }
    const orgId = (form.get('org_id') ?? '').toLowerCase()
    const member = isUuid(orgId) ? await membership(db, orgId, session.user.id) : undefined
    if (!member) throw new ApiError(403, 'You are not a member of that organisation')
    if (isClientDocId(client.id)) {
      // Codes and grants name their client by row: a document's client gets one, keyed by
      // its URL, refreshed from the document at each approval (the sweep removes it once
      // nothing uses it).
      await db.query(
        `insert into oauth_clients (id, name, redirect_uris) values ($1, $2, $3)
         on conflict (id) do update set name = excluded.name, redirect_uris = excluded.redirect_uris`,
        [client.id, client.name, client.redirect_uris],
      )
    }
    const code = randomToken(32)
    await db.query(
      `insert into oauth_codes (code_hash, client_id, org_id, user_id, redirect_uri, code_challenge, resource, expires_at)
       values ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))`,
      [
        sha256Hex(code),
        client.id,
        orgId,
        session.user.id,
        redirectUri,
        codeChallenge,
        resource,
        CODE_SECONDS,
      ],
    )
    res.writeHead(303, { location: redirectWith(redirectUri, { code, state }) })
    res.end()
  })

  router.on('POST', '/oauth/sign-in', async (req, res) => {
    refuseForeignForm(req)
    const form = await readForm(req).catch(() => {
      throw new ApiError(415, 'Send the sign-in form as application/x-www-form-urlencoded')
    })
    const returnTo = form.get('return') ?? ''
    // Only back to an authorization request here: never an open redirect.
    if (!returnTo.startsWith('/oauth/authorize?')) {
      throw new ApiError(400, 'return must be an /oauth/authorize address')
    }
    const email = form.get('email') ?? ''
    const account = normaliseEmail(email)
    const secure = browserUsesHttps(req, config)
    let device: string | undefined
    try {
      device = readCookie(req, DEVICE_COOKIE)
    } catch {
      device = undefined
    }
    let user: User
    try {
      user = await throttle.attempt(
        {
          account,
          address: clientAddress(req, config.trustProxy),
          knownDevice: deviceKnown(await deviceSecret(), device, account, clock.now()),
        },
        () => logIn(db, email, form.get('password') ?? ''),
      )
    } catch (error) {
      if (!(error instanceof ApiError) || (error.status !== 401 && error.status !== 429)) {
        throw error
      }
      const query = new URLSearchParams(returnTo.slice('/oauth/authorize?'.length))
      const found = await findClient(query.get('client_id') ?? '')
      const client = found.type === 'ok' ? found.client : undefined
      if (error.headers) for (const [k, v] of Object.entries(error.headers)) res.setHeader(k, v)
      return signInPage(res, {
        returnTo,
        clientName: client?.name ?? 'an app',
        error: error.message,
        status: error.status,
        email,
      })
    }
    const session = await createSession(db, user.id, config.sessionTtlDays)
    res.writeHead(303, {
      location: returnTo,
      'set-cookie': [
        sessionCookie(session.token, session.expiresAt, secure),
        deviceCookie(signDevice(await deviceSecret(), user.email, clock.now()), secure),
      ],
    })
    res.end()
  })

  oauthEndpoint('/oauth/token', async (req, res) => {
    const form = await readForm(req)
    const clientId = form.get('client_id') ?? ''
    if (!clientId) throw new OAuthError(401, 'invalid_client', 'client_id is required')
    const grantType = form.get('grant_type')
    const resource = resourceOf(req)
    const asked = form.get('resource')
    if (asked !== null && asked !== resource && asked !== `${resource}/`) {
      throw new OAuthError(400, 'invalid_target', `resource must be ${resource}`)
    }
    if (grantType === 'authorization_code') {
      if (isClientDocId(clientId)) {
        // Still the document the person approved (cached since then, so not fetched again).
        const found = await clientDocs.resolve(clientId)
        if (found.type === 'refused') throw new OAuthError(401, 'invalid_client', found.message)
      }
      const code = form.get('code') ?? ''
      // Taken by deleting: a code is spent by its first use, whatever that use's outcome.
      const [row] = await db.query<{
        client_id: string
        org_id: string
        user_id: string
        redirect_uri: string
        code_challenge: string
        resource: string
        live: boolean
      }>(
        `delete from oauth_codes where code_hash = $1
         returning client_id, org_id, user_id, redirect_uri, code_challenge, resource,
                   expires_at > now() as live`,
        [sha256Hex(code)],
      )
      if (!row?.live || row.client_id !== clientId) {
        throw new OAuthError(
          400,
          'invalid_grant',
          'The code is unknown, spent, expired or another client’s',
        )
      }
      if (form.get('redirect_uri') !== row.redirect_uri) {
        throw new OAuthError(
          400,
          'invalid_grant',
          'redirect_uri differs from the authorization request’s',
        )
      }
      const verifier = form.get('code_verifier') ?? ''
      if (!VERIFIER.test(verifier) || !safeEqual(s256(verifier), row.code_challenge)) {
        throw new OAuthError(
          400,
          'invalid_grant',
          'code_verifier does not match the code_challenge',
        )
      }
      const [granted] = await db.query<{ client_name: string; email: string; member: boolean }>(
        `select c.name as client_name, u.email,
                exists (select 1 from memberships m where m.org_id = $3 and m.user_id = u.id) as member
           from oauth_clients c, users u where c.id = $1 and u.id = $2`,
        [clientId, row.user_id, row.org_id],
      )
      if (!granted?.member) {
        throw new OAuthError(400, 'invalid_grant', 'The person who approved is no longer a member')
      }
      const tokens = await createGrant(db, {
        orgId: row.org_id,
        clientId,
        clientName: granted.client_name,
        userId: row.user_id,
        userEmail: granted.email,
        redirectUri: row.redirect_uri,
        resource: row.resource,
        publicUrl: config.publicUrl,
      })
      return sendJson(res, 200, tokens, { ...CORS, pragma: 'no-cache' })
    }
    if (grantType === 'refresh_token') {
      const outcome = await refreshGrant(db, form.get('refresh_token') ?? '', clientId)
      switch (outcome.type) {
        case 'issued':
          return sendJson(res, 200, outcome.tokens, { ...CORS, pragma: 'no-cache' })
        case 'replayed':
          if (outcome.keyId) deps.onGrantRevoked?.(outcome.keyId)
          throw new OAuthError(
            400,
            'invalid_grant',
            'The refresh token was used before: the grant is revoked, sign in again',
          )
        case 'invalid':
          throw new OAuthError(
            400,
            'invalid_grant',
            'The refresh token is unknown, expired, revoked or another client’s',
          )
        default:
          throw new Error(`unknown refresh outcome ${outcome satisfies never}`)
      }
    }
    throw new OAuthError(
      400,
      'unsupported_grant_type',
      'grant_type must be authorization_code or refresh_token',
    )
  })

  oauthEndpoint('/oauth/revoke', async (req, res) => {
    const form = await readForm(req)
    const token = form.get('token')
    if (!token) throw new OAuthError(400, 'invalid_request', 'token is required')
    const revoked = await revokeToken(db, token, form.get('client_id') ?? undefined)
    if (revoked) deps.onGrantRevoked?.(revoked.keyId)
    // RFC 7009 §2.2: the same answer whether or not the token was known.
    sendJson(res, 200, {}, CORS)
  })
}
