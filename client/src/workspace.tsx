import { createContext, type ReactNode, useContext, useEffect, useMemo, useState } from 'react'
import { boardDocName } from '../../shared/board-doc.ts'
import { parseDocName } from '../../shared/doc-names.ts'
import { closeCase } from '../../shared/live-protocol.ts'
import {
  appApi,
  type Member,
  type Organization,
  type PendingInvite,
  type User,
} from './api/app-api.ts'
import { BoardStore } from './board/board-store.ts'
import { type UnappliedEdits, watchUnappliedEdits } from './board/unapplied-edits.ts'
import { offerReapply } from './card/reapply.ts'
import {
  cardsWithUnsentComments,
  forgetUnsentComments,
  trackUnsentComments,
  unsentComments,
} from './card/unsent-comments.ts'
import type { LiveDoc } from './live/live-doc.ts'
import { OrgLive } from './live/org-live.ts'
import { navigate } from './router.tsx'
import { notify } from './ui/notices.tsx'
import { toast } from './ui/toast.tsx'

export interface Workspace {
  org: Organization
  user: User
  live: OrgLive
  board: LiveDoc
  store: BoardStore
  /** This person's card edits the server has not acknowledged yet (see unapplied-edits.ts). */
  unapplied: UnappliedEdits
  members: MembersState
  canAdmin: boolean
}

export interface MembersState {
  members: readonly Member[]
  invites: readonly PendingInvite[]
  reload: () => Promise<void>
}

const WorkspaceContext = createContext<Workspace | undefined>(undefined)

export function useWorkspace(): Workspace {
  const ws = useContext(WorkspaceContext)
  if (!ws) throw new Error('useWorkspace outside a workspace')
  return ws
}

const membersKey = (orgId: string) => `corkboard.members.${orgId}`

function cachedMembers(orgId: string): Member[] {
  try {
    const raw = localStorage.getItem(membersKey(orgId))
    const data: unknown = raw ? JSON.parse(raw) : []
    return Array.isArray(data)
      ? data.filter(
          (m): m is Member =>
            typeof m === 'object' &&
            m !== null &&
            typeof m.id === 'string' &&
            typeof m.name === 'string' &&
            typeof m.email === 'string',
        )
      : []
  } catch {
    return []
  }
}

/** The people of the organisation (for assignees and comment authors), kept for offline use. */
function useMembers(orgId: string): MembersState {
  const [members, setMembers] = useState<readonly Member[]>(() => cachedMembers(orgId))
  const [invites, setInvites] = useState<readonly PendingInvite[]>([])
  const reload = useMemo(
    () => async () => {
      try {
        const res = await appApi.members(orgId)
        setMembers(res.members)
        setInvites(res.invites)
        localStorage.setItem(membersKey(orgId), JSON.stringify(res.members))
      } catch {
        // Offline: the kept list stands.
      }
    },
    [orgId],
  )
  useEffect(() => {
    setMembers(cachedMembers(orgId))
    void reload()
  }, [orgId, reload])
  return { members, invites, reload }
}

/**
 * One organisation open in the app: its live connection, its board document (always open,
 * since the board, the card panel and presence all read it) and its people.
 */
export function WorkspaceProvider({
  org,
  user,
  children,
}: {
  org: Organization
  user: User
  children: ReactNode
}) {
  const [core, setCore] = useState<{
    live: OrgLive
    board: LiveDoc
    store: BoardStore
    unapplied: UnappliedEdits
  }>()
  useEffect(() => {
    const live = new OrgLive(org.id, { id: user.id, name: user.name, email: user.email })
    const offOpen = live.onOpen((doc) =>
      parseDocName(doc.name)?.kind === 'card' ? trackUnsentComments(doc, user.id) : undefined,
    )
    const offRefused = live.onRefused((doc) => {
      if (parseDocName(doc.name)?.kind !== 'card') return
      if (closeCase(doc.status.refused ?? '') !== 'cardDeleted') return
      // The card is gone, and with it its document: hand back what never reached it.
      const lost = unsentComments(doc, user.id)
      forgetUnsentComments(doc, user.id)
      void doc.clearLocal()
      if (lost.length === 0) return
      notify({
        title:
          lost.length === 1 ? 'A comment was not saved' : `${lost.length} comments were not saved`,
        message:
          'The card was deleted before your words reached the server. Here they are, to keep elsewhere.',
        text: lost.map((c) => c.body).join('\n\n'),
      })
    })
    const boardName = boardDocName(org.id)
    /** The board's store and watchers, on the board's live copy of the moment. */
    const bind = (board: LiveDoc) => {
      const store = new BoardStore(board.doc)
      const unapplied = watchUnappliedEdits(board, user.id, (edit) =>
        offerReapply({ orgId: org.id, store, edit }),
      )
      const offRevert = board.onNotice((notice) => {
        if (notice.type !== 'reverted') return
        const card = notice.taskId ? store.card(notice.taskId) : undefined
        toast(
          'revert',
          card ? `“${card.title}” was put back: ${notice.reason}` : notice.reason,
          notice.taskId
            ? {
                label: 'Open card',
                run: () => navigate(`/o/${org.id}/board?card=${notice.taskId}`),
              }
            : undefined,
        )
      })
      return {
        core: { live, board, store, unapplied },
        stop() {
          offRevert()
          unapplied.stop()
          store.destroy()
        },
      }
    }
    let bound = bind(live.open(boardName))
    // Comments written offline on cards nobody has open now still go to the server.
    for (const name of cardsWithUnsentComments(user.id, org.id)) live.release(live.open(name))
    // The board started over as a new generation (a re-base): the fresh copy is the board.
    const offReplaced = live.onReplaced((name, next) => {
      if (name !== boardName) return
      bound.stop()
      bound = bind(next)
      setCore(bound.core)
    })
    const offRebased = live.onRebased(({ lost }) => {
      if (!lost) return
      notify({
        title: 'Some changes made offline could not be kept',
        message:
          'While this device was away, the server rebuilt a document it had open, long enough ago that what this device changed can no longer be matched with it.',
      })
    })
    setCore(bound.core)
    return () => {
      offReplaced()
      offRebased()
      offOpen()
      offRefused()
      bound.stop()
      live.destroy()
    }
  }, [org.id, user.id, user.name, user.email])
  const members = useMembers(org.id)
  const value = useMemo<Workspace | undefined>(
    () =>
      core && {
        org,
        user,
        ...core,
        members,
        canAdmin: org.role === 'owner' || org.role === 'admin',
      },
    [core, org, user, members],
  )
  if (!value) return null
  return <WorkspaceContext.Provider value={value}>{children}</WorkspaceContext.Provider>
}

/** A member's display name from an id, or a short form of the id for someone who left. */
export function memberName(members: readonly Member[], id: string): string {
  return members.find((m) => m.id === id)?.name ?? `Former member ${id.slice(0, 4)}`
}
