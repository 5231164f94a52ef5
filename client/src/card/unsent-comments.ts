import type * as Y from 'yjs'
import {
  cardMaps,
  commentOrder,
  readComment,
  type StoredComment,
} from '../../../shared/card-doc.ts'
import { cardDocName, parseDocName } from '../../../shared/doc-names.ts'
import { LOCAL } from '../board/board-actions.ts'
import { changedKeys, type LiveDoc } from '../live/live-doc.ts'

/**
 * Comments a person wrote in a card's document that the server has not acknowledged yet,
 * remembered on the device (by id, beside the document's own IndexedDB copy) until it
 * has. A comment written offline on a card that is deleted before the device reconnects
 * cannot be stored anywhere: its words are handed back to the person instead of vanishing
 * with the document (docs/design.md: nothing a person wrote is silently dropped).
 */

const SUFFIX = '#unsent-comments'

function key(userId: string, docName: string): string {
  return `corkboard/${userId}/${docName}${SUFFIX}`
}

function read(k: string): Set<string> {
  try {
    const data: unknown = JSON.parse(localStorage.getItem(k) ?? '[]')
    return new Set(Array.isArray(data) ? data.filter((x) => typeof x === 'string') : [])
  } catch {
    return new Set()
  }
}

function write(k: string, ids: Set<string>): void {
  try {
    if (ids.size === 0) localStorage.removeItem(k)
    else localStorage.setItem(k, JSON.stringify([...ids]))
  } catch {
    // Storage refused: the document's own copy still holds the comments.
  }
}

/** Watches a card document for this person's new comments until the server has them. */
export function trackUnsentComments(live: LiveDoc, userId: string): () => void {
  const k = key(userId, live.name)
  const { comments } = cardMaps(live.doc)
  const onTransaction = (tr: Y.Transaction) => {
    if (tr.origin !== LOCAL) return
    const added = changedKeys(tr, comments)
    if (!added) return
    const ids = read(k)
    for (const id of added) if (id !== null && comments.has(id)) ids.add(id)
    write(k, ids)
  }
  live.doc.on('afterTransaction', onTransaction)
  const offStatus = live.subscribe(() => {
    const s = live.status
    if (s.synced && s.unsynced === 0 && !s.refused) write(k, new Set())
  })
  return () => {
    live.doc.off('afterTransaction', onTransaction)
    offStatus()
  }
}

/** The comments of this document the server never acknowledged, oldest first. */
export function unsentComments(live: LiveDoc, userId: string): StoredComment[] {
  const ids = read(key(userId, live.name))
  const out: StoredComment[] = []
  cardMaps(live.doc).comments.forEach((m, id) => {
    if (ids.has(id)) out.push(readComment(id, m))
  })
  return out.sort(commentOrder)
}

export function forgetUnsentComments(live: LiveDoc, userId: string): void {
  write(key(userId, live.name), new Set())
}

/** The organisation's card documents holding comments not yet sent (to sync them at start). */
export function cardsWithUnsentComments(userId: string, orgId: string): string[] {
  const prefix = `corkboard/${userId}/`
  const out: string[] = []
  for (let i = 0; i < localStorage.length; i++) {
    const k = localStorage.key(i)
    if (!k?.startsWith(prefix) || !k.endsWith(SUFFIX)) continue
    const ref = parseDocName(k.slice(prefix.length, -SUFFIX.length))
    if (ref?.kind === 'card' && ref.orgId === orgId) out.push(cardDocName(orgId, ref.taskId))
  }
  return out
}
