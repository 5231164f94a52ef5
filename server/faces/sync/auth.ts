import type { Db } from '../../../persistence/types.ts'
import { boardDocName, boardMaps } from '../../../shared/board-doc.ts'
import { parseDocName } from '../../../shared/doc-names.ts'
import { CLOSE } from '../../../shared/live-protocol.ts'
import { mapIsLive } from '../../actions/maps.ts'
import { membership } from '../../auth/accounts.ts'
import { authenticateApiKey } from '../../auth/api-keys.ts'
import { verifySyncToken } from '../../auth/sync-tokens.ts'
import type { ConnectionContext, LiveDocs } from '../../live/live-docs.ts'

/**
 * Authenticates a live connection by sync token (a person) or API key (a program), and
 * lets it open only its own organisation's documents, and only those that exist: a live
 * map, a card on the board or archived.
 */
export function syncAuthenticator(deps: { db: Db; live: LiveDocs; syncSecret: string }) {
  const { db, live, syncSecret } = deps
  /** A card of the organisation, on the board or archived: its document may be opened. */
  const cardExists = async (orgId: string, taskId: string): Promise<boolean> => {
    const onBoard = await live.read(boardDocName(orgId), (doc) => boardMaps(doc).tasks.has(taskId))
    if (onBoard) return true
    const archived = async () =>
      (
        await db.query('select 1 from archived_tasks where id = $1 and org_id = $2', [
          taskId,
          orgId,
        ])
      ).length > 0
    if (await archived()) return true
    // A person may have archived it a moment ago: their edit is live, its row not yet stored.
    await live.flushPeople(orgId)
    return archived()
  }
  return async (token: string, documentName: string): Promise<ConnectionContext> => {
    const ref = parseDocName(documentName)
    if (!ref) throw new Error('Unknown document')
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
    if (ctx.orgId !== ref.orgId)
      throw new Error('This connection may only open its own organisation’s documents')
    if (ref.kind === 'map' && !(await mapIsLive(db, ref.orgId, ref.mapId))) {
      throw new Error('No such map')
    }
    if (ref.kind === 'card' && !(await cardExists(ref.orgId, ref.taskId))) {
      // The provider hears `reason`: the same words as when the card goes while open.
      throw Object.assign(new Error('No such card'), { reason: CLOSE.cardDeleted.reason })
    }
    return ctx
  }
}
