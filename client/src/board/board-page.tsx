import { lazy, Suspense, useCallback, useEffect, useMemo, useRef, useState } from 'react'
import { PRIORITIES } from '../../../shared/constants.ts'
import { effectivePriority } from '../../../shared/priority.ts'
import type { Column } from '../../../shared/records.ts'
import { appApi } from '../api/app-api.ts'
import { describeError } from '../api/http.ts'
import { setQuery, useQueryParam } from '../router.tsx'
import { ArchiveIcon } from '../ui/icons.tsx'
import { toast } from '../ui/toast.tsx'
import { useWorkspace } from '../workspace.tsx'
import { ArchivedCards } from './archived-cards.tsx'
import { createColumn, createTask, moveColumn, moveTask, planDrop } from './board-actions.ts'
import { PRIORITY_LABELS } from './card.tsx'
import type { HeightCache } from './card-list.tsx'
import { BoardColumn, type CardFilter, type ColumnActions } from './column.tsx'
import { AddColumnButton, ColumnSettings, DeleteColumn } from './column-dialogs.tsx'
import { attachPointerDrag, type DragState, DragStore, ListRegistry } from './drag.ts'
import { PresenceStore } from './presence.ts'
import { PresenceBar } from './presence-bar.tsx'
import { SearchBox } from './search-box.tsx'
import { useBoard, useColumns, useProjects, useTags } from './use-board.ts'

const CardPanel = lazy(() => import('../card/card-panel.tsx'))

/** The live board: filters, presence, columns of cards, drag and drop, and the card panel. */
export function BoardPage() {
  const ws = useWorkspace()
  const { store, board, org, user } = ws
  const presence = useMemo(() => new PresenceStore(board), [board])
  useEffect(() => () => presence.destroy(), [presence])
  const drag = useMemo(() => new DragStore(), [])
  const lists = useMemo(() => new ListRegistry(), [])
  const heights = useMemo<HeightCache>(() => new Map(), [])
  const pendingFocus = useRef<string | null>(null)
  const visibleIds = useRef(new Map<string, readonly string[]>())
  const [announcement, setAnnouncement] = useState('')

  const columns = useColumns(store)
  const projects = useProjects(store)
  const tags = useTags(store)
  const projectFilter = useQueryParam('project')
  const tagFilter = useQueryParam('tag')
  const priorityFilter = useQueryParam('priority')
  const blockedFilter = useQueryParam('blocked')
  const openCard = useQueryParam('card')
  const layout = useBoard(store, projectFilter ? 'layout' : 'none', (s) => s.layout())

  useEffect(() => {
    presence.setMine('openCard', openCard)
  }, [presence, openCard])

  const shownColumns = useMemo(() => {
    void layout
    if (!projectFilter) return columns
    const own = columns.filter((c) => c.projectId === projectFilter)
    const base = new Set(
      (own.length > 0 ? own : columns.filter((c) => c.projectId === null)).map((c) => c.id),
    )
    // A column holding one of the project's cards shows too (as get_board does).
    for (const card of store.allCards()) {
      if (card.projectId === projectFilter && !card.archivedAt) base.add(card.columnId)
    }
    return columns.filter((c) => base.has(c.id))
  }, [columns, projectFilter, layout, store])

  const filter = useMemo<CardFilter | null>(() => {
    if (!projectFilter && !tagFilter && !priorityFilter && !blockedFilter) return null
    const tag = tagFilter?.toLowerCase()
    return (card, column) => {
      if (projectFilter && card.projectId !== projectFilter) return false
      // get_board's `blocked: true|false`.
      if (blockedFilter && card.blocked !== (blockedFilter === 'true')) return false
      if (tag && !card.tags.some((t) => t.toLowerCase() === tag)) return false
      if (priorityFilter) {
        const p = effectivePriority(card.priority, column.onFire)
        if (priorityFilter === 'none' ? p !== null : p !== priorityFilter) return false
      }
      return true
    }
  }, [projectFilter, tagFilter, priorityFilter, blockedFilter])
  const filterKey = `${projectFilter}|${tagFilter}|${priorityFilter}|${blockedFilter}`

  // Tell the others where a card being dragged would land; nothing is written until the drop.
  useEffect(
    () =>
      drag.subscribe(() => {
        const s = drag.state
        presence.setMine(
          'drag',
          s?.kind === 'card' && s.overColumn
            ? { taskId: s.id, columnId: s.overColumn, index: s.index }
            : null,
        )
      }),
    [drag, presence],
  )

  const shownRef = useRef(shownColumns)
  shownRef.current = shownColumns

  const commitDrop = useCallback(
    (s: DragState) => {
      if (s.kind === 'column') {
        // The index is among the columns shown; positions are board-wide.
        const shown = shownRef.current.filter((c) => c.id !== s.id)
        const all = store.columns().filter((c) => c.id !== s.id)
        const anchor = shown[s.index]
        const last = shown.at(-1)
        const at = anchor
          ? all.findIndex((c) => c.id === anchor.id)
          : last
            ? all.findIndex((c) => c.id === last.id) + 1
            : all.length
        moveColumn(store, s.id, at)
        return
      }
      const card = store.card(s.id)
      if (!card || !s.overColumn) return
      if (card.claim?.isLive) {
        toast(
          'error',
          `“${card.title}” is claimed by ${card.claim.holder}, so it cannot be moved until the claim is released.`,
        )
        return
      }
      const shown = visibleIds.current.get(s.overColumn) ?? store.cardsOf(s.overColumn).ids
      const position = planDrop(store, s.overColumn, shown, s.index, s.id)
      if (position !== undefined) moveTask(store.doc, s.id, s.overColumn, position)
    },
    [store],
  )

  const boardRef = useRef<HTMLDivElement>(null)
  const scrollerRef = useRef<HTMLDivElement>(null)
  useEffect(() => {
    if (!boardRef.current || !scrollerRef.current) return
    return attachPointerDrag({
      board: boardRef.current,
      scroller: scrollerRef.current,
      drag,
      lists,
      columnOrder: () => shownRef.current.map((c) => c.id),
      onDrop: commitDrop,
    })
  }, [drag, lists, commitDrop])

  const focusCard = useCallback(
    (id: string, columnId: string) => {
      pendingFocus.current = id
      lists.get(columnId)?.reveal(id)
      const el = document.querySelector<HTMLElement>(
        `[data-column-id="${columnId}"] [data-card-id="${id}"]`,
      )
      if (el) {
        pendingFocus.current = null
        el.focus()
      }
    },
    [lists],
  )

  const describeSpot = useCallback(
    (columnId: string, index: number, movingId: string) => {
      const col = store.column(columnId)
      const count = (visibleIds.current.get(columnId) ?? []).filter((id) => id !== movingId).length
      return `${col?.title ?? 'column'}, position ${index + 1} of ${count + 1}`
    },
    [store],
  )

  const onCardKeyDown = useCallback(
    (e: React.KeyboardEvent<HTMLButtonElement>, id: string) => {
      const card = store.card(id)
      if (!card) return
      const order = shownRef.current.map((c) => c.id)
      const s = drag.state
      if (s?.via === 'keyboard' && s.id === id && s.overColumn) {
        const others = (col: string) => (visibleIds.current.get(col) ?? []).filter((x) => x !== id)
        let next: DragState | null = s
        switch (e.key) {
          case 'ArrowUp':
            next = { ...s, index: Math.max(0, s.index - 1) }
            break
          case 'ArrowDown':
            next = { ...s, index: Math.min(others(s.overColumn).length, s.index + 1) }
            break
          case 'ArrowLeft':
          case 'ArrowRight': {
            const at = order.indexOf(s.overColumn) + (e.key === 'ArrowLeft' ? -1 : 1)
            const col = order[at]
            if (col) next = { ...s, overColumn: col, index: Math.min(s.index, others(col).length) }
            break
          }
          case ' ':
          case 'Enter':
            drag.set(null)
            commitDrop(s)
            setAnnouncement(
              `Dropped “${card.title}” in ${describeSpot(s.overColumn, s.index, id)}.`,
            )
            pendingFocus.current = id
            break
          case 'Escape':
            drag.set(null)
            setAnnouncement(`Move cancelled; “${card.title}” stays where it was.`)
            break
          case 'Tab':
            drag.set(null)
            return
          default:
            return
        }
        e.preventDefault()
        e.stopPropagation()
        if (next && next !== s && drag.state) {
          drag.set(next)
          if (next.overColumn) {
            lists.get(next.overColumn)?.reveal(id)
            setAnnouncement(describeSpot(next.overColumn, next.index, id))
          }
        }
        return
      }
      switch (e.key) {
        case ' ': {
          e.preventDefault()
          const shown = visibleIds.current.get(card.columnId) ?? []
          const index = Math.max(0, shown.indexOf(id))
          drag.set({ kind: 'card', id, via: 'keyboard', overColumn: card.columnId, index })
          setAnnouncement(
            `Picked up “${card.title}”. Arrow keys move it, Space drops it, Escape cancels.`,
          )
          break
        }
        case 'ArrowUp':
        case 'ArrowDown': {
          e.preventDefault()
          const shown = visibleIds.current.get(card.columnId) ?? []
          const target = shown[shown.indexOf(id) + (e.key === 'ArrowUp' ? -1 : 1)]
          if (target) focusCard(target, card.columnId)
          break
        }
        case 'ArrowLeft':
        case 'ArrowRight': {
          e.preventDefault()
          const shown = visibleIds.current.get(card.columnId) ?? []
          const index = shown.indexOf(id)
          let at = order.indexOf(card.columnId)
          for (;;) {
            at += e.key === 'ArrowLeft' ? -1 : 1
            const col = order[at]
            if (!col) break
            const list = visibleIds.current.get(col) ?? []
            const target = list[Math.min(index, list.length - 1)]
            if (target) {
              focusCard(target, col)
              break
            }
          }
          break
        }
        default:
          break
      }
    },
    [store, drag, lists, commitDrop, describeSpot, focusCard],
  )

  const [settingsFor, setSettingsFor] = useState<Column>()
  const [deleting, setDeleting] = useState<Column>()
  const [showArchived, setShowArchived] = useState(false)

  const actions = useMemo<ColumnActions>(
    () => ({
      onOpen: (id) => setQuery({ card: id }, { replace: false }),
      onCardKeyDown,
      onAddCard: (columnId, title) => {
        const column = store.column(columnId)
        createTask(store, {
          columnId,
          projectId: projectFilter ?? column?.projectId ?? null,
          title,
          email: user.email,
        })
      },
      onToggleFire: async (column) => {
        try {
          await appApi.patchColumn(org.id, column.id, { onFire: !column.onFire })
        } catch (e) {
          toast('error', describeError(e))
        }
      },
      onSettings: setSettingsFor,
      onDelete: setDeleting,
      onMove: (column, by) => {
        const shown = shownRef.current
        const neighbour = shown[shown.findIndex((c) => c.id === column.id) + by]
        if (!neighbour) return
        // Positions are board-wide; place next to the neighbour shown on this board.
        const all = store.columns().filter((c) => c.id !== column.id)
        const at = all.findIndex((c) => c.id === neighbour.id)
        moveColumn(store, column.id, by > 0 ? at + 1 : at)
      },
    }),
    [store, org.id, user.email, projectFilter, onCardKeyDown],
  )

  const projectName = (c: Column) =>
    c.projectId ? (store.project(c.projectId)?.name ?? null) : null

  return (
    <div className="board-page">
      <header className="page-header">
        <h1 className="page-title">Board</h1>
        <fieldset className="filters">
          <legend className="sr-only">Filters</legend>
          <label className="select-wrap">
            <span className="sr-only">Project</span>
            <select
              value={projectFilter ?? ''}
              onChange={(e) => setQuery({ project: e.target.value || null })}
              aria-label="Filter by project"
            >
              <option value="">All projects</option>
              {projects.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </label>
          <label className="select-wrap">
            <span className="sr-only">Tag</span>
            <select
              value={tagFilter ?? ''}
              onChange={(e) => setQuery({ tag: e.target.value || null })}
              aria-label="Filter by tag"
            >
              <option value="">All tags</option>
              {tags.map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
              {tagFilter && !tags.some((t) => t.toLowerCase() === tagFilter.toLowerCase()) && (
                <option value={tagFilter}>{tagFilter}</option>
              )}
            </select>
          </label>
          <label className="select-wrap">
            <span className="sr-only">Priority</span>
            <select
              value={priorityFilter ?? ''}
              onChange={(e) => setQuery({ priority: e.target.value || null })}
              aria-label="Filter by priority"
            >
              <option value="">Any priority</option>
              {PRIORITIES.map((p) => (
                <option key={p} value={p}>
                  {PRIORITY_LABELS[p]}
                </option>
              ))}
              <option value="none">Untriaged</option>
            </select>
          </label>
          <label className="select-wrap">
            <span className="sr-only">Blocked</span>
            <select
              value={blockedFilter ?? ''}
              onChange={(e) => setQuery({ blocked: e.target.value || null })}
              aria-label="Filter by blocked"
            >
              <option value="">Blocked or not</option>
              <option value="true">Blocked</option>
              <option value="false">Not blocked</option>
            </select>
          </label>
          {filter && (
            <button
              type="button"
              className="btn btn-ghost btn-small"
              onClick={() => setQuery({ project: null, tag: null, priority: null, blocked: null })}
            >
              Clear filters
            </button>
          )}
        </fieldset>
        <span className="header-spacer" />
        <SearchBox />
        <PresenceBar presence={presence} />
        <button type="button" className="btn btn-ghost" onClick={() => setShowArchived(true)}>
          <ArchiveIcon size={15} /> Archived
        </button>
        <AddColumnButton
          onAdd={(title) => createColumn(store, { title, projectId: projectFilter })}
        />
      </header>
      <p id="card-instructions" className="sr-only">
        Enter opens the card. Space picks it up to move it with the arrow keys; Space again drops it
        and Escape cancels. Arrow keys alone move between cards.
      </p>
      <div className="sr-only" aria-live="assertive">
        {announcement}
      </div>
      <div className="board-scroller" ref={scrollerRef}>
        <div className="board" ref={boardRef} data-testid="board">
          {shownColumns.map((column, i) => (
            <BoardColumn
              key={column.id}
              column={column}
              visibleRecord={visibleIds.current}
              store={store}
              presence={presence}
              drag={drag}
              lists={lists}
              heights={heights}
              filter={filter}
              filterKey={filterKey}
              projectName={projectFilter ? null : projectName(column)}
              actions={actions}
              pendingFocus={pendingFocus}
              isFirst={i === 0}
              isLast={i === shownColumns.length - 1}
            />
          ))}
          <ColumnDropIndicator drag={drag} columns={shownColumns} />
          {shownColumns.length === 0 && (
            <div className="board-empty">
              <p>No columns yet. Add one to start the board.</p>
            </div>
          )}
        </div>
      </div>
      {settingsFor && (
        <ColumnSettings column={settingsFor} onClose={() => setSettingsFor(undefined)} />
      )}
      {deleting && <DeleteColumn column={deleting} onClose={() => setDeleting(undefined)} />}
      <ArchivedCards open={showArchived} onClose={() => setShowArchived(false)} />
      {openCard && (
        <Suspense fallback={null}>
          <CardPanel
            taskId={openCard}
            presence={presence}
            onClose={() => setQuery({ card: null, at: null })}
          />
        </Suspense>
      )}
    </div>
  )
}

function ColumnDropIndicator({ drag, columns }: { drag: DragStore; columns: readonly Column[] }) {
  const [state, setState] = useState<DragState | null>(null)
  useEffect(
    () => drag.subscribe(() => setState(drag.state?.kind === 'column' ? drag.state : null)),
    [drag],
  )
  if (!state) return null
  const others = columns.filter((c) => c.id !== state.id)
  const anchor = others[state.index]
  const el = anchor
    ? document.querySelector<HTMLElement>(`[data-column-id="${anchor.id}"]`)
    : document.querySelector<HTMLElement>(`[data-column-id="${others.at(-1)?.id}"]`)
  if (!el) return null
  const left = anchor ? el.offsetLeft - 7 : el.offsetLeft + el.offsetWidth + 5
  return <div className="column-drop-indicator" style={{ left }} />
}
