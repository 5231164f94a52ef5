import { useEffect, useLayoutEffect, useMemo, useRef, useState, useSyncExternalStore } from 'react'
import type { BoardStore } from './board-store.ts'
import { Card } from './card.tsx'
import type { DragStore, ListRegistry } from './drag.ts'
import { type PresenceStore, usePresence } from './presence.ts'

/** Cards measured so far (a card keeps its height when it moves to another column). */
export type HeightCache = Map<string, number>

const ESTIMATE = 92
const GAP = 8
const PAD = 4
const OVERSCAN = 600

/** The first index whose offset is at or past `y`. */
function lowerBound(offsets: Float64Array, count: number, y: number): number {
  let lo = 0
  let hi = count
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if ((offsets[mid + 1] as number) <= y) lo = mid + 1
    else hi = mid
  }
  return lo
}

/**
 * A column's cards, virtualised: only the cards near the visible part of the column are in
 * the page, positioned from measured (or estimated) heights, so a column of a thousand
 * cards costs what a column of twenty does.
 */
export function CardList({
  columnId,
  ids,
  store,
  presence,
  drag,
  lists,
  heights,
  onFire,
  onOpen,
  onKeyDown,
  pendingFocus,
  emptyText,
}: {
  columnId: string
  ids: readonly string[]
  store: BoardStore
  presence: PresenceStore
  drag: DragStore
  lists: ListRegistry
  heights: HeightCache
  onFire: boolean
  onOpen: (id: string) => void
  onKeyDown: (e: React.KeyboardEvent<HTMLButtonElement>, id: string) => void
  pendingFocus: { current: string | null }
  emptyText: string
}) {
  const scroller = useRef<HTMLDivElement>(null)
  const [scrollTop, setScrollTop] = useState(0)
  const [viewport, setViewport] = useState(800)
  const [measured, setMeasured] = useState(0)

  const offsets = useMemo(() => {
    // `measured` is the reason to recompute: the heights map changed underneath.
    void measured
    const out = new Float64Array(ids.length + 1)
    let y = PAD
    for (let i = 0; i < ids.length; i++) {
      out[i] = y
      y += (heights.get(ids[i] as string) ?? ESTIMATE) + GAP
    }
    out[ids.length] = y
    return out
  }, [ids, heights, measured])

  const latest = useRef({ ids, offsets, viewport })
  latest.current = { ids, offsets, viewport }

  useLayoutEffect(() => {
    const el = scroller.current
    if (!el) return
    setViewport(el.clientHeight)
    const ro = new ResizeObserver(() => setViewport(el.clientHeight))
    ro.observe(el)
    return lists.register(columnId, {
      element: el,
      indexAt(clientY, movingId) {
        const { ids: list, offsets: off } = latest.current
        const y = clientY - el.getBoundingClientRect().top + el.scrollTop
        let index = 0
        for (let i = 0; i < list.length; i++) {
          if (list[i] === movingId) continue
          const top = off[i] as number
          const bottom = off[i + 1] as number
          if (y < (top + bottom) / 2) return index
          index++
        }
        return index
      },
      reveal(id) {
        const { ids: list, offsets: off, viewport: vh } = latest.current
        const i = list.indexOf(id)
        if (i < 0) return
        const top = off[i] as number
        const bottom = (off[i + 1] as number) - GAP
        if (top < el.scrollTop) el.scrollTop = top - PAD
        else if (bottom > el.scrollTop + vh) el.scrollTop = bottom - vh + PAD
      },
    })
  }, [columnId, lists])

  // One observer for the rendered cards; a changed height re-lays the list out once per frame.
  const frame = useRef(0)
  const observer = useMemo(
    () =>
      new ResizeObserver((entries) => {
        let changed = false
        for (const entry of entries) {
          const id = (entry.target as HTMLElement).dataset.slot
          if (!id) continue
          const h = Math.round(entry.borderBoxSize[0]?.blockSize ?? entry.contentRect.height)
          if (h > 0 && heights.get(id) !== h) {
            heights.set(id, h)
            changed = true
          }
        }
        if (changed && !frame.current) {
          frame.current = requestAnimationFrame(() => {
            frame.current = 0
            setMeasured((m) => m + 1)
          })
        }
      }),
    [heights],
  )
  useEffect(() => () => observer.disconnect(), [observer])

  const dropIndex = useSyncExternalStore(drag.subscribe, () =>
    drag.state?.kind === 'card' && drag.state.overColumn === columnId ? drag.state.index : -1,
  )
  const movingId = dropIndex >= 0 ? (drag.state?.id ?? null) : null
  const peers = usePresence(presence, `column:${columnId}`, (p) => p.inColumn(columnId))

  useEffect(() => {
    const id = pendingFocus.current
    if (!id || !ids.includes(id)) return
    const el = scroller.current?.querySelector<HTMLElement>(`[data-card-id="${id}"]`)
    if (el) {
      pendingFocus.current = null
      el.focus()
    }
  })

  const count = ids.length
  const total = offsets[count] as number
  const first = Math.max(0, lowerBound(offsets, count, scrollTop - OVERSCAN))
  const last = Math.min(count, lowerBound(offsets, count, scrollTop + viewport + OVERSCAN) + 1)
  // The focused card stays rendered even when scrolled away, so focus is never lost.
  const focused =
    document.activeElement instanceof HTMLElement
      ? document.activeElement.dataset.cardId
      : undefined
  const focusedIndex = focused ? ids.indexOf(focused) : -1

  const indicatorAt = (index: number, moving: string | null) => {
    let seen = 0
    for (let i = 0; i < count; i++) {
      if (ids[i] === moving) continue
      if (seen === index) return (offsets[i] as number) - GAP / 2
      seen++
    }
    return total - GAP / 2
  }

  const slots: number[] = []
  for (let i = first; i < last; i++) slots.push(i)
  if (focusedIndex >= 0 && (focusedIndex < first || focusedIndex >= last)) slots.push(focusedIndex)

  return (
    <div
      ref={scroller}
      className="card-list"
      data-column-list={columnId}
      onScroll={(e) => setScrollTop(e.currentTarget.scrollTop)}
    >
      <div className="card-list-inner" style={{ height: Math.max(total, 48) }}>
        {count === 0 && dropIndex < 0 && <p className="column-empty">{emptyText}</p>}
        {slots.map((i) => {
          const id = ids[i] as string
          return (
            <div
              key={id}
              className="card-slot"
              data-slot={id}
              style={{ transform: `translateY(${offsets[i]}px)` }}
              ref={(el) => {
                if (!el) return
                observer.observe(el)
                return () => observer.unobserve(el)
              }}
            >
              <Card
                id={id}
                store={store}
                presence={presence}
                drag={drag}
                onFire={onFire}
                onOpen={onOpen}
                onKeyDown={onKeyDown}
              />
            </div>
          )
        })}
        {dropIndex >= 0 && (
          <div
            className="drop-indicator"
            style={{ transform: `translateY(${indicatorAt(dropIndex, movingId)}px)` }}
          />
        )}
        {peers?.map(
          (p) =>
            p.drag && (
              <div
                key={p.user.id}
                className="drop-indicator drop-indicator-peer"
                style={{
                  transform: `translateY(${indicatorAt(p.drag.index, p.drag.taskId)}px)`,
                  background: p.user.color,
                }}
              >
                <span style={{ background: p.user.color }}>{p.user.name}</span>
              </div>
            ),
        )}
      </div>
    </div>
  )
}
