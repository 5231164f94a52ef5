/**
 * What the server says to live connections beyond the Yjs sync protocol: why it closed a
 * document, and stateless notices. Server and client read the same definitions, so a
 * reason is never a string typed twice.
 *
 * A document's connection is closed with a per-document CLOSE message, which carries only
 * the reason text (the provider reports it with code 1000), so the reason identifies the
 * case; the code is used where the whole WebSocket closes.
 */
export const CLOSE = {
  /** The key was revoked, or the person left the organisation: do not reconnect. */
  accessRevoked: { code: 4403, reason: 'Access revoked' },
  /** The map or card no longer exists: do not reconnect. */
  mapDeleted: { code: 4404, reason: 'This map was deleted' },
  cardDeleted: { code: 4404, reason: 'This card was deleted' },
  /**
   * The server dropped its copy of the document (a write failed to commit and its copy
   * held the uncommitted change): reconnect and sync again; nothing of yours is lost.
   */
  reloaded: { code: 4205, reason: 'Document reloaded; reconnect' },
  /**
   * The document started over as a new generation (docs/design.md, "Re-basing a
   * document"), or this replica holds one that ended: its copy cannot sync any more. Carry
   * your unsent edits across by key (shared/rebase.ts) onto a fresh copy, or start from one.
   */
  rebased: { code: 4409, reason: 'Document re-based; start from the new generation' },
} as const

export type CloseCase = keyof typeof CLOSE

/** The case a close reason names, if it is one of ours. */
export function closeCase(reason: string): CloseCase | undefined {
  for (const [k, v] of Object.entries(CLOSE)) if (v.reason === reason) return k as CloseCase
  return undefined
}

/** One of a person's edits that the server undid, and why. */
export interface Revert {
  reason: string
  taskId?: string
}

export type StatelessNotice =
  /** Parts of the person's last edit were undone (docs/design.md: reverts, not vetoes). */
  | { type: 'reverted'; reason: string; taskId?: string; reverts: Revert[] }
  /**
   * Sent on the board document: the organisation's map list changed (a map created,
   * renamed, deleted or written to). The list lives in Postgres; read it again.
   */
  | { type: 'maps-changed' }

export function encodeNotice(notice: StatelessNotice): string {
  return JSON.stringify(notice)
}

/** A notice from the server, checked field by field (it is wire data); undefined otherwise. */
export function parseNotice(payload: string): StatelessNotice | undefined {
  let data: unknown
  try {
    data = JSON.parse(payload)
  } catch {
    return undefined
  }
  if (typeof data !== 'object' || data === null) return undefined
  const d = data as Record<string, unknown>
  switch (d.type) {
    case 'reverted': {
      if (typeof d.reason !== 'string') return undefined
      const reverts = Array.isArray(d.reverts)
        ? d.reverts.flatMap((r): Revert[] => {
            if (typeof r !== 'object' || r === null) return []
            const { reason, taskId } = r as Record<string, unknown>
            if (typeof reason !== 'string') return []
            return [typeof taskId === 'string' ? { reason, taskId } : { reason }]
          })
        : []
      const notice: StatelessNotice = { type: 'reverted', reason: d.reason, reverts }
      if (typeof d.taskId === 'string') notice.taskId = d.taskId
      return notice
    }
    case 'maps-changed':
      return { type: 'maps-changed' }
    default:
      return undefined
  }
}
