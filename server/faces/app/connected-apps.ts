import { listGrants, revokeGrant } from '../../auth/oauth-grants.ts'
import { ApiError } from '../../errors.ts'
import { answer } from '../../http/route-docs.ts'
import type { AppRouter } from './route.ts'

/** Apps signed in to /mcp by OAuth (owners and admins): listed and disconnected. */
export function connectedAppRoutes(app: AppRouter): void {
  const { db, live } = app.deps

  app.org(
    'GET',
    '/connected-apps',
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
    async (_req, { org }) => {
      return { status: 200, body: { apps: await listGrants(db, org.id) } }
    },
  )

  app.org(
    'DELETE',
    '/connected-apps/:grantId',
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
    async (_req, { org, params: p }) => {
      const revoked = await revokeGrant(db, org.id, p.grantId as string)
      if (!revoked) throw new ApiError(404, 'No such connected app')
      live.closeConnections({ keyId: revoked.keyId })
      return { status: 204 }
    },
  )
}
