import { z } from 'zod'
import { MEMBER_ROLES, type MemberRole } from '../../../shared/constants.ts'
import { oneOf } from '../../../shared/schemas/common.ts'
import { listInvites, listMembers } from '../../auth/accounts.ts'
import { ApiError, forbidden, notFound } from '../../errors.ts'
import { answer } from '../../http/route-docs.ts'
import { type AppRouter, bodyOf, pathId } from './route.ts'

/** `PATCH /orgs/:orgId/members/:userId` body. */
const memberRole = z.strictObject({ role: oneOf('role', MEMBER_ROLES) })

/**
 * The organisation's members: listed, their roles changed, removed (or leaving). Their live
 * connections close the moment they are no longer members.
 */
export function memberRoutes(app: AppRouter): void {
  const { db, live } = app.deps

  app.org(
    'GET',
    '/members',
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
    async (_req, { org }) => {
      const [members, invites] = await Promise.all([
        listMembers(db, org.id),
        org.role === 'member' ? Promise.resolve([]) : listInvites(db, org.id),
      ])
      return { status: 200, body: { members, invites } }
    },
  )

  /**
   * Changes a member's role. Owners may make and unmake owners; admins change admins and
   * members only. The last owner cannot be demoted, so an organisation always has one.
   */
  app.org(
    'PATCH',
    '/members/:userId',
    {
      summary: "Change a member's role",
      access: 'owner-admin',
      body: memberRole,
      answers: [answer.json(200, '`{ member: { id, email, name, role } }`.')],
      errors: {
        403: 'Only an owner makes or unmakes owners.',
        404: 'No member with that userId.',
        409: 'The last owner cannot be demoted.',
      },
    },
    async (req, { org, params }) => {
      const userId = pathId(params, 'userId')
      const { role } = await bodyOf(req, 'change member role', memberRole)
      const member = await db.transaction(async (tx) => {
        const rows = await tx.query<{ user_id: string; role: MemberRole }>(
          'select user_id, role from memberships where org_id = $1 order by user_id for update',
          [org.id],
        )
        const target = rows.find((r) => r.user_id === userId)
        if (!target) throw notFound(`No member with userId ${userId} in this organisation`)
        if (org.role !== 'owner' && (target.role === 'owner' || role === 'owner')) {
          throw forbidden('Only an owner can make or unmake owners')
        }
        if (target.role === 'owner' && role !== 'owner') {
          if (rows.filter((r) => r.role === 'owner').length === 1) {
            throw new ApiError(
              409,
              'The last owner cannot be demoted; make someone else owner first',
            )
          }
        }
        const [updated] = await tx.query<{ id: string; email: string; name: string }>(
          `update memberships m set role = $3 from users u
            where m.org_id = $1 and m.user_id = $2 and u.id = m.user_id
            returning u.id, u.email, u.name`,
          [org.id, userId, role],
        )
        if (!updated) throw notFound(`No member with userId ${userId} in this organisation`)
        return { ...updated, role }
      })
      return { status: 200, body: { member } }
    },
  )

  /**
   * Removes a member, or lets a person leave. Owners and admins remove others (admins not
   * owners); the last owner cannot go. The person's live connections are closed at once.
   */
  app.org(
    'DELETE',
    '/members/:userId',
    {
      summary: 'Remove a member, or leave (your own userId)',
      description:
        "Removing someone else needs owner or admin, and removing an owner needs an owner. The person's live connections to the organisation close at once.",
      access: 'member',
      answers: [answer.noContent('They are no longer a member.')],
      errors: {
        400: 'userId is not a UUID.',
        403: 'Removing someone else needs owner or admin; removing an owner needs an owner.',
        404: 'No member with that userId.',
        409: 'The last owner cannot leave.',
      },
    },
    async (_req, { user, org, params }) => {
      const userId = pathId(params, 'userId')
      const self = userId === user.id
      if (!self && org.role === 'member') {
        throw forbidden(`Removing someone needs the role owner or admin; you are ${org.role}`)
      }
      await db.transaction(async (tx) => {
        const rows = await tx.query<{ user_id: string; role: MemberRole }>(
          'select user_id, role from memberships where org_id = $1 order by user_id for update',
          [org.id],
        )
        const target = rows.find((r) => r.user_id === userId)
        if (!target) throw notFound(`No member with userId ${userId} in this organisation`)
        if (!self && target.role === 'owner' && org.role !== 'owner') {
          throw forbidden('Only an owner can remove an owner')
        }
        if (target.role === 'owner' && rows.filter((r) => r.role === 'owner').length === 1) {
          throw new ApiError(409, 'The last owner cannot leave; make someone else owner first')
        }
        await tx.query('delete from memberships where org_id = $1 and user_id = $2', [
          org.id,
          userId,
        ])
      })
      live.closeConnections({ orgId: org.id, userId })
      return { status: 204 }
    },
  )
}
