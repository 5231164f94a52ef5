import type { IncomingMessage } from 'node:http'
import type { Queryable } from '../../persistence/types.ts'
import type { MemberRole } from '../../shared/constants.ts'
import { isUuid } from '../../shared/ids.ts'
import { ApiError } from '../errors.ts'
import { noteRequest } from '../http/request-context.ts'
import { membership, type OrgMembership, sessionUser, type User } from './accounts.ts'

export const SESSION_COOKIE = 'cb_session'

export function readCookie(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie
  if (!header) return undefined
  for (const part of header.split(';')) {
    const [k, ...v] = part.trim().split('=')
    if (k !== name) continue
    try {
      return decodeURIComponent(v.join('='))
    } catch {
      // A mangled value (e.g. `%E0`) is no cookie at all: not signed in, never a 500.
      return undefined
    }
  }
  return undefined
}

export function sessionCookie(token: string, expiresAt: Date, secure: boolean): string {
  return `${SESSION_COOKIE}=${encodeURIComponent(token)}; Path=/; HttpOnly; SameSite=Lax; Expires=${expiresAt.toUTCString()}${secure ? '; Secure' : ''}`
}

export function clearedSessionCookie(): string {
  return `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0`
}

/** The signed-in person, or 401. */
export async function requireUser(db: Queryable, req: IncomingMessage): Promise<User> {
  const token = readCookie(req, SESSION_COOKIE)
  const user = token ? await sessionUser(db, token) : undefined
  if (!user) throw new ApiError(401, 'Not signed in')
  noteRequest({ userId: user.id })
  return user
}

/**
 * The person's membership of the organisation: 404 when they are not in it (the
 * organisation's existence is not revealed), 403 when their role is not among `roles`.
 */
export async function requireMember(
  db: Queryable,
  orgId: string,
  user: User,
  roles?: readonly MemberRole[],
): Promise<OrgMembership> {
  const m = isUuid(orgId) ? await membership(db, orgId.toLowerCase(), user.id) : undefined
  if (!m) throw new ApiError(404, 'No such organisation')
  if (roles && !roles.includes(m.role)) {
    throw new ApiError(403, `This needs the role ${roles.join(' or ')}; you are ${m.role}`)
  }
  noteRequest({ orgId: m.id })
  return m
}
