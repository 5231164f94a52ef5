import { z } from 'zod'
import { boardDocName } from '../../../shared/doc-names.ts'
import { signSyncToken } from '../../auth/sync-tokens.ts'
import { answer } from '../../http/route-docs.ts'
import type { AppRouter } from './route.ts'

const syncToken = z.strictObject({ token: z.string(), expiresAt: z.iso.datetime() })

/** The token a browser opens the live documents (/sync) of an organisation with. */
export function syncTokenRoutes(app: AppRouter): void {
  const { live, config, syncSecret } = app.deps

  app.org(
    'POST',
    '/sync-token',
    {
      summary: 'A token for the live-sync connection (/sync) to the organisation',
      access: 'member',
      answers: [answer.json(200, 'The token and when it stops working.', syncToken)],
    },
    async (_req, { user, org }) => {
      const exp = Date.now() + config.syncTokenTtlSeconds * 1000
      // The page opens the board next: its load overlaps the socket's opening.
      live.warm(boardDocName(org.id))
      return {
        status: 200,
        body: {
          token: signSyncToken(syncSecret, { userId: user.id, orgId: org.id, exp }),
          expiresAt: new Date(exp).toISOString(),
        },
      }
    },
  )
}
