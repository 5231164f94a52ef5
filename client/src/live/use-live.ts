import { useEffect, useState, useSyncExternalStore } from 'react'
import type { DocStatus, LiveDoc } from './live-doc.ts'
import type { Identity, OrgLive, SyncState } from './org-live.ts'

export function useSyncState(live: OrgLive): SyncState {
  return useSyncExternalStore(live.subscribe, () => live.state)
}

export function useDocStatus(doc: LiveDoc): DocStatus {
  return useSyncExternalStore(doc.subscribe, () => doc.status)
}

/** Another person's presence on a document: who, and what they are doing there. */
export interface Peer {
  clientId: number
  user: Identity
  state: Record<string, unknown>
}

function isIdentity(v: unknown): v is Identity {
  if (typeof v !== 'object' || v === null) return false
  const o = v as Record<string, unknown>
  return (
    typeof o.id === 'string' &&
    typeof o.name === 'string' &&
    typeof o.color === 'string' &&
    typeof o.email === 'string'
  )
}

/** Everyone else on this document (other tabs of the same person included), live. */
export function usePeers(doc: LiveDoc): Peer[] {
  const [peers, setPeers] = useState<Peer[]>([])
  useEffect(() => {
    const awareness = doc.awareness
    const read = () => {
      const out: Peer[] = []
      awareness.getStates().forEach((state, clientId) => {
        if (clientId === awareness.clientID) return
        const user = (state as Record<string, unknown>).user
        if (isIdentity(user)) out.push({ clientId, user, state: state as Record<string, unknown> })
      })
      setPeers(out)
    }
    read()
    awareness.on('change', read)
    return () => awareness.off('change', read)
  }, [doc])
  return peers
}
