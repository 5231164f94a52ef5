/**
 * Drag and drop on the board, without a library: pointer drags with a floating copy of the
 * card, keyboard drags (Space to pick up, arrows, Space to drop), auto-scrolling, and a
 * small store columns subscribe to narrowly so a move re-renders at most two columns.
 * Nothing is written to the document until the drop: the drag in progress travels through
 * awareness only (docs/design.md: every overwritten value costs bytes forever).
 */

import { Emitter } from '../store.ts'

export interface DragState {
  kind: 'card' | 'column'
  id: string
  via: 'pointer' | 'keyboard'
  /** Card drags: the column under the card, and the index among its other cards. */
  overColumn: string | null
  /** Card drags: index among the target column's cards without the moving one; column drags: index among the other columns. */
  index: number
}

export class DragStore {
  state: DragState | null = null
  private readonly changed = new Emitter()
  subscribe = this.changed.subscribe

  set(next: DragState | null) {
    const prev = this.state
    if (
      prev === next ||
      (prev &&
        next &&
        prev.id === next.id &&
        prev.kind === next.kind &&
        prev.via === next.via &&
        prev.overColumn === next.overColumn &&
        prev.index === next.index)
    ) {
      return
    }
    this.state = next
    this.changed.emit()
  }
}

/** What a column's card list offers the drag controller: hit-testing in its own coordinates. */
export interface ListHandle {
  element: HTMLElement
  /** Index among the column's cards (the moving one left out) for a pointer at clientY. */
  indexAt(clientY: number, movingId: string): number
  /** Scrolls the list so the card at this index is visible. */
  reveal(id: string): void
}

export class ListRegistry {
  private readonly lists = new Map<string, ListHandle>()

  register(columnId: string, handle: ListHandle): () => void {
    this.lists.set(columnId, handle)
    return () => {
      if (this.lists.get(columnId) === handle) this.lists.delete(columnId)
    }
  }

  get(columnId: string): ListHandle | undefined {
    return this.lists.get(columnId)
  }

  /** The column whose list is under the pointer (horizontally: the nearest column). */
  columnAt(clientX: number, clientY: number): string | undefined {
    let best: { id: string; distance: number } | undefined
    for (const [id, handle] of this.lists) {
      const r = handle.element.getBoundingClientRect()
      const dx = clientX < r.left ? r.left - clientX : clientX > r.right ? clientX - r.right : 0
      const dy =
        clientY < r.top - 80 ? r.top - 80 - clientY : clientY > r.bottom ? clientY - r.bottom : 0
      const distance = dx * 4 + dy
      if (!best || distance < best.distance) best = { id, distance }
    }
    return best?.id
  }
}

const THRESHOLD = 5
const EDGE = 48
const MAX_SPEED = 18

function isInteractive(el: Element | null, root: Element): boolean {
  for (let n = el; n && n !== root; n = n.parentElement) {
    if (n.matches('button, a, input, textarea, select, [contenteditable="true"], [data-no-drag]'))
      return true
  }
  return false
}

/** Scroll speed for a pointer `distance` px inside an edge zone (0 outside it). */
function edgeSpeed(pos: number, start: number, end: number): number {
  if (pos < start + EDGE) return -Math.ceil(((start + EDGE - pos) / EDGE) * MAX_SPEED)
  if (pos > end - EDGE) return Math.ceil(((pos - (end - EDGE)) / EDGE) * MAX_SPEED)
  return 0
}

/**
 * Pointer drags of cards and columns on a board element. `onDrop` decides what the drop
 * means; returning nothing leaves the card where the document says it is.
 */
export function attachPointerDrag(options: {
  board: HTMLElement
  scroller: HTMLElement
  drag: DragStore
  lists: ListRegistry
  columnOrder: () => string[]
  onDrop: (state: DragState) => void
}): () => void {
  const { board, scroller, drag, lists } = options
  let pending:
    | {
        kind: 'card' | 'column'
        id: string
        x: number
        y: number
        source: HTMLElement
        pointerId: number
      }
    | undefined
  let ghost: HTMLElement | undefined
  let offset = { x: 0, y: 0 }
  let pointer = { x: 0, y: 0 }
  let frame = 0
  let droppedAt = 0

  const target = () => {
    const s = drag.state
    if (!s) return
    if (s.kind === 'card') {
      const column = lists.columnAt(pointer.x, pointer.y) ?? s.overColumn
      if (!column) return
      const index = lists.get(column)?.indexAt(pointer.y, s.id) ?? 0
      drag.set({ ...s, overColumn: column, index })
    } else {
      const order = options.columnOrder().filter((id) => id !== s.id)
      let index = order.length
      for (let i = 0; i < order.length; i++) {
        const r = lists.get(order[i] as string)?.element.getBoundingClientRect()
        if (r && pointer.x < r.left + r.width / 2) {
          index = i
          break
        }
      }
      drag.set({ ...s, index })
    }
  }

  const tick = () => {
    frame = 0
    const s = drag.state
    if (s?.via !== 'pointer') return
    if (ghost)
      ghost.style.transform = `translate3d(${pointer.x - offset.x}px, ${pointer.y - offset.y}px, 0) rotate(2deg)`
    const sr = scroller.getBoundingClientRect()
    const dx = edgeSpeed(pointer.x, sr.left, sr.right)
    if (dx) scroller.scrollLeft += dx
    let scrolling = dx !== 0
    if (s.kind === 'card' && s.overColumn) {
      const el = lists.get(s.overColumn)?.element
      if (el) {
        const r = el.getBoundingClientRect()
        const dy =
          pointer.x >= r.left && pointer.x <= r.right ? edgeSpeed(pointer.y, r.top, r.bottom) : 0
        if (dy) {
          el.scrollTop += dy
          scrolling = true
        }
      }
    }
    target()
    // Keep scrolling while the pointer rests in an edge zone.
    if (scrolling) frame = requestAnimationFrame(tick)
  }

  const schedule = () => {
    if (!frame) frame = requestAnimationFrame(tick)
  }

  const start = () => {
    if (!pending) return
    const { kind, id, source } = pending
    const r = source.getBoundingClientRect()
    offset = { x: pending.x - r.left, y: pending.y - r.top }
    ghost = source.cloneNode(true) as HTMLElement
    ghost.classList.add('drag-ghost')
    ghost.removeAttribute('id')
    ghost.setAttribute('aria-hidden', 'true')
    ghost.style.width = `${r.width}px`
    ghost.style.height = `${r.height}px`
    document.body.append(ghost)
    document.body.classList.add('dragging')
    const column =
      kind === 'card'
        ? (source.closest<HTMLElement>('[data-column-id]')?.dataset.columnId ?? null)
        : null
    drag.set({ kind, id, via: 'pointer', overColumn: column, index: 0 })
    pending = undefined
    target()
  }

  const finish = (commit: boolean) => {
    if (frame) cancelAnimationFrame(frame)
    frame = 0
    ghost?.remove()
    ghost = undefined
    document.body.classList.remove('dragging')
    const s = drag.state
    drag.set(null)
    if (commit && s) {
      droppedAt = performance.now()
      options.onDrop(s)
    }
  }

  const onPointerDown = (e: PointerEvent) => {
    if (e.button !== 0 || drag.state) return
    const el = e.target as Element
    const handle = el.closest<HTMLElement>('[data-column-handle]')
    if (handle) {
      const column = handle.closest<HTMLElement>('[data-column-id]')
      if (!column?.dataset.columnId) return
      pending = {
        kind: 'column',
        id: column.dataset.columnId,
        x: e.clientX,
        y: e.clientY,
        source: column,
        pointerId: e.pointerId,
      }
      return
    }
    const card = el.closest<HTMLElement>('[data-card-id]')
    if (!card?.dataset.cardId || isInteractive(el, card)) return
    pending = {
      kind: 'card',
      id: card.dataset.cardId,
      x: e.clientX,
      y: e.clientY,
      source: card,
      pointerId: e.pointerId,
    }
  }

  const onPointerMove = (e: PointerEvent) => {
    pointer = { x: e.clientX, y: e.clientY }
    if (pending && e.pointerId === pending.pointerId) {
      if (Math.hypot(e.clientX - pending.x, e.clientY - pending.y) < THRESHOLD) return
      e.preventDefault()
      start()
    }
    if (drag.state?.via === 'pointer') {
      e.preventDefault()
      schedule()
    }
  }

  const onPointerUp = () => {
    pending = undefined
    if (drag.state?.via === 'pointer') {
      target()
      finish(true)
    }
  }

  const onCancel = () => {
    pending = undefined
    if (drag.state?.via === 'pointer') finish(false)
  }

  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'Escape' && drag.state?.via === 'pointer') {
      e.preventDefault()
      finish(false)
    }
  }

  // A drag ends in a click on the card under the pointer; that click is not an "open".
  const onClickCapture = (e: MouseEvent) => {
    if (performance.now() - droppedAt < 100) {
      e.stopPropagation()
      e.preventDefault()
    }
  }

  board.addEventListener('pointerdown', onPointerDown)
  window.addEventListener('pointermove', onPointerMove, { passive: false })
  window.addEventListener('pointerup', onPointerUp)
  window.addEventListener('pointercancel', onCancel)
  window.addEventListener('keydown', onKeyDown)
  board.addEventListener('click', onClickCapture, true)
  return () => {
    finish(false)
    board.removeEventListener('pointerdown', onPointerDown)
    window.removeEventListener('pointermove', onPointerMove)
    window.removeEventListener('pointerup', onPointerUp)
    window.removeEventListener('pointercancel', onCancel)
    window.removeEventListener('keydown', onKeyDown)
    board.removeEventListener('click', onClickCapture, true)
  }
}
