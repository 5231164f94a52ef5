import type * as Y from 'yjs'
import { boardDocName, boardMaps } from '../../shared/board-doc.ts'
import type { StoredClaim } from '../../shared/claims.ts'
import type { Logger } from '../http/json.ts'
import type { WriteScope } from '../live/write-scope.ts'
import { type ClaimRow, storedClaimFromRow } from './locks.ts'

/**
 * Keeps the board documents' `claims` entries on Postgres's claims when several processes
 * share the board (Redis). Postgres orders claim changes (each one takes the card's row);
 * a live document orders two writes to one entry that neither process had seen by the
 * writing processes' Yjs client ids. So when one process releases a card and the other
 * hands it to a new holder before the release reached its copy, both copies may end on the
 * release: the new holder's claim stands in Postgres and is missing from the board.
 *
 * Each process therefore checks the entries another process's update changed (in a batch,
 * a moment later) against Postgres, and writes the claim Postgres holds where they differ:
 * a write made after both, which every copy then shows. One of the two processes always
 * sees such a change (the entry that lost replaced its own, or the one that won replaced
 * the other's), so the document follows Postgres whichever way the tie went. A check finds
 * nothing to write when the copies were right, which is the common case.
 */

/** How long changed entries gather before one check reads them (ms). */
const GATHER_MS = 20
/** How long a check that failed waits before the next try (ms). */
const RETRY_MS = 1_000

export interface FollowHost {
  write<T>(
    docName: string,
    origin: { type: 'server'; orgId: string },
    fn: (w: WriteScope) => Promise<T>,
  ): Promise<T>
  log: Logger
}

export class ClaimsFollower {
  private readonly host: FollowHost
  private readonly due = new Map<string, Set<string>>()

  constructor(host: FollowHost) {
    this.host = host
  }

  /** Watches a loaded board document: entries another process changes are checked. */
  watch(doc: Y.Doc, orgId: string): void {
    const claims = boardMaps(doc).claims
    doc.on('afterTransaction', (tr: Y.Transaction) => {
      if ((tr.origin as { source?: unknown } | null)?.source !== 'redis') return
      const keys = tr.changed.get(claims as never)
      if (!keys || keys.size === 0) return
      this.gather(
        orgId,
        [...keys].filter((key): key is string => key !== null),
        GATHER_MS,
      )
    })
  }

  /** Adds cards to the organisation's next check, due in `ms` if none is due yet. */
  private gather(orgId: string, taskIds: readonly string[], ms: number): void {
    let ids = this.due.get(orgId)
    if (!ids) {
      ids = new Set()
      this.due.set(orgId, ids)
      const timer = setTimeout(() => void this.check(orgId), ms)
      timer.unref()
    }
    for (const id of taskIds) ids.add(id)
  }

  /** Writes Postgres's claim into the board wherever the entry differs from it. */
  private async check(orgId: string): Promise<void> {
    const ids = [...(this.due.get(orgId) ?? [])]
    this.due.delete(orgId)
    if (ids.length === 0) return
    await this.host
      .write(boardDocName(orgId), { type: 'server', orgId }, async (w) => {
        // Claims this lane is storing are Postgres's before they are read.
        await w.earlierCommitted()
        const rows = await w.tx.query<ClaimRow & Record<string, unknown>>(
          'select * from claims where org_id = $1 and task_id = any($2::uuid[])',
          [orgId, ids],
        )
        const maps = boardMaps(w.doc)
        const now = Date.now()
        const behind = rows.filter((row) => {
          if (!maps.tasks.has(row.task_id)) return false
          const shown = maps.claims.get(row.task_id) as StoredClaim | undefined
          return !shown || !sameClaim(shown, storedClaimFromRow(row, now))
        })
        if (behind.length === 0) return
        w.mutate((doc) => {
          for (const row of behind)
            boardMaps(doc).claims.set(row.task_id, storedClaimFromRow(row, now))
        })
      })
      .catch((error: unknown) => {
        // Checked again in a moment (a re-base under way, the database away): the entries
        // may still differ from Postgres, and nothing else would look at them again.
        this.host.log.info(`checking the board's claims of ${orgId} failed; again soon`, error)
        this.gather(orgId, ids, RETRY_MS)
      })
  }
}

/** The same claim, as far as Postgres says (status and liveness follow from the clock). */
function sameClaim(a: StoredClaim, b: StoredClaim): boolean {
  return (
    a.keyId === b.keyId &&
    a.agentName === b.agentName &&
    a.house === b.house &&
    a.generation === b.generation &&
    a.isSubChild === b.isSubChild &&
    a.note === b.note &&
    a.startedAt === b.startedAt &&
    a.updatedAt === b.updatedAt &&
    a.expiresAt === b.expiresAt &&
    a.releasedAt === b.releasedAt
  )
}
