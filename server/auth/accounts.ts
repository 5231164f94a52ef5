import { randomUUID } from 'node:crypto'
import type { Db, Queryable } from '../../persistence/types.ts'
import type { MemberRole } from '../../shared/constants.ts'
import { ApiError } from '../errors.ts'
import { randomToken, sha256Hex } from './crypto.ts'
import { hashPassword, verifyPassword } from './passwords.ts'

export interface User {
  id: string
  email: string
  name: string
}

export interface OrgMembership {
  id: string
  name: string
  role: MemberRole
}

const iso = (d: unknown) => (d instanceof Date ? d.toISOString() : String(d))

export const normaliseEmail = (email: string) => email.trim().toLowerCase()

/** Creates a person and the organisation they own, in one transaction. 409 if the e-mail is taken. */
export async function signUp(
  db: Db,
  input: {
    email: string
    password: string
    name: string
    organizationName: string
    scryptN: number
  },
): Promise<{ user: User; organization: OrgMembership }> {
  const passwordHash = await hashPassword(input.password, input.scryptN)
  const user: User = {
    id: randomUUID(),
    email: normaliseEmail(input.email),
    name: input.name.trim(),
  }
  const org: OrgMembership = {
    id: randomUUID(),
    name: input.organizationName.trim(),
    role: 'owner',
  }
  await db.transaction(async (tx) => {
    const taken = await tx.query('select 1 from users where email = $1', [user.email])
    if (taken.length > 0)
      throw new ApiError(409, `An account with email ${user.email} already exists; log in instead`)
    await tx.query('insert into users (id, email, name, password_hash) values ($1, $2, $3, $4)', [
      user.id,
      user.email,
      user.name,
      passwordHash,
    ])
    await createOrganization(tx, org.id, org.name, user.id)
  })
  return { user, organization: org }
}

export async function createOrganization(
  tx: Queryable,
  orgId: string,
  name: string,
  ownerId: string,
) {
  await tx.query('insert into organizations (id, name) values ($1, $2)', [orgId, name])
  await tx.query("insert into memberships (org_id, user_id, role) values ($1, $2, 'owner')", [
    orgId,
    ownerId,
  ])
}

/** The person for these credentials, or 401 with one message for both wrong e-mail and wrong password. */
export async function logIn(db: Db, email: string, password: string): Promise<User> {
  const [row] = await db.query<{
    id: string
    email: string
    name: string
    password_hash: string | null
  }>('select id, email, name, password_hash from users where email = $1 and not is_robot', [
    normaliseEmail(email),
  ])
  if (!row?.password_hash || !(await verifyPassword(password, row.password_hash))) {
    throw new ApiError(401, 'Wrong email or password')
  }
  return { id: row.id, email: row.email, name: row.name }
}

export async function organizationsOf(db: Queryable, userId: string): Promise<OrgMembership[]> {
  const rows = await db.query<{ id: string; name: string; role: MemberRole }>(
    `select o.id, o.name, m.role from memberships m join organizations o on o.id = m.org_id
      where m.user_id = $1 order by m.created_at, o.name`,
    [userId],
  )
  return rows.map((r) => ({ id: r.id, name: r.name, role: r.role }))
}

export async function membership(
  db: Queryable,
  orgId: string,
  userId: string,
): Promise<OrgMembership | undefined> {
  const [row] = await db.query<{ id: string; name: string; role: MemberRole }>(
    `select o.id, o.name, m.role from memberships m join organizations o on o.id = m.org_id
      where m.org_id = $1 and m.user_id = $2`,
    [orgId, userId],
  )
  return row ? { id: row.id, name: row.name, role: row.role } : undefined
}

export async function createSession(
  db: Db,
  userId: string,
  ttlDays: number,
): Promise<{ token: string; expiresAt: Date }> {
  const token = randomToken(32)
  const expiresAt = new Date(Date.now() + ttlDays * 86_400_000)
  await db.query('insert into sessions (token_hash, user_id, expires_at) values ($1, $2, $3)', [
    sha256Hex(token),
    userId,
    expiresAt,
  ])
  return { token, expiresAt }
}

export async function sessionUser(db: Queryable, token: string): Promise<User | undefined> {
  const [row] = await db.query<{ id: string; email: string; name: string }>(
    `select u.id, u.email, u.name from sessions s join users u on u.id = s.user_id
      where s.token_hash = $1 and s.expires_at > now()`,
    [sha256Hex(token)],
  )
  return row
}

export async function endSession(db: Db, token: string): Promise<void> {
  await db.query('delete from sessions where token_hash = $1', [sha256Hex(token)])
}

export interface Invite {
  token: string
  email: string
  role: 'admin' | 'member'
  expiresAt: string
}

export async function createInvite(
  db: Queryable,
  input: { orgId: string; email: string; role: 'admin' | 'member'; createdBy: string },
): Promise<Invite> {
  const token = randomToken(24)
  const expiresAt = new Date(Date.now() + 14 * 86_400_000)
  const email = normaliseEmail(input.email)
  await db.query(
    'insert into invites (token_hash, org_id, email, role, created_by, expires_at) values ($1, $2, $3, $4, $5, $6)',
    [sha256Hex(token), input.orgId, email, input.role, input.createdBy, expiresAt],
  )
  return { token, email, role: input.role, expiresAt: expiresAt.toISOString() }
}

/**
 * Accepts an invite for the signed-in person. An invite is for the e-mail it was sent to;
 * a person already a member keeps their role (an invite never demotes an owner).
 */
export async function acceptInvite(db: Db, token: string, user: User): Promise<OrgMembership> {
  return db.transaction(async (tx) => {
    const [invite] = await tx.query<{
      org_id: string
      email: string
      role: 'admin' | 'member'
      expires_at: Date
      accepted_at: Date | null
    }>(
      'select org_id, email, role, expires_at, accepted_at from invites where token_hash = $1 for update',
      [sha256Hex(token)],
    )
    if (!invite) throw new ApiError(404, 'No such invite')
    if (invite.accepted_at) throw new ApiError(409, 'This invite was already accepted')
    if (invite.expires_at.getTime() < Date.now())
      throw new ApiError(410, 'This invite has expired; ask for a new one')
    if (invite.email !== user.email) {
      throw new ApiError(
        403,
        `This invite is for ${invite.email}; sign in with that address to accept it`,
      )
    }
    await tx.query(
      `insert into memberships (org_id, user_id, role) values ($1, $2, $3) on conflict (org_id, user_id) do nothing`,
      [invite.org_id, user.id, invite.role],
    )
    await tx.query(
      'update invites set accepted_at = now(), accepted_by = $2 where token_hash = $1',
      [sha256Hex(token), user.id],
    )
    const found = await membership(tx, invite.org_id, user.id)
    if (!found) throw new Error('membership missing after accept')
    return found
  })
}

export async function listMembers(db: Queryable, orgId: string) {
  const rows = await db.query<{
    id: string
    email: string
    name: string
    role: MemberRole
    created_at: Date
  }>(
    `select u.id, u.email, u.name, m.role, m.created_at from memberships m join users u on u.id = m.user_id
      where m.org_id = $1 order by m.created_at`,
    [orgId],
  )
  return rows.map((r) => ({
    id: r.id,
    email: r.email,
    name: r.name,
    role: r.role,
    joinedAt: iso(r.created_at),
  }))
}

export async function listInvites(db: Queryable, orgId: string) {
  const rows = await db.query<{ email: string; role: string; created_at: Date; expires_at: Date }>(
    `select email, role, created_at, expires_at from invites
      where org_id = $1 and accepted_at is null and expires_at > now() order by created_at`,
    [orgId],
  )
  return rows.map((r) => ({
    email: r.email,
    role: r.role,
    createdAt: iso(r.created_at),
    expiresAt: iso(r.expires_at),
  }))
}
