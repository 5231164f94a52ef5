import type { IncomingMessage } from 'node:http'
import * as body from '../../../shared/schemas/app.ts'
import {
  createSession,
  endSession,
  logIn,
  normaliseEmail,
  organizationsOf,
  signUp,
} from '../../auth/accounts.ts'
import { DEVICE_COOKIE, deviceCookie, deviceKnown, signDevice } from '../../auth/device-cookie.ts'
import { LoginThrottle, loginBudgets } from '../../auth/login-throttle.ts'
import { sharedSecret } from '../../auth/secrets.ts'
import {
  clearedSessionCookie,
  readCookie,
  requireUser,
  SESSION_COOKIE,
  sessionCookie,
} from '../../auth/session.ts'
import { seedBoard } from '../../board/seed-board.ts'
import { browserUsesHttps, clientAddress } from '../../http/client-address.ts'
import { sendEmpty, sendJson } from '../../http/json.ts'
import { answer } from '../../http/route-docs.ts'
import { AddressLimit } from '../../rate-limit/address-limit.ts'
import { type AppRouter, bodyOf } from './route.ts'

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

/** Signing up, in and out, and who is signed in (docs/design.md Contract 2). */
export function sessionRoutes(app: AppRouter): void {
  const { db, live, config, clock } = app.deps
  const throttle = new LoginThrottle(db, clock, loginBudgets(config))
  // A script must not create accounts by the thousand: sign-ups are counted per address.
  const signups = new AddressLimit(db, clock, {
    name: 'signup:address',
    quota: config.signupsPerAddress,
    windowMs: config.signupWindowSeconds * 1000,
    what: 'sign-ups',
  })
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
    // Behind a TLS proxy the service speaks plain HTTP: PUBLIC_URL or a trusted proxy says https.
    const secure = browserUsesHttps(req, config)
    return [
      sessionCookie(session.token, session.expiresAt, secure),
      deviceCookie(signDevice(await deviceKey(), email, clock.now()), secure),
    ]
  }

  app.on(
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
      errors: {
        409: 'The e-mail has an account already.',
        429: 'Too many sign-ups from this address (SIGNUPS_PER_ADDRESS per SIGNUP_WINDOW_SECONDS): `{ error, retryAfter }`, with Retry-After.',
      },
    },
    async (req, res) => {
      await signups.charge(clientAddress(req, config.trustProxy))
      const input = await bodyOf(req, 'signup', body.signup)
      const { user, organization } = await signUp(db, { ...input, scryptN: config.scryptN })
      await seedBoard(live, organization.id)
      const cookies = await signedIn(req, user.id, user.email)
      sendJson(res, 201, { user, organization }, { 'set-cookie': cookies })
    },
  )

  app.on(
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
      const input = await bodyOf(req, 'login', body.login)
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

  app.on(
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
      const secure = browserUsesHttps(req, config)
      sendEmpty(res, 204, { 'set-cookie': `${clearedSessionCookie()}${secure ? '; Secure' : ''}` })
    },
  )

  app.on(
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
}
