import type { Db } from '../../../persistence/types.ts'
import { boardDocName } from '../../../shared/doc-names.ts'
import type { ActionContext } from '../../actions/context.ts'
import type { OrgMembership, User } from '../../auth/accounts.ts'
import { followingBlockers } from '../../board/blockers.ts'
import { BoardView } from '../../board/board-view.ts'
import { type Clock, systemClock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import type { LiveDocs } from '../../live/live-docs.ts'
import type { WriteOrigin } from '../../live/origins.ts'

/**
 * A person acting through the app, in the shape the shared action handlers take, for the
 * handlers that read nothing of a key but its organisation (maps, images, delete_column,
 * card edits). The write's origin is the person, so persistence, the change log and
 * webhooks attribute it to them and no key is held; the claim actor is the person, who
 * never holds a claim, so any live claim locks them out.
 */
export function personContext(
  deps: { db: Db; live: LiveDocs; config: Config; clock?: Clock | undefined },
  user: User,
  org: OrgMembership,
): ActionContext {
  const clock = deps.clock ?? systemClock
  const origin: WriteOrigin = { type: 'person', orgId: org.id, userId: user.id, email: user.email }
  const docName = boardDocName(org.id)
  return {
    db: deps.db,
    live: deps.live,
    config: deps.config,
    clock,
    key: {
      id: user.id,
      orgId: org.id,
      orgName: org.name,
      name: 'web app',
      prefix: '',
      createdAt: '',
      robotUserId: user.id,
      robotEmail: user.email,
    },
    identity: {},
    actor: { keyId: user.id, identity: {}, clock },
    origin,
    readBoard: (fn) => deps.live.read(docName, (doc) => fn(new BoardView(doc, clock.now()))),
    writeBoard: (fn, opens) => deps.live.write(docName, origin, followingBlockers(fn), opens),
  }
}
