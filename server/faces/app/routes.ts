import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import * as Y from 'yjs'
import { z } from 'zod'
import type { Db } from '../../../persistence/types.ts'
import { boardDocName, boardMaps, readProject } from '../../../shared/board-doc.ts'
import * as body from '../../../shared/schemas/app.ts'
import { project } from '../../../shared/schemas/outputs.ts'
import { parseParams } from '../../actions/validation.ts'
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
} from '../../auth/accounts.ts'
import { createApiKey, listApiKeys, revokeApiKey } from '../../auth/api-keys.ts'
import { DEVICE_COOKIE, deviceCookie, deviceKnown, signDevice } from '../../auth/device-cookie.ts'
import { LoginThrottle, loginBudgets } from '../../auth/login-throttle.ts'
import { listGrants, revokeGrant } from '../../auth/oauth-grants.ts'
import { sharedSecret } from '../../auth/secrets.ts'
import {
  clearedSessionCookie,
  readCookie,
  requireMember,
  requireUser,
  SESSION_COOKIE,
  sessionCookie,
} from '../../auth/session.ts'
import { signSyncToken } from '../../auth/sync-tokens.ts'
import { seedBoard } from '../../board/seed-board.ts'
import { type Clock, systemClock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import { ApiError } from '../../errors.ts'
import { clientAddress } from '../../http/client-address.ts'
import { readJson, sendEmpty, sendJson } from '../../http/json.ts'
import { answer, type RouteDoc } from '../../http/route-docs.ts'
import type { Params, Router } from '../../http/router.ts'
import type { LiveDocs } from '../../live/live-docs.ts'

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

/** Answers of the routes below: records of shared/schemas/outputs.ts, wrapped as sent. */
const projectList = z.strictObject({ projects: z.array(project) })
const withProject = z.strictObject({ project })
const syncToken = z.strictObject({ token: z.string(), expiresAt: z.iso.datetime() })

type Handler = (req: IncomingMessage, res: ServerResponse, params: Params) => Promise<void>

/** The app API of docs/design.md Contract 2: sessions, organisations, keys, invites, projects, sync tokens. */
export function appRoutes(router: Router, deps: AppDeps): void {
  const { db, config } = deps
  const clock = deps.clock ?? systemClock
  const on = (method: string, path: string, doc: RouteDoc, handler: Handler) =>
    router.on(method, `/api/app${path}`, doc, handler)
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

  on(
    'POST',
    '/signup',
    {
      summary: 'Sign up: a new account, owner of a new organisation',
      access: 'public',
      body: body.signup,
      answers: [
        answer.json(
          201,
          '`{ user, organization }`, and the session cookie. The organisation starts with the columns Backlog, Ready, In progress, Done.',
        ),
      ],
      errors: { 409: 'The e-mail has an account already.' },
    },
    async (req, res) => {
      const input = await bodyOf(req, body.signup, 'signup')
      const { user, organization } = await signUp(db, { ...input, scryptN: config.scryptN })
      await seedBoard(deps.live, organization.id)
      const cookies = await signedIn(req, user.id, user.email)
      sendJson(res, 201, { user, organization }, { 'set-cookie': cookies })
    },
  )

  on(
    'POST',
    '/login',
    {
      summary: 'Log in',
      access: 'public',
      body: body.login,
      answers: [
        answer.json(
          200,
          '`{ user, organizations }`, and the session cookie (and the device cookie that exempts this browser from the per-account throttle).',
        ),
      ],
      errors: {
        401: 'Wrong email or password.',
        429: 'Too many failed log-ins from this address or for this account: `{ error, retryAfter }`.',
      },
    },
    async (req, res) => {
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
    },
  )

  on(
    'POST',
    '/logout',
    {
      summary: 'Log out',
      access: 'public',
      answers: [answer.noContent('The session, if any, ends and the cookie is cleared.')],
    },
    async (req, res) => {
      const token = readCookie(req, SESSION_COOKIE)
      if (token) await endSession(db, token)
      // Cleared with the attributes it was set with, Secure included.
      const secure = isSecure(req, config.publicUrl)
      sendEmpty(res, 204, { 'set-cookie': `${clearedSessionCookie()}${secure ? '; Secure' : ''}` })
    },
  )

  on(
    'GET',
    '/me',
    {
      summary: 'The signed-in person and their organisations',
      access: 'session',
      answers: [
        answer.json(200, '`{ user: { id, email, name }, organizations: [{ id, name, role }] }`.'),
      ],
    },
    async (req, res) => {
      const user = await requireUser(db, req)
      sendJson(res, 200, { user, organizations: await organizationsOf(db, user.id) })
    },
  )

  on(
    'GET',
    '/orgs/:orgId/members',
    {
      summary: "The organisation's members and open invites",
      access: 'member',
      answers: [
        answer.json(
          200,
          '`{ members: [{ id, email, name, role, joinedAt }], invites: [{ email, role, createdAt, expiresAt }] }`; invites is empty for a plain member.',
        ),
      ],
    },
    async (req, res, p) => {
      const user = await requireUser(db, req)
      const org = await requireMember(db, p.orgId as string, user)
      const [members, invites] = await Promise.all([
        listMembers(db, org.id),
        org.role === 'member' ? Promise.resolve([]) : listInvites(db, org.id),
      ])
      sendJson(res, 200, { members, invites })
    },
  )

  on(
    'POST',
    '/orgs/:orgId/api-keys',
    {
      summary: 'Make an API key for agents',
      access: 'owner-admin',
      body: body.createApiKey,
      answers: [
        answer.json(
          201,
          '`{ apiKey: { id, name, prefix, createdAt }, key }`: the key is shown here only.',
        ),
      ],
    },
    async (req, res, p) => {
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
    },
  )

  on(
    'GET',
    '/orgs/:orgId/api-keys',
    {
      summary: "The organisation's API keys, without secrets",
      access: 'owner-admin',
      answers: [
        answer.json(
          200,
          '`{ apiKeys: [{ id, name, prefix, createdAt, createdBy, lastUsedAt }] }`: unrevoked keys; lastUsedAt to the minute.',
        ),
      ],
    },
    async (req, res, p) => {
      const user = await requireUser(db, req)
      const org = await requireMember(db, p.orgId as string, user, ['owner', 'admin'])
      sendJson(res, 200, { apiKeys: await listApiKeys(db, org.id) })
    },
  )

  on(
    'DELETE',
    '/orgs/:orgId/api-keys/:keyId',
    {
      summary: 'Revoke an API key',
      access: 'owner-admin',
      answers: [
        answer.noContent('The key stops working at once; its live connections close everywhere.'),
      ],
      errors: { 404: 'No such API key.' },
    },
    async (req, res, p) => {
      const user = await requireUser(db, req)
      const org = await requireMember(db, p.orgId as string, user, ['owner', 'admin'])
      const keyId = (p.keyId as string).toLowerCase()
      if (!/^[0-9a-f-]{36}$/.test(keyId) || !(await revokeApiKey(db, org.id, keyId))) {
        throw new ApiError(404, 'No such API key')
      }
      deps.onKeyRevoked?.(keyId)
      sendEmpty(res)
    },
  )

  on(
    'GET',
    '/orgs/:orgId/connected-apps',
    {
      summary: 'Apps connected to /mcp by OAuth sign-in',
      access: 'owner-admin',
      answers: [
        answer.json(
          200,
          '`{ apps: [{ id, clientName, redirectHost, grantedByEmail, robotEmail, createdAt, lastUsedAt }] }`: live grants, oldest first; lastUsedAt to the minute.',
        ),
      ],
    },
    async (req, res, p) => {
      const user = await requireUser(db, req)
      const org = await requireMember(db, p.orgId as string, user, ['owner', 'admin'])
      sendJson(res, 200, { apps: await listGrants(db, org.id) })
    },
  )

  on(
    'DELETE',
    '/orgs/:orgId/connected-apps/:grantId',
    {
      summary: 'Disconnect an app (revoke its grant)',
      access: 'owner-admin',
      answers: [
        answer.noContent(
          'Its tokens stop working at once, also mid-request; its live connections close everywhere.',
        ),
      ],
      errors: { 404: 'No such connected app.' },
    },
    async (req, res, p) => {
      const user = await requireUser(db, req)
      const org = await requireMember(db, p.orgId as string, user, ['owner', 'admin'])
      const revoked = await revokeGrant(db, org.id, p.grantId as string)
      if (!revoked) throw new ApiError(404, 'No such connected app')
      deps.onKeyRevoked?.(revoked.keyId)
      sendEmpty(res)
    },
  )

  on(
    'POST',
    '/orgs/:orgId/invites',
    {
      summary: 'Invite someone by e-mail',
      access: 'owner-admin',
      body: body.createInvite,
      answers: [
        answer.json(201, '`{ invite: { token, email, role, expiresAt } }`, valid 14 days.'),
      ],
    },
    async (req, res, p) => {
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
    },
  )

  on(
    'POST',
    '/invites/:token/accept',
    {
      summary: 'Accept an invite as the signed-in person',
      description: 'An existing member keeps their role.',
      access: 'session',
      answers: [answer.json(200, '`{ organization: { id, name }, role }`.')],
      errors: {
        403: "The invite is for another e-mail address than the person's.",
        404: 'No such invite.',
        409: 'The invite was accepted already.',
        410: 'The invite has expired.',
      },
    },
    async (req, res, p) => {
      const user = await requireUser(db, req)
      const m = await acceptInvite(db, p.token as string, user)
      sendJson(res, 200, { organization: { id: m.id, name: m.name }, role: m.role })
    },
  )

  on(
    'GET',
    '/orgs/:orgId/projects',
    {
      summary: "The organisation's projects, oldest first",
      access: 'member',
      answers: [answer.json(200, 'The projects.', projectList)],
    },
    async (req, res, p) => {
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
    },
  )

  on(
    'POST',
    '/orgs/:orgId/projects',
    {
      summary: 'Make a project (agents only list them)',
      description: 'Without color, one of eight colours in turn.',
      access: 'member',
      body: body.createProject,
      answers: [answer.json(201, 'The new project.', withProject)],
    },
    async (req, res, p) => {
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
    },
  )

  on(
    'POST',
    '/orgs/:orgId/sync-token',
    {
      summary: 'A token for the live-sync connection (/sync) to the organisation',
      access: 'member',
      answers: [answer.json(200, 'The token and when it stops working.', syncToken)],
    },
    async (req, res, p) => {
      const user = await requireUser(db, req)
      const org = await requireMember(db, p.orgId as string, user)
      const exp = Date.now() + config.syncTokenTtlSeconds * 1000
      // The page opens the board next: its load overlaps the socket's opening.
      deps.live.warm(boardDocName(org.id))
      sendJson(res, 200, {
        token: signSyncToken(deps.syncSecret, { userId: user.id, orgId: org.id, exp }),
        expiresAt: new Date(exp).toISOString(),
      })
    },
  )
}
