import type { Db } from '../../../persistence/types.ts'
import { mapIsLive } from '../../actions/maps.ts'
import { membership } from '../../auth/accounts.ts'
import { authenticateApiKey } from '../../auth/api-keys.ts'
import { verifySyncToken } from '../../auth/sync-tokens.ts'
import type { ConnectionContext } from '../../live/live-docs.ts'

/**
 * Authenticates a live connection by sync token (a person) or API key (a program), and
 * lets it open only its own organisation's documents.
 */
export function syncAuthenticator(db: Db, syncSecret: string) {
  return async (token: string, documentName: string): Promise<ConnectionContext> => {
    const docOrg = documentName.slice(0, 36)
    let ctx: ConnectionContext
    if (token.startsWith('cb_')) {
      const key = await authenticateApiKey(db, token)
      ctx = { orgId: key.orgId, keyId: key.id, email: key.robotEmail }
    } else {
      const claims = verifySyncToken(syncSecret, token)
      if (!claims) throw new Error('Invalid or expired sync token')
      const m = await membership(db, claims.orgId, claims.userId)
      if (!m) throw new Error('Not a member of this organisation')
      const [user] = await db.query<{ email: string }>('select email from users where id = $1', [
        claims.userId,
      ])
      ctx = { orgId: claims.orgId, userId: claims.userId, email: user?.email ?? '' }
    }
    if (ctx.orgId !== docOrg)
      throw new Error('This connection may only open its own organisation’s documents')
    const mapId = /\/maps\/([0-9a-f-]{36})$/.exec(documentName)?.[1]
    if (mapId && !(await mapIsLive(db, docOrg, mapId))) throw new Error('No such map')
    return ctx
  }
}
