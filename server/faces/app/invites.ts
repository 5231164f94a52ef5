import * as body from '../../../shared/schemas/app.ts'
import { acceptInvite, createInvite } from '../../auth/accounts.ts'
import { sha256Hex } from '../../auth/crypto.ts'
import { requireUser } from '../../auth/session.ts'
import { ApiError, notFound } from '../../errors.ts'
import { sendJson } from '../../http/json.ts'
import { answer } from '../../http/route-docs.ts'
import { type AppRouter, bodyOf } from './route.ts'

/** Invites by e-mail: made by owners and admins, previewed by their token, accepted signed in. */
export function inviteRoutes(app: AppRouter): void {
  const { db } = app.deps

  app.org(
    'POST',
    '/invites',
    {
      summary: 'Invite someone by e-mail',
      access: 'owner-admin',
      body: body.createInvite,
      answers: [
        answer.json(201, '`{ invite: { token, email, role, expiresAt } }`, valid 14 days.'),
      ],
    },
    async (req, { user, org }) => {
      const input = await bodyOf(req, 'invite', body.createInvite)
      const invite = await createInvite(db, {
        orgId: org.id,
        email: input.email,
        role: input.role,
        createdBy: user.id,
      })
      return { status: 201, body: { invite } }
    },
  )

  app.on(
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

  /**
   * `GET /api/app/invites/:token`: whose invite this is, so the page can say what joining
   * means before anyone signs in. The token is the secret; nothing else is revealed.
   */
  app.on(
    'GET',
    '/invites/:token',
    {
      summary: 'Whose invite this is, before anyone signs in',
      access: 'public',
      answers: [answer.json(200, '`{ organization: { id, name }, email, role, expiresAt }`.')],
      errors: {
        404: 'No such invite.',
        409: 'The invite was accepted already.',
        410: 'The invite has expired.',
      },
    },
    async (_req, res, p) => {
      const [row] = await db.query<{
        org_id: string
        org_name: string
        email: string
        role: string
        expires_at: Date
        accepted_at: Date | null
      }>(
        `select i.org_id, o.name as org_name, i.email, i.role, i.expires_at, i.accepted_at
         from invites i join organizations o on o.id = i.org_id where i.token_hash = $1`,
        [sha256Hex(p.token ?? '')],
      )
      if (!row) throw notFound('No such invite')
      if (row.accepted_at) throw new ApiError(409, 'This invite was already accepted')
      if (row.expires_at.getTime() < Date.now()) {
        throw new ApiError(410, 'This invite has expired; ask for a new one')
      }
      sendJson(res, 200, {
        organization: { id: row.org_id, name: row.org_name },
        email: row.email,
        role: row.role,
        expiresAt: row.expires_at.toISOString(),
      })
    },
  )
}
