import { useCallback, useSyncExternalStore } from 'react'
import type { LiveDoc } from '../live/live-doc.ts'
import type { Identity } from '../live/org-live.ts'

/** What a person does on the board, as their awareness state says. */
export interface BoardPresence {
  user: Identity
  /** The card they have open, if any. */
  openCard: string | null
  /** The card they are dragging right now and where it would land. */
  drag: { taskId: string; columnId: string; index: number } | null
}

function isIdentity(v: unknown): v is Identity {
  if (typeof v !== 'object' || v === null) return false
  const o = v as Record<string, unknown>
  return typeof o.id === 'string' && typeof o.name === 'string' && typeof o.color === 'string'
}

function readDrag(v: unknown): BoardPresence['drag'] {
  if (typeof v !== 'object' || v === null) return null
  const o = v as Record<string, unknown>
  return typeof o.taskId === 'string' &&
    typeof o.columnId === 'string' &&
    typeof o.index === 'number'
    ? { taskId: o.taskId, columnId: o.columnId, index: o.index }
    : null
}

const key = (list: readonly BoardPresence[]) =>
  list
    .map((p) => `${p.user.id}:${p.openCard}:${p.drag?.taskId}:${p.drag?.columnId}:${p.drag?.index}`)
    .join('|')

/**
 * Who else is on the board and what they are doing, from the board document's awareness.
 * Topics: `people` (everyone), `card:<id>` (someone opened or drags it), `column:<id>`
 * (someone's drag points into it).
 */
export class PresenceStore {
  private people: readonly BoardPresence[] = []
  private byCard = new Map<string, readonly BoardPresence[]>()
  private byColumn = new Map<string, readonly BoardPresence[]>()
  private readonly listeners = new Map<string, Set<() => void>>()
  private readonly live: LiveDoc
  private readonly off: () => void

  constructor(live: LiveDoc) {
    this.live = live
    const onChange = () => this.read()
    live.awareness.on('change', onChange)
    this.off = () => live.awareness.off('change', onChange)
    this.read()
  }

  private read() {
    const awareness = this.live.awareness
    const mine = awareness.getLocalState()?.user as Identity | undefined
    const list: BoardPresence[] = []
    awareness.getStates().forEach((state, clientId) => {
      if (clientId === awareness.clientID) return
      const s = state as Record<string, unknown>
      if (!isIdentity(s.user)) return
      list.push({
        user: s.user,
        openCard: typeof s.openCard === 'string' ? s.openCard : null,
        // Another tab of mine dragging is still someone else's drag here.
        drag: readDrag(s.drag),
      })
    })
    const byCard = new Map<string, BoardPresence[]>()
    const byColumn = new Map<string, BoardPresence[]>()
    const add = (m: Map<string, BoardPresence[]>, k: string, p: BoardPresence) => {
      const l = m.get(k)
      if (l) l.push(p)
      else m.set(k, [p])
    }
    for (const p of list) {
      if (p.openCard) add(byCard, p.openCard, p)
      if (p.drag) {
        if (p.drag.taskId !== p.openCard) add(byCard, p.drag.taskId, p)
        add(byColumn, p.drag.columnId, p)
      }
    }
    const topics = new Set<string>()
    const everyone = list.filter((p) => p.user.id !== mine?.id)
    if (key(everyone) !== key(this.people)) topics.add('people')
    this.people = everyone
    for (const [prefix, before, after] of [
      ['card', this.byCard, byCard],
      ['column', this.byColumn, byColumn],
    ] as const) {
      for (const k of new Set([...before.keys(), ...after.keys()])) {
        if (key(before.get(k) ?? []) !== key(after.get(k) ?? [])) topics.add(`${prefix}:${k}`)
      }
    }
    this.byCard = byCard
    this.byColumn = byColumn
    for (const t of topics) for (const fn of this.listeners.get(t) ?? []) fn()
  }

  subscribe(topic: string, fn: () => void): () => void {
    let set = this.listeners.get(topic)
    if (!set) {
      set = new Set()
      this.listeners.set(topic, set)
    }
    set.add(fn)
    return () => {
      set.delete(fn)
    }
  }

  everyone(): readonly BoardPresence[] {
    return this.people
  }

  onCard(id: string): readonly BoardPresence[] | undefined {
    return this.byCard.get(id)
  }

  inColumn(id: string): readonly BoardPresence[] | undefined {
    return this.byColumn.get(id)
  }

  /** Tells the others what this person is doing (null clears it). */
  setMine(field: 'openCard' | 'drag', value: unknown) {
    this.live.awareness.setLocalStateField(field, value)
  }

  destroy() {
    this.off()
    this.listeners.clear()
  }
}

export function usePresence<T>(store: PresenceStore, topic: string, read: (s: PresenceStore) => T) {
  const subscribe = useCallback((fn: () => void) => store.subscribe(topic, fn), [store, topic])
  return useSyncExternalStore(subscribe, () => read(store))
}
