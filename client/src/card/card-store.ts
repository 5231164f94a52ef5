import { useEffect, useState, useSyncExternalStore } from 'react'
import type * as Y from 'yjs'
import {
  cardMaps,
  commentOrder,
  readAttachment,
  readComment,
  type StoredAttachment,
  type StoredComment,
} from '../../../shared/card-doc.ts'
import { cardDocName } from '../../../shared/doc-names.ts'
import type { LiveDoc } from '../live/live-doc.ts'
import { Emitter } from '../store.ts'
import { useWorkspace } from '../workspace.tsx'

/**
 * One card's own document (docs/design.md Contract 3: `<orgId>/tasks/<taskId>`), read for the
 * card panel: its thread and screenshots as snapshots that change identity only when
 * their content does (comments written offline are watched by unsent-comments.ts).
 */
export class CardStore {
  readonly live: LiveDoc
  readonly taskId: string
  private commentList: readonly StoredComment[] | undefined
  private attachmentList: readonly StoredAttachment[] | undefined
  private readonly changed = new Emitter()
  private readonly off: (() => void)[] = []

  constructor(live: LiveDoc, taskId: string) {
    this.live = live
    this.taskId = taskId
    const { comments, attachments } = cardMaps(live.doc)
    const onComments = () => {
      this.commentList = undefined
      this.emit()
    }
    const onAttachments = () => {
      this.attachmentList = undefined
      this.emit()
    }
    comments.observeDeep(onComments)
    attachments.observeDeep(onAttachments)
    this.off.push(
      () => comments.unobserveDeep(onComments),
      () => attachments.unobserveDeep(onAttachments),
    )
  }

  get doc(): Y.Doc {
    return this.live.doc
  }

  /** The thread, oldest first. */
  comments(): readonly StoredComment[] {
    if (!this.commentList) {
      const out: StoredComment[] = []
      cardMaps(this.doc).comments.forEach((m, id) => {
        out.push(readComment(id, m))
      })
      this.commentList = out.sort(commentOrder)
    }
    return this.commentList
  }

  attachments(): readonly StoredAttachment[] {
    if (!this.attachmentList) {
      const out: StoredAttachment[] = []
      cardMaps(this.doc).attachments.forEach((m, id) => {
        out.push(readAttachment(id, m))
      })
      this.attachmentList = out.sort(
        (a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id),
      )
    }
    return this.attachmentList
  }

  subscribe = (fn: () => void): (() => void) => this.changed.subscribe(fn)

  private emit() {
    this.changed.emit()
  }

  destroy(): void {
    for (const f of this.off) f()
    this.changed.clear()
  }
}

/** Opens the card's document while the component shows it, and closes it after. */
export function useCardStore(taskId: string): CardStore | undefined {
  const { live, org } = useWorkspace()
  const [store, setStore] = useState<CardStore>()
  useEffect(() => {
    const name = cardDocName(org.id, taskId)
    const doc = live.open(name)
    let current = new CardStore(doc, taskId)
    setStore(current)
    // The card's document started over (a re-base): read the fresh copy.
    const off = live.onReplaced((replaced, next) => {
      if (replaced !== name) return
      current.destroy()
      current = new CardStore(next, taskId)
      setStore(current)
    })
    return () => {
      off()
      current.destroy()
      live.release(doc)
      setStore(undefined)
    }
  }, [live, org.id, taskId])
  return store
}

export function useCardComments(card: CardStore): readonly StoredComment[] {
  return useSyncExternalStore(card.subscribe, () => card.comments())
}

export function useCardAttachments(card: CardStore): readonly StoredAttachment[] {
  return useSyncExternalStore(card.subscribe, () => card.attachments())
}
