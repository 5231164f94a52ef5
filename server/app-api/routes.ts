import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import * as Y from 'yjs'
import type { z } from 'zod'
import type { Db } from '../../persistence/db.ts'
import { boardDocName, boardMaps, readProject } from '../../shared/board-doc.ts'
import * as body from '../../shared/schemas/app.ts'
import {
  acceptInvite,
  createInvite,
  createSession,
  endSession,
  listInvites,
  listMembers,
  logIn,
  normaliseEmail,
  organizationsOf,
  signUp,
} from '../accounts.ts'
import { type Clock, systemClock } from '../agent/context.ts'
import { parseParams } from '../agent/validation.ts'
import { ApiError } from '../api-error.ts'
import { createApiKey, listApiKeys, revokeApiKey } from '../auth/api-keys.ts'
import { DEVICE_COOKIE, deviceCookie, deviceKnown, signDevice } from '../auth/device-cookie.ts'
import { LoginThrottle, loginBudgets } from '../auth/login-throttle.ts'
import { sharedSecret } from '../auth/secrets.ts'
import { signSyncToken } from '../auth/sync-tokens.ts'
import type { Config } from '../config.ts'
import { clientAddress } from '../http/client-address.ts'
import { readJson, sendEmpty, sendJson } from '../http/json.ts'
import type { Params, Router } from '../http/router.ts'
import type { LiveDocs } from '../live/live-docs.ts'
import { seedBoard } from './seed-board.ts'
import {
  clearedSessionCookie,
  readCookie,
  requireMember,
  requireUser,
  SESSION_COOKIE,
  sessionCookie,
} from './session.ts'

export interface AppDeps {
  db: Db
  live: LiveDocs
  config: Config
  syncSecret: string
  /** The time of sign-in throttling and device cookies (tests move it); the system's by default. */
  clock?: Clock
  /** Called when a key is revoked, so its live connections can be closed. */
  onKeyRevoked?: (keyId: string) => void
}

const PROJECT_COLORS = [
  '#3b82f6',
  '#10b981',
  '#f59e0b',
  '#ef4444',
  '#8b5cf6',
  '#ec4899',
  '#14b8a6',
  '#64748b',
]

async function bodyOf<S extends z.ZodType>(
  req: IncomingMessage,
  schema: S,
  what: string,
): Promise<z.output<S>> {
  return parseParams(what, schema, (await readJson(req)) ?? {})
}

/**
 * Whether the browser reaches the service over https, so its cookies must be Secure: the
 * service itself may speak plain HTTP behind a TLS proxy, which says so in
 * X-Forwarded-Proto, or the operator says so in PUBLIC_URL.
 */
function isSecure(req: IncomingMessage, publicUrl: string | undefined): boolean {
  // A chain of proxies lists one scheme each; the first is the one the browser used.
  const forwarded = req.headers['x-forwarded-proto']?.toString().split(',')[0]?.trim()
  return forwarded === 'https' || publicUrl?.startsWith('https:') === true
}

/**
 * The device cookie's value, or undefined when the browser sent none or a mangled one: a
 * cookie the service cannot read proves nothing, and must not turn a sign-in into a 500.
 */
function deviceCookieOf(req: IncomingMessage): string | undefined {
  try {
    return readCookie(req, DEVICE_COOKIE)
  } catch {
    return undefined
  }
}

type Handler = (req: IncomingMessage, res: ServerResponse, params: Params) => Promise<void>

/** The app API of docs/design.md Contract 2: sessions, organisations, keys, invites, projects, sync tokens. */
export function appRoutes(router: Router, deps: AppDeps): void {
  const { db, config } = deps
  const clock = deps.clock ?? systemClock
  const on = (method: string, path: string, handler: Handler) =>
    router.on(method, `/api/app${path}`, handler)
  const throttle = new LoginThrottle(db, clock, loginBudgets(config))
  let deviceSecret: Promise<string> | undefined
  const deviceKey = () => {
    deviceSecret ??= sharedSecret(db, 'login-device')
    deviceSecret.catch(() => {
      deviceSecret = undefined
    })
    return deviceSecret
  }
  /** The session cookie, and the device cookie that marks this browser as known to the account. */
  const signedIn = async (req: IncomingMessage, userId: string, email: string) => {
    const session = await createSession(db, userId, config.sessionTtlDays)
    const secure = isSecure(req, config.publicUrl)
    return [
      sessionCookie(session.token, session.expiresAt, secure),
      deviceCookie(signDevice(await deviceKey(), email, clock.now()), secure),
    ]
  }

  on('POST', '/signup', async (req, res) => {
    const input = await bodyOf(req, body.signup, 'signup')
    const { user, organization } = await signUp(db, { ...input, scryptN: config.scryptN })
    await seedBoard(deps.live, organization.id)
    const cookies = await signedIn(req, user.id, user.email)
    sendJson(res, 201, { user, organization }, { 'set-cookie': cookies })
  })

  on('POST', '/login', async (req, res) => {
    const input = await bodyOf(req, body.login, 'login')
    const account = normaliseEmail(input.email)
    const knownDevice = deviceKnown(await deviceKey(), deviceCookieOf(req), account, clock.now())
    const user = await throttle.attempt(
      { account, address: clientAddress(req, config.trustProxy), knownDevice },
      () => logIn(db, input.email, input.password),
    )
    const cookies = await signedIn(req, user.id, user.email)
    sendJson(
      res,
      200,
      { user, organizations: await organizationsOf(db, user.id) },
      { 'set-cookie': cookies },
    )
  })

  on('POST', '/logout', async (req, res) => {
    const token = readCookie(req, SESSION_COOKIE)
    if (token) await endSession(db, token)
    // Cleared with the attributes it was set with, Secure included.
    const secure = isSecure(req, config.publicUrl)
    sendEmpty(res, 204, { 'set-cookie': `${clearedSessionCookie()}${secure ? '; Secure' : ''}` })
  })

  on('GET', '/me', async (req, res) => {
    const user = await requireUser(db, req)
    sendJson(res, 200, { user, organizations: await organizationsOf(db, user.id) })
  })

  on('GET', '/orgs/:orgId/members', async (req, res, p) => {
    const user = await requireUser(db, req)
    const org = await requireMember(db, p.orgId as string, user)
    const [members, invites] = await Promise.all([
      listMembers(db, org.id),
      org.role === 'member' ? Promise.resolve([]) : listInvites(db, org.id),
    ])
    sendJson(res, 200, { members, invites })
  })

  on('POST', '/orgs/:orgId/api-keys', async (req, res, p) => {
    const user = await requireUser(db, req)
    const org = await requireMember(db, p.orgId as string, user, ['owner', 'admin'])
    const input = await bodyOf(req, body.createApiKey, 'create API key')
    const created = await createApiKey(db, {
      orgId: org.id,
      name: input.name,
      createdBy: user.id,
      publicUrl: config.publicUrl,
    })
    sendJson(res, 201, created)
  })

  on('GET', '/orgs/:orgId/api-keys', async (req, res, p) => {
    const user = await requireUser(db, req)
    const org = await requireMember(db, p.orgId as string, user, ['owner', 'admin'])
    sendJson(res, 200, { apiKeys: await listApiKeys(db, org.id) })
  })

  on('DELETE', '/orgs/:orgId/api-keys/:keyId', async (req, res, p) => {
    const user = await requireUser(db, req)
    const org = await requireMember(db, p.orgId as string, user, ['owner', 'admin'])
    const keyId = (p.keyId as string).toLowerCase()
    if (!/^[0-9a-f-]{36}$/.test(keyId) || !(await revokeApiKey(db, org.id, keyId))) {
      throw new ApiError(404, 'No such API key')
    }
    deps.onKeyRevoked?.(keyId)
    sendEmpty(res)
  })

  on('POST', '/orgs/:orgId/invites', async (req, res, p) => {
    const user = await requireUser(db, req)
    const org = await requireMember(db, p.orgId as string, user, ['owner', 'admin'])
    const input = await bodyOf(req, body.createInvite, 'invite')
    const invite = await createInvite(db, {
      orgId: org.id,
      email: input.email,
      role: input.role,
      createdBy: user.id,
    })
    sendJson(res, 201, { invite })
  })

  on('POST', '/invites/:token/accept', async (req, res, p) => {
    const user = await requireUser(db, req)
    const m = await acceptInvite(db, p.token as string, user)
    sendJson(res, 200, { organization: { id: m.id, name: m.name }, role: m.role })
  })

  on('GET', '/orgs/:orgId/projects', async (req, res, p) => {
    const user = await requireUser(db, req)
    const org = await requireMember(db, p.orgId as string, user)
    const projects = await deps.live.read(boardDocName(org.id), (doc) => {
      const out: ReturnType<typeof readProject>[] = []
      boardMaps(doc).projects.forEach((m, id) => {
        out.push(readProject(id, m))
      })
      return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt))
    })
    sendJson(res, 200, { projects })
  })

  on('POST', '/orgs/:orgId/projects', async (req, res, p) => {
    const user = await requireUser(db, req)
    const org = await requireMember(db, p.orgId as string, user)
    const input = await bodyOf(req, body.createProject, 'create project')
    const id = randomUUID()
    const project = await deps.live.write(
      boardDocName(org.id),
      { type: 'person', orgId: org.id, userId: user.id, email: user.email },
      async (w) => {
        const color =
          input.color ?? PROJECT_COLORS[boardMaps(w.doc).projects.size % PROJECT_COLORS.length]
        w.mutate((doc) => {
          const m = new Y.Map<unknown>()
          m.set('name', input.name)
          m.set('color', color)
          m.set('createdAt', w.now)
          boardMaps(doc).projects.set(id, m)
        })
        return readProject(id, boardMaps(w.doc).projects.get(id) as Y.Map<unknown>)
      },
    )
    sendJson(res, 201, { project })
  })

  on('POST', '/orgs/:orgId/sync-token', async (req, res, p) => {
    const user = await requireUser(db, req)
    const org = await requireMember(db, p.orgId as string, user)
    const exp = Date.now() + config.syncTokenTtlSeconds * 1000
    sendJson(res, 200, {
      token: signSyncToken(deps.syncSecret, { userId: user.id, orgId: org.id, exp }),
      expiresAt: new Date(exp).toISOString(),
    })
  })
}
